"""The scoring service: the durable results log, the agorà leaderboard, long-match standings,
classic Machiavelli hands and session standings, and a resumable stream of results for other
services."""
