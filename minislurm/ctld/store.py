"""Durable state in SQLite (WAL) under StateSaveLocation: jobs, steps, accounting, nodes, counters.

Writes are grouped: statements queue in memory and one background task commits them in
batches, each commit fsync'ed (``synchronous=FULL``).  A caller that must not answer before
its data is safe (a submission: "Submitted batch job N" only after the commit) awaits
:meth:`Store.commit`, which resolves when the batch holding its statements is on disk.
Many concurrent submissions share one fsync, which is how a small controller can accept
thousands of jobs a second.

Commit, then tell: :meth:`Store.then` queues an action (wake a waiter, launch a script, tell
an agent to stop a job) that runs only once everything queued before it is on disk.  A
batch that fails to commit (a full or read-only disk) is kept and retried, with everything
queued after it, until it succeeds; meanwhile :attr:`Store.failure` says why, so the
controller can refuse new work, and nothing queued behind the failure is told to anyone.

The database and its journal are readable by their owner only (they hold every job's
environment), in a directory only the owner may enter.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Callable

from minislurm.lifecycle import Background

log = logging.getLogger("minislurm.ctld")

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (job_id INTEGER PRIMARY KEY, data TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS steps (
    job_id INTEGER NOT NULL, restart INTEGER NOT NULL, step INTEGER NOT NULL, data TEXT NOT NULL,
    PRIMARY KEY (job_id, restart, step));
CREATE TABLE IF NOT EXISTS acct (
    job_id INTEGER NOT NULL, restart INTEGER NOT NULL, step TEXT NOT NULL, data TEXT NOT NULL,
    PRIMARY KEY (job_id, restart, step));
CREATE TABLE IF NOT EXISTS nodes (name TEXT PRIMARY KEY, data TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS reservations (name TEXT PRIMARY KEY, data TEXT NOT NULL);
"""
RETRY_MAX = 5.0  # seconds between two attempts at a batch that failed to commit

# Fault injection for the crash-consistency tests: seconds to sleep before each COMMIT, so a
# test can kill the controller while a batch is in flight.
COMMIT_DELAY_ENV = "MINISLURM_COMMIT_DELAY"


def _private(path: Path) -> None:
    """Create ``path`` (if missing) as a file only its owner may read or write."""
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    os.chmod(path, 0o600)


