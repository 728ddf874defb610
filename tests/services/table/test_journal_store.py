"""The shard's journal store (table/journal_store.py) on both backends: a SQLite file in the
test's temp dir, and a fresh schema of the machine's PostgreSQL (tests/support/pg.py).

What is proven: frames load in number order, from the latest checkpoint on; a checkpoint
deletes the rows below it, never those above; a taken frame number is fenced (but a retry of
a write whose answer was lost is not, and such a write can be voided: stored empty); shards
sharing a store see only their own rows; frames survive a reopen and, on SQLite, a SIGKILL of
the writing process. PostgreSQL behind a TCP proxy the test controls: when the proxy stops
forwarding or closes, every operation fails with JournalUnavailableError instead of hanging,
and once it forwards again the same store works.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import psycopg
import pytest

from machiavelox.table.journal_store import (
    JournalFencedError,
    JournalStore,
    JournalUnavailableError,
    StoredFrame,
    open_journal,
)
from tests.support.pg import PG_URL, pg_schema, schema_url
from tests.support.tcp_proxy import TcpProxy, via_proxy

T = TypeVar("T")
TIMEOUT_S = 1.0  # the stores' operation timeout (a PostgreSQL connect waits 2 s, libpq's floor)
BOUND_S = 20.0  # a call that has not ended by then hangs: the test fails instead of waiting
CHILD_DEADLINE_S = 20.0


@dataclass(frozen=True)
class Backend:
    kind: str  # "sqlite" or "postgres"
    url: str

    def rows(self, statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Run one statement straight on the database (`?` placeholders), to look under the
        store: its rows, what a crash could have left behind."""
        if self.kind == "sqlite":
            with contextlib.closing(sqlite3.connect(self.url.removeprefix("sqlite:///"),
                                                    isolation_level=None)) as conn:
                return conn.execute(statement, params).fetchall()
        with psycopg.connect(self.url, autocommit=True) as conn:
            cur = conn.execute(statement.replace("?", "%s"), params)
            return cur.fetchall() if cur.description else []

    def numbers(self, shard_id: str) -> list[int]:
        """Every frame number stored for `shard_id`, checkpoint or not, loadable or not."""
        return [int(r[0]) for r in self.rows(
            "SELECT frame_no FROM table_journal WHERE shard_id = ? ORDER BY frame_no",
            (shard_id,))]


Open = Callable[..., Awaitable[JournalStore]]


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "sqlite":  # in a directory that does not exist yet: the store makes it
        yield Backend("sqlite", f"sqlite:///{tmp_path / 'data' / 'journal.sqlite3'}")
        return
    with pg_schema("test_journal") as (url, _):
        yield Backend("postgres", url)


@pytest.fixture
async def journal(backend: Backend) -> AsyncIterator[Open]:
    """Opens stores of the test's database (shard id as argument); all closed at teardown."""
    opened: list[JournalStore] = []

    async def open_(shard_id: str = "shard-1") -> JournalStore:
        store = await bounded(open_journal(backend.url, shard_id, TIMEOUT_S))
        opened.append(store)
        return store

    yield open_
    for store in opened:
        await store.close()


async def bounded(call: Awaitable[T]) -> T:
    return await asyncio.wait_for(call, BOUND_S)


def numbers(frames: list[StoredFrame]) -> list[int]:
    return [frame.frame_no for frame in frames]


def frame(no: int, checkpoint: bool = False) -> StoredFrame:
    return StoredFrame(no, checkpoint, payload(no))


def payload(no: int) -> bytes:
    return f"frame {no} ".encode() * (no % 7 + 1)


# --- both backends -----------------------------------------------------------------------------


async def test_frames_load_in_number_order_with_their_bytes(journal: Open) -> None:
    store = await journal()
    assert await store.load() == []
    big = bytes(range(256)) * 4096  # 1 MiB, every byte value
    for no in (1, 2, 3):
        await store.append(no, payload(no))
    await store.append(4, big)
    await store.append(5, b"")
    assert await store.load() == [frame(1), frame(2), frame(3), StoredFrame(4, False, big),
                                  StoredFrame(5, False, b"")]


