"""Durable state in SQLite (WAL) under StateSaveLocation: jobs, accounting, nodes, counters.

Writes are grouped: statements queue in memory and one background thread commits them in
batches, each commit fsync'ed (``synchronous=FULL``).  A caller that must not answer before
its data is safe (a submission: "Submitted batch job N" only after the commit) awaits
:meth:`Store.commit`, which resolves when the batch holding its statements is on disk.
Many concurrent submissions share one fsync, which is how a small controller can accept
thousands of jobs a second.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (job_id INTEGER PRIMARY KEY, data TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS acct (
    job_id INTEGER NOT NULL, restart INTEGER NOT NULL, step TEXT NOT NULL, data TEXT NOT NULL,
    PRIMARY KEY (job_id, restart, step));
CREATE TABLE IF NOT EXISTS nodes (name TEXT PRIMARY KEY, data TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS reservations (name TEXT PRIMARY KEY, data TEXT NOT NULL);
"""


class Store:
    def __init__(self, directory: str | Path):
        self.path = Path(directory) / "minislurm.db"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(SCHEMA)
        self._lock = threading.Lock()
        self._queue: list[tuple[str, tuple]] = []
        self._flushing: asyncio.Future | None = None
        self._next: asyncio.Future | None = None
        self.commits = 0

    # -- reads (start-up and queries; the loop thread) --------------------------------
    def _read(self, sql: str, params: tuple = ()) -> list[tuple]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    def meta(self, key: str, default: str | None = None) -> str | None:
        rows = self._read("SELECT value FROM meta WHERE key=?", (key,))
        return rows[0][0] if rows else default

    def jobs(self) -> list[dict]:
        return [json.loads(d) for (d,) in self._read("SELECT data FROM jobs ORDER BY job_id")]

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
        return bool(self._queue)

    def put_meta(self, key: str, value: Any) -> None:
        self._queue.append(("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, str(value))))

    def put_job(self, job_id: int, data: dict) -> None:
        self._queue.append(("INSERT OR REPLACE INTO jobs VALUES (?, ?)", (job_id, json.dumps(data))))

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

    def _write_batch(self, batch: list[tuple[str, tuple]]) -> None:
        with self._lock:
            self._db.execute("BEGIN")
            try:
                for sql, params in batch:
                    self._db.execute(sql, params)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        self.commits += 1

    async def commit(self) -> None:
        """Return once everything queued so far is on disk."""
        loop = asyncio.get_running_loop()
        if self._flushing is None:
            self._flushing = loop.create_future()
            loop.create_task(self._flush_loop())
            await asyncio.shield(self._flushing)
            return
        if self._next is None:
            self._next = loop.create_future()
        await asyncio.shield(self._next)

    async def _flush_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            batch, self._queue = self._queue, []
            done = self._flushing
            try:
                if batch:
                    await loop.run_in_executor(None, self._write_batch, batch)
                done.set_result(None)
            except Exception as exc:  # noqa: BLE001 - every waiter must hear about it
                done.set_exception(exc)
            if self._next is None:
                self._flushing = None
                return
            self._flushing, self._next = self._next, None

    def close(self) -> None:
        if self._queue:
            self._write_batch(self._queue)
            self._queue = []
        with self._lock:
            self._db.close()
