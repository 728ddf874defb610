"""Where the shards a bench starts journal their tables: `--journal` of cluster_bench.py
(off, sqlite, postgres), also used by recovery_bench.py and soak_bench.py."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import psycopg

REPO = Path(__file__).resolve().parents[2]  # (tests.support.pg, for the postgres journal)
JOURNAL = "MACHIAVELOX_TABLE_JOURNAL"


class Journals:
    """Where the shards the bench starts journal their tables (--journal): `sqlite`, the
    embedded default (nothing to set: a file in the shard's data directory, which `start`
    makes fresh for every process name, so every new shard starts empty); `postgres`, the
    deployed store: a schema of its own per shard on the machine's server (tests/support/pg.py;
    a new shard on an old one's schema would recover that one's tables), dropped by `close`
    once its shard has stopped; or `off`."""

    KINDS = ("off", "sqlite", "postgres")

    def __init__(self, kind: str = "sqlite") -> None:
        self.kind = kind
        self._schemas = contextlib.ExitStack()
        self._names: list[str] = []  # the schemas handed out (their shards' application_name)

    def env(self) -> dict[str, str]:
        """The journal settings of one more shard."""
        if self.kind == "off":
            return {JOURNAL: "off"}
        if self.kind == "sqlite":
            return {}
        if str(REPO) not in sys.path:
            sys.path.insert(0, str(REPO))
        from tests.support.pg import pg_schema  # (here: the load generators need no psycopg)

        url, schema = self._schemas.enter_context(pg_schema("bench_journal"))
        self._names.append(schema)
        return {JOURNAL: url}

    def close(self) -> None:
        """Drop the schemas handed out so far (stop their shards first)."""
        self._schemas.close()
        self._names.clear()

    def store(self) -> dict[str, list[int]]:
        """The store's processes, for the CPU accounting (`postgres`: the backends of the
        shards' connections, found by their application_name, the schema's name, and the
        server's own processes: WAL writer, checkpointer...), so that they count as the
        bench's and not as other processes disturbing it; none for SQLite (in the shard)."""
        if self.kind != "postgres" or not self._names:
            return {}
        from tests.support.pg import PG_URL

        with psycopg.connect(PG_URL, autocommit=True, connect_timeout=3) as conn:
            rows = conn.execute("SELECT pid FROM pg_stat_activity WHERE application_name = "
                                "ANY(%s) OR backend_type <> 'client backend'",
                                (self._names,)).fetchall()
        return {"postgres": [int(pid) for (pid,) in rows]}

    def targets(self) -> tuple[float, int]:
        """(the (b)/(a) p50 ratio, the tables one shard must hold): issue 12's when
        journaled, the earlier ones without."""
        return (1.25, 1000) if self.kind == "off" else (1.6, 1500)


JOURNALS = Journals()  # set from --journal (tls_bench.py and tracing_bench.py: the default)