async def test_load_starts_at_the_latest_checkpoint_and_older_rows_are_gone(
        journal: Open, backend: Backend) -> None:
    store = await journal()
    for no in (1, 2, 3):
        await store.append(no, payload(no))
    await store.checkpoint(4, payload(4))
    await store.append(5, payload(5))
    assert await store.load() == [frame(4, checkpoint=True), frame(5)]
    await store.checkpoint(6, payload(6))
    await store.append(7, payload(7))
    assert await store.load() == [frame(6, checkpoint=True), frame(7)]
    assert backend.numbers("shard-1") == [6, 7]  # frames and the older checkpoint deleted


async def test_frames_numbered_above_a_checkpoint_are_kept(journal: Open,
                                                           backend: Backend) -> None:
    store = await journal()
    for no in (1, 2, 4, 5):  # 4 and 5 were stored while the checkpoint of 3 was being written
        await store.append(no, payload(no))
    await store.checkpoint(3, payload(3))
    assert await store.load() == [frame(3, checkpoint=True), frame(4), frame(5)]

    async def appends(first: int, last: int) -> None:  # sequential, as a shard writes them
        for no in range(first, last + 1):
            await store.append(no, payload(no))

    big = b"state" * 200_000
    await bounded(asyncio.gather(store.checkpoint(10, big), appends(11, 40)))
    loaded = await store.load()
    assert loaded[0] == StoredFrame(10, True, big)
    assert loaded[1:] == [frame(no) for no in range(11, 41)]
    assert backend.numbers("shard-1") == list(range(10, 41))
    if backend.kind == "postgres":  # appends and the checkpoint on the pool's two connections
        sessions = backend.rows("SELECT count(*) FROM pg_stat_activity WHERE "
                                "application_name = current_setting('application_name')")
        assert sessions[0][0] <= 3  # the pool's two and the query's own


async def test_a_taken_frame_number_is_fenced(journal: Open) -> None:
    first = await journal()
    second = await journal()  # another process that believes it owns the shard
    await first.append(1, b"one")
    with pytest.raises(JournalFencedError):
        await first.append(1, b"another one")
    with pytest.raises(JournalFencedError):  # the same bytes too: no earlier attempt was lost
        await second.append(1, b"one")
    await second.append(2, b"two")
    with pytest.raises(JournalFencedError):
        await first.append(2, b"two, first's")
    with pytest.raises(JournalFencedError):
        await first.checkpoint(2, b"checkpoint")
    assert await first.load() == [StoredFrame(1, False, b"one"), StoredFrame(2, False, b"two")]


async def test_a_voided_frame_is_stored_empty_and_a_late_copy_refused(journal: Open) -> None:
    store = await journal()
    other = await journal()  # another process writing the shard
    await store.append(1, b"one")
    await store.void(2)  # a write whose outcome is unknown, that never landed
    with pytest.raises(JournalFencedError):  # the lost write, arriving late
        await store.append(2, b"two")
    await store.void(2)  # again: nothing changes
    await store.append(3, b"three")
    await other.append(4, b"four, other's")
    with pytest.raises(JournalFencedError):  # not a frame this store tried to write
        await store.void(4)
    with pytest.raises(JournalFencedError):
        await store.void(1)
    assert await store.load() == [StoredFrame(1, False, b"one"), StoredFrame(2, False, b""),
                                  StoredFrame(3, False, b"three"),
                                  StoredFrame(4, False, b"four, other's")]


async def test_shards_sharing_a_store_see_only_their_rows(journal: Open,
                                                          backend: Backend) -> None:
    north = await journal("north")
    south = await journal("south")
    for no in (1, 2, 3):
        await north.append(no, b"n%d" % no)
        await south.append(no, b"s%d" % no)  # the same numbers: not fenced across shards
    await north.checkpoint(4, b"n-checkpoint")
    assert await north.load() == [StoredFrame(4, True, b"n-checkpoint")]
    assert await south.load() == [StoredFrame(no, False, b"s%d" % no) for no in (1, 2, 3)]
    assert backend.numbers("south") == [1, 2, 3]


async def test_frames_survive_close_and_reopen(journal: Open) -> None:
    store = await journal()
    await store.append(1, payload(1))
    await store.checkpoint(2, payload(2))
    await store.append(3, payload(3))
    await store.close()
    reopened = await journal()
    assert await reopened.load() == [frame(2, checkpoint=True), frame(3)]
    await reopened.append(4, payload(4))
    with pytest.raises(JournalFencedError):
        await reopened.append(3, b"again")


