"""A PostgreSQL schema of its own for a test, on the machine's server.

The server is MACHIAVELOX_TEST_PG_URL (default postgresql://root@127.0.0.1:5432/test); a test
gets a fresh schema, first on the search_path of the URL it is given, dropped afterwards with
everything in it. The test fails when the server cannot be reached: every development
and CI machine runs it, and a skipped test would hide that it is gone.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from urllib.parse import quote

import psycopg
import pytest
from psycopg import sql

PG_URL = os.environ.get("MACHIAVELOX_TEST_PG_URL", "postgresql://root@127.0.0.1:5432/test")


@contextlib.contextmanager
def pg_schema(prefix: str, base_url: str = PG_URL) -> Iterator[tuple[str, str]]:
    """(URL on a new schema `<prefix>_<random>`, the schema's name); the name is also the
    URL's application_name, to tell the test's sessions apart in pg_stat_activity. `base_url`
    may name another way to the same server (a proxy in front of it)."""
    schema = f"{prefix}_{secrets.token_hex(6)}"
    try:
        admin = psycopg.connect(PG_URL, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        pytest.fail(f"PostgreSQL is not reachable at {PG_URL}: {exc}")
    with admin:
        admin.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        try:
            yield schema_url(base_url, schema), schema
        finally:
            admin.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


def schema_url(base_url: str, schema: str) -> str:
    """`base_url` with `schema` first on the search_path, and as the application_name."""
    sep = "&" if "?" in base_url else "?"
    options = quote(f"-csearch_path={schema}")
    return f"{base_url}{sep}options={options}&application_name={schema}"