class Store:
    def __init__(self, directory: str | Path, *, max_pages: int | None = None):
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(directory, 0o700)
        self.path = directory / "minislurm.db"
        for name in (self.path.name, self.path.name + "-wal", self.path.name + "-shm"):
            if name == self.path.name or (directory / name).exists():
                _private(directory / name)  # SQLite gives its journal the database's mode
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(SCHEMA)
        if max_pages:  # a small database limit: a full disk on demand, for tests
            self._db.execute(f"PRAGMA max_page_count={int(max_pages)}")
        self._lock = threading.Lock()
        self._queue: list[tuple[str, tuple]] = []
        self._actions: list[Callable[[], Any]] = []
        self._flushing: asyncio.Future | None = None
        self._next: asyncio.Future | None = None
        self.commits = 0
        self.failure: str | None = None  # why the last commit failed, until one succeeds
        self.commit_delay = float(os.environ.get(COMMIT_DELAY_ENV) or 0)
        self._background = Background(log)

    # -- reads (start-up and queries; the loop thread) --------------------------------
    def _read(self, sql: str, params: tuple = ()) -> list[tuple]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    def meta(self, key: str, default: str | None = None) -> str | None:
        rows = self._read("SELECT value FROM meta WHERE key=?", (key,))
        return rows[0][0] if rows else default

    def jobs(self) -> list[dict]:
        return [json.loads(d) for (d,) in self._read("SELECT data FROM jobs ORDER BY job_id")]

    def steps(self) -> list[tuple[int, int, dict]]:
        """(job id, restart count, step record) of every saved step."""
        return [(j, r, json.loads(d)) for j, r, d in
                self._read("SELECT job_id, restart, data FROM steps ORDER BY job_id, restart, step")]

    def nodes(self) -> dict[str, dict]:
        return {n: json.loads(d) for n, d in self._read("SELECT name, data FROM nodes")}

    def reservations(self) -> list[dict]:
        return [json.loads(d) for (d,) in self._read("SELECT data FROM reservations")]

    def acct(self, where: str = "", params: tuple = ()) -> list[dict]:
        sql = "SELECT data FROM acct" + (f" WHERE {where}" if where else "") + " ORDER BY job_id, restart, step"
        return [json.loads(d) for (d,) in self._read(sql, params)]

    # -- writes (queued, committed in groups) ---------------------------------------
    @property
    def dirty(self) -> bool:
        return bool(self._queue or self._actions)

    def put_meta(self, key: str, value: Any) -> None:
        self._queue.append(("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, str(value))))

    def put_job(self, job_id: int, data: dict) -> None:
        self._queue.append(("INSERT OR REPLACE INTO jobs VALUES (?, ?)", (job_id, json.dumps(data))))

    def put_step(self, job_id: int, restart: int, step_id: int, data: dict) -> None:
        self._queue.append(("INSERT OR REPLACE INTO steps VALUES (?, ?, ?, ?)",
                            (job_id, restart, step_id, json.dumps(data))))

    def drop_steps(self, job_id: int) -> None:
        """A job's step records are done with (it ended, or was requeued: steps restart at 0)."""
        self._queue.append(("DELETE FROM steps WHERE job_id=?", (job_id,)))

    def drop_job(self, job_id: int) -> None:
        """A job saved under ``job_id`` is saved under another id now (an array task that
        took its own id at start): its job and accounting rows under the old one go."""
        self._queue.append(("DELETE FROM jobs WHERE job_id=?", (job_id,)))
        self._queue.append(("DELETE FROM acct WHERE job_id=?", (job_id,)))

    def put_acct(self, job_id: int, restart: int, step: str, data: dict) -> None:
        self._queue.append(("INSERT OR REPLACE INTO acct VALUES (?, ?, ?, ?)",
                            (job_id, restart, step, json.dumps(data))))

    def put_node(self, name: str, data: dict) -> None:
        self._queue.append(("INSERT OR REPLACE INTO nodes VALUES (?, ?)", (name, json.dumps(data))))

    def put_reservation(self, name: str, data: dict | None) -> None:
        if data is None:
            self._queue.append(("DELETE FROM reservations WHERE name=?", (name,)))
        else:
            self._queue.append(("INSERT OR REPLACE INTO reservations VALUES (?, ?)", (name, json.dumps(data))))

    def then(self, action: Callable[[], Any]) -> None:
        """Run ``action`` once everything queued so far is committed (never before)."""
        self._actions.append(action)

    def _write_batch(self, batch: list[tuple[str, tuple]]) -> None:
        with self._lock:
            self._db.execute("BEGIN")
            try:
                for sql, params in batch:
                    self._db.execute(sql, params)
                if self.commit_delay:
                    time.sleep(self.commit_delay)
                self._db.execute("COMMIT")
            except BaseException:
                # SQLite may already have rolled back (SQLITE_FULL does): the error that
                # matters is the first one, not "cannot rollback - no transaction is active".
                if self._db.in_transaction:
                    try:
                        self._db.execute("ROLLBACK")
                    except sqlite3.Error:
                        pass
                raise
        self.commits += 1

    async def commit(self) -> None:
        """Return once everything queued so far is on disk."""
        loop = asyncio.get_running_loop()
        if self._flushing is None:
            self._flushing = loop.create_future()
            self._background.spawn(self._flush_loop())
            await asyncio.shield(self._flushing)
            return
        if self._next is None:
            self._next = loop.create_future()
        await asyncio.shield(self._next)

    @property
    def busy(self) -> bool:
        """Something is queued or being committed."""
        return self.dirty or self._flushing is not None

    async def settled(self) -> None:
        """Wait until nothing queued so far is unsaved, so an answer shows only durable state."""
        if self.busy:
            await self.commit()

    def flush_soon(self) -> None:
        """Start a commit of what is queued, without waiting for it (actions run after it)."""
        if self.dirty:
            self._background.spawn(self.commit())

    async def _flush_loop(self) -> None:
        loop = asyncio.get_running_loop()
        delay = 0.05
        carry: list[tuple[str, tuple]] = []  # a batch that failed, retried first
        while True:
            batch, self._queue = carry + self._queue, []
            actions, self._actions = self._actions, []
            try:
                if batch:
                    await loop.run_in_executor(None, self._write_batch, batch)
            except Exception as exc:  # noqa: BLE001 - a failed commit is retried, never dropped
                if self.failure != str(exc):
                    log.error("cannot save state in %s: %s (retrying; no changes accepted meanwhile)",
                              self.path, exc)
                self.failure = str(exc)
                carry, self._actions = batch, actions + self._actions
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX)
                continue
            if self.failure is not None:
                log.info("state saved again in %s after: %s", self.path, self.failure)
                self.failure = None
            carry, delay = [], 0.05
            for action in actions:
                try:
                    action()
                except Exception:  # noqa: BLE001 - one failed action must not stop the others
                    log.exception("an action after a commit failed")
            self._flushing.set_result(None)
            if self._next is None and not self.dirty:
                self._flushing = None
                return
            self._flushing, self._next = self._next or loop.create_future(), None

    def close(self) -> None:
        if self._queue:
            try:
                self._write_batch(self._queue)
            except sqlite3.Error as exc:
                log.error("could not save the last changes in %s: %s", self.path, exc)
            self._queue = []
        with self._lock:
            self._db.close()
