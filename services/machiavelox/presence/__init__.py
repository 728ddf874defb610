"""The presence service: who is connected where, and who is alive (M11 signs of life).

It records heartbeats and gateway connections and streams alive <-> silent changes to the table
shards that seat the players; the shards turn silence into dormancy (10 s) and abandonment
(90 s). See `settings.py` for why those rules live in the shard and `store.py` for how several
replicas share one Redis.
"""
