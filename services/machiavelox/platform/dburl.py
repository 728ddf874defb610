"""Database URLs of the services' stores (scoring's results, a shard's journal): SQLite for one
process (`sqlite:///path`), PostgreSQL for a deployment (`postgresql://...`), checked at start."""

from __future__ import annotations

from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict

from .settings import SettingsError

SQLITE_PREFIX = "sqlite:///"
POSTGRES_PREFIX = "postgresql://"


def check_database_url(url: str, setting: str) -> None:
    """SettingsError (naming the setting, never quoting the URL: it may hold a password)
    unless `url` is a SQLite path or a valid PostgreSQL URL."""
    if url.startswith(POSTGRES_PREFIX):
        try:
            conninfo_to_dict(url)
        except psycopg.Error:  # its message may quote the URL, password and all
            raise SettingsError(f"{setting} is not a valid PostgreSQL URL") from None
        return
    if url.startswith(SQLITE_PREFIX) and len(url) > len(SQLITE_PREFIX):
        return
    scheme = url.partition(":")[0]
    raise SettingsError(f"{setting} must be sqlite:///<path> or postgresql://..., not a "
                        f"{scheme!r} URL")


def sqlite_path(url: str) -> Path:
    """``sqlite:///data/s.db`` -> data/s.db (relative), ``sqlite:////srv/s.db`` -> /srv/s.db."""
    return Path(url[len(SQLITE_PREFIX):])