async def test_shards_opening_together_create_the_table_once(journal: Open) -> None:
    stores = await bounded(asyncio.gather(*(journal(f"shard-{n}") for n in range(8))))
    for n, store in enumerate(stores):
        await store.append(1, b"%d" % n)
    assert [await store.load() for store in stores] == [
        [StoredFrame(1, False, b"%d" % n)] for n in range(8)]


async def test_rows_left_below_the_latest_checkpoint_are_not_loaded(journal: Open,
                                                                    backend: Backend) -> None:
    store = await journal()
    await store.checkpoint(5, payload(5))
    await store.append(6, payload(6))
    # As a crash between storing a checkpoint and deleting what it replaces would leave them.
    backend.rows("INSERT INTO table_journal VALUES (?, ?, ?, ?)", ("shard-1", 2, True, b"old"))
    backend.rows("INSERT INTO table_journal VALUES (?, ?, ?, ?)", ("shard-1", 3, False, b"old"))
    assert await store.load() == [frame(5, checkpoint=True), frame(6)]


async def test_durability_says_what_a_frame_survives(journal: Open, backend: Backend) -> None:
    store = await journal()
    if backend.kind == "sqlite":
        assert "synchronous=NORMAL" in store.durability
        assert "not an OS crash or a power loss" in store.durability
        assert backend.rows("PRAGMA journal_mode") == [("wal",)]
    else:
        setting = backend.rows("SELECT current_setting('synchronous_commit')")[0][0]
        assert f"synchronous_commit={setting}" in store.durability


async def test_open_refuses_other_urls(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="redis"):
        await open_journal("redis://127.0.0.1:6379/0", "shard-1")
    (tmp_path / "a-file").write_bytes(b"")
    with pytest.raises(JournalUnavailableError):  # its "directory" is a file
        await open_journal(f"sqlite:///{tmp_path / 'a-file' / 'journal.sqlite3'}", "shard-1")


# --- SQLite: a process killed after its appends returned ---------------------------------------

CHILD = """
import asyncio, sys
from machiavelox.table.journal_store import open_journal

async def main() -> None:
    store = await open_journal(sys.argv[1], "shard-1")
    await store.checkpoint(1, b"checkpoint")
    for no in range(2, 201):
        await store.append(no, b"frame %d" % no)
    print("appended", flush=True)
    await asyncio.sleep(60)  # killed here, nothing closed

asyncio.run(main())
"""


async def test_sqlite_frames_survive_a_sigkill_of_the_writer(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'journal.sqlite3'}"
    child = subprocess.Popen([sys.executable, "-c", CHILD, url], stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert child.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(child.stdout.readline),
                                      CHILD_DEADLINE_S)
        assert line == b"appended\n", child.stderr.read() if child.stderr else b""
    finally:
        child.send_signal(signal.SIGKILL)
        await asyncio.to_thread(child.wait, CHILD_DEADLINE_S)
        for stream in (child.stdout, child.stderr):
            if stream is not None:
                stream.close()
    assert child.returncode == -signal.SIGKILL
    store = await open_journal(url, "shard-1")
    try:
        assert await store.load() == [StoredFrame(1, True, b"checkpoint")] + [
            StoredFrame(no, False, b"frame %d" % no) for no in range(2, 201)]
    finally:
        await store.close()


# --- PostgreSQL behind a proxy that stops forwarding -------------------------------------------


@pytest.fixture
async def proxy() -> AsyncIterator[TcpProxy]:
    parts = urlsplit(PG_URL)
    if not parts.hostname:
        pytest.fail("MACHIAVELOX_TEST_PG_URL names no TCP host to put a proxy in front of")
    relay = TcpProxy(parts.hostname, parts.port or 5432)
    await relay.start()
    yield relay
    relay.resume()
    await relay.close()


@dataclass(frozen=True)
class Proxied:
    store: JournalStore  # every connection through the proxy
    direct: Backend  # the same schema, not through the proxy


