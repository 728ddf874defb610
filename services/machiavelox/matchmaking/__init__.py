"""Matchmaking, the agorà: competitive single matches by skill, friendly tables by invite code."""
