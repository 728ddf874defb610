"""The presence service: who is connected where, and who is alive (M11 signs of life).

It records heartbeats and gateway connections and streams each watched player's liveness to the
table shards that seat them: alive, silent for a duration, or unknown (presence cannot tell);
the shards turn silence into dormancy (10 s) and abandonment (90 s). `settings.py` says why those
rules live in the shard; `store.py` the rule by which presence tells silence from unknown (issue
13); `hub.py` what a replica's watchers are told; `memory_store.py` and `redis_store.py` the two
backends (the second shared by the replicas).
"""