@pytest.fixture
async def proxied(proxy: TcpProxy) -> AsyncIterator[Proxied]:
    with pg_schema("test_journal", via_proxy(PG_URL, proxy.port)) as (url, schema):
        store = await bounded(open_journal(url, "shard-1", TIMEOUT_S))
        try:
            yield Proxied(store, Backend("postgres", schema_url(PG_URL, schema)))
        finally:
            await store.close()


async def unavailable(call: Awaitable[object]) -> JournalUnavailableError:
    """The error `call` fails with: unavailable, not fenced, and within the test's bound."""
    with pytest.raises(JournalUnavailableError) as failure:
        await bounded(call)
    assert not isinstance(failure.value, JournalFencedError)
    return failure.value


async def test_a_store_that_stops_answering_is_unavailable_then_used_again(
        proxy: TcpProxy, proxied: Proxied) -> None:
    store = proxied.store
    await store.append(1, b"one")
    proxy.stall()
    await unavailable(store.append(2, b"two"))  # on the open connection: no answer
    await unavailable(store.load())  # a new connection: accepted, never answered
    await unavailable(store.checkpoint(3, b"checkpoint"))
    proxy.resume()
    # The held INSERT of frame 2 may reach the server now: the retry of the same bytes is
    # not fenced whichever comes first.
    await bounded(store.append(2, b"two"))
    await bounded(store.append(3, b"three"))
    assert await bounded(store.load()) == [StoredFrame(1, False, b"one"),
                                           StoredFrame(2, False, b"two"),
                                           StoredFrame(3, False, b"three")]


async def test_a_frame_stored_whose_answer_was_lost_is_not_fenced_on_retry(
        proxy: TcpProxy, proxied: Proxied) -> None:
    store = proxied.store
    await store.append(1, b"one")
    proxy.stall(replies_only=True)  # the INSERT reaches the server; its answer is held
    await unavailable(store.append(2, b"two"))
    assert proxied.direct.numbers("shard-1") == [1, 2]  # it was stored all the same
    proxy.resume()
    await bounded(store.append(2, b"two"))  # finds its own frame
    with pytest.raises(JournalFencedError):
        await bounded(store.append(2, b"other bytes"))
    await bounded(store.append(3, b"three"))
    assert numbers(await bounded(store.load())) == [1, 2, 3]


async def test_a_frame_stored_whose_answer_was_lost_can_be_voided(
        proxy: TcpProxy, proxied: Proxied) -> None:
    store = proxied.store
    await store.append(1, b"one")
    proxy.stall(replies_only=True)
    await unavailable(store.append(2, b"two"))
    assert proxied.direct.numbers("shard-1") == [1, 2]  # landed
    await unavailable(store.void(2))  # not while the store does not answer
    proxy.resume()
    await bounded(store.void(2))
    await bounded(store.append(3, b"three"))
    assert await bounded(store.load()) == [StoredFrame(1, False, b"one"),
                                           StoredFrame(2, False, b""),
                                           StoredFrame(3, False, b"three")]


async def test_a_closed_store_port_is_unavailable_then_used_again(
        proxy: TcpProxy, proxied: Proxied) -> None:
    store = proxied.store
    await store.append(1, b"one")
    await proxy.close()  # the pooled connection is cut; a new one is refused
    await unavailable(store.append(2, b"two"))
    await unavailable(store.load())
    await proxy.start()
    await bounded(store.append(2, b"two"))
    await bounded(store.checkpoint(3, b"checkpoint"))
    assert await bounded(store.load()) == [StoredFrame(3, True, b"checkpoint")]


async def test_a_dropped_connection_is_replaced_within_the_call(
        proxy: TcpProxy, proxied: Proxied) -> None:
    store = proxied.store
    await store.append(1, b"one")
    await proxy.cut()  # as a database restart would: the pooled connection is dead
    await bounded(store.append(2, b"two"))  # on a new connection, no error
    assert numbers(await bounded(store.load())) == [1, 2]


async def test_opening_a_store_that_does_not_answer_is_unavailable(proxy: TcpProxy) -> None:
    with pg_schema("test_journal", via_proxy(PG_URL, proxy.port)) as (url, _):
        proxy.stall()
        error = await unavailable(open_journal(url, "shard-1", TIMEOUT_S))
        assert "PostgreSQL" in str(error)
        await proxy.close()
        await unavailable(open_journal(url, "shard-1", TIMEOUT_S))
