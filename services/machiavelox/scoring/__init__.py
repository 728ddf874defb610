"""The scoring service: the durable results log, the agorà leaderboard, long-match standings
and a resumable stream of results for other services."""
