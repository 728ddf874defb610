"""The shard capacity controller (`machiavelox controller`, Kubernetes only).

decide.py (the pure decision), shards.py (GetLoad, health, SetDraining over gRPC), kube.py (the
StatefulSet's scale, its watch, the Lease, with the official `kubernetes` client), lease.py
(leader election), reconcile.py (observe, decide, act), settings.py, main.py.
"""
