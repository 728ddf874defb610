"""The connection settings of the services' PostgreSQL pools (platform/pg.py): who connects, how
long a connect may take, and how soon a session that lost its client ends (issue 13, item 6).

A client cut off from the server (a partition, a frozen or killed pod whose FIN never arrives)
leaves its backend waiting for the next statement, holding the locks of its transaction: the
row of scoring's append head stopped every replica for as long as the partition lasted. So every
connection carries, with `t` the pool's operation timeout (`DEFAULT_BOUND_S` without one):

- on the server (the `options` startup parameter, so no round trip is spent on SET):
  - `idle_in_transaction_session_timeout` = t: our transactions never wait on their client (each
    statement is sent as soon as the previous one answers), so a transaction idle for t has lost
    its client. The server ends the session: the transaction rolls back, its locks are released.
  - `statement_timeout` = t: a statement runs no longer than its caller waits for it.
  - `lock_timeout` = t / 2: a statement waiting on a lock held by another session gives up with
    its own error ("canceling statement due to lock timeout") while its caller still waits, so
    the caller's log names the cause (a lock_timeout of t would never fire before the
    statement_timeout).
- on the client's socket (libpq): TCP keepalives (a probe after `KEEPALIVES_IDLE_S` of silence,
  then every `KEEPALIVES_INTERVAL_S`, `KEEPALIVES_COUNT` unanswered: dead) and
  `tcp_user_timeout` (data unacknowledged for `TCP_USER_TIMEOUT_MS`: dead). An idle pooled
  connection, or scoring's LISTEN connection, to a server that went silent fails within about
  11 s, not after the kernel's default of 2 h and more; the server's own side of the socket is
  covered by the timeouts above.

What the URL sets itself wins: its own keepalive parameters are kept, and its `options` come
after ours (PostgreSQL applies the last `-c` of a setting). PGOPTIONS, which libpq reads only
when the conninfo has no `options`, is kept the same way.
"""

from __future__ import annotations

import math
import os

from psycopg.conninfo import conninfo_to_dict, make_conninfo

CONNECT_TIMEOUT_S = 5  # without an operation timeout: libpq would wait forever for a dead host
MIN_CONNECT_TIMEOUT_S = 2  # libpq's (and psycopg's) floor for connect_timeout
DEFAULT_BOUND_S = 5.0  # the server-side bounds of a pool without an operation timeout
MIN_BOUND_MS = 100
KEEPALIVES_IDLE_S = 5
KEEPALIVES_INTERVAL_S = 2
KEEPALIVES_COUNT = 3
TCP_USER_TIMEOUT_MS = 10_000


def server_bounds(timeout_s: float | None) -> dict[str, int]:
    """The session settings (milliseconds) of a pool whose operations take up to `timeout_s`."""
    t_ms = max(MIN_BOUND_MS, math.ceil(1000 * (timeout_s or DEFAULT_BOUND_S)))
    return {"idle_in_transaction_session_timeout": t_ms, "statement_timeout": t_ms,
            "lock_timeout": max(MIN_BOUND_MS, t_ms // 2)}


def connect_timeout(timeout_s: float | None) -> int:
    """libpq's connect_timeout (whole seconds, at least its floor) for an operation timeout."""
    if timeout_s is None:
        return CONNECT_TIMEOUT_S
    return max(MIN_CONNECT_TIMEOUT_S, math.ceil(timeout_s))


def pool_conninfo(url: str, application_name: str, timeout_s: float | None) -> str:
    """`url` (a PostgreSQL URL or conninfo) with the pool's settings added where it has none.
    Raises psycopg.ProgrammingError if it does not parse (its message may quote the URL)."""
    params = conninfo_to_dict(url)
    params.setdefault("connect_timeout", connect_timeout(timeout_s))
    params.setdefault("application_name", application_name)  # in pg_stat_activity
    params.setdefault("keepalives", 1)
    params.setdefault("keepalives_idle", KEEPALIVES_IDLE_S)
    params.setdefault("keepalives_interval", KEEPALIVES_INTERVAL_S)
    params.setdefault("keepalives_count", KEEPALIVES_COUNT)
    params.setdefault("tcp_user_timeout", TCP_USER_TIMEOUT_MS)
    ours = " ".join(f"-c {name}={ms}" for name, ms in server_bounds(timeout_s).items())
    theirs = str(params.get("options") or os.environ.get("PGOPTIONS", ""))
    params["options"] = f"{ours} {theirs}".strip()
    return make_conninfo("", **params)
