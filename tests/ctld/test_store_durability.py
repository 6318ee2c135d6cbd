"""The store's promises: actions run only after their commit, a failed commit is retried (never
dropped, never hidden behind another error), and the files are private."""

import asyncio
import os
import stat

from minislurm.ctld.store import Store


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_an_action_runs_only_once_what_came_before_it_is_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("MINISLURM_COMMIT_DELAY", "0.3")

    async def run():
        store = Store(tmp_path)
        seen = []
        store.put_job(1, {"job_id": 1})
        store.then(lambda: seen.append(Store(tmp_path).jobs()))  # read back by another connection
        store.flush_soon()
        await asyncio.sleep(0.1)
        assert seen == []  # decided, not yet saved: nobody told
        await store.commit()
        store.close()
        return seen

    assert asyncio.run(run()) == [[{"job_id": 1}]]


def test_a_full_disk_is_named_retried_and_then_saved(tmp_path):
    async def run():
        store = Store(tmp_path, max_pages=20)
        told = []
        store.put_job(1, {"job_id": 1, "env": "x" * 100_000})  # more than 20 pages
        store.then(lambda: told.append(1))
        waiter = asyncio.ensure_future(store.commit())
        for _ in range(100):
            await asyncio.sleep(0.02)
            if store.failure:
                break
        assert "database or disk is full" in store.failure  # not "cannot rollback ..."
        store.put_job(2, {"job_id": 2})  # queued behind the failure
        await asyncio.sleep(0.3)
        assert not waiter.done() and told == []  # kept, retried, nobody told
        store._db.execute("PRAGMA max_page_count=100000")  # the disk has room again
        await asyncio.wait_for(waiter, 10)
        await store.commit()
        assert store.failure is None and told == [1]
        store.close()

    asyncio.run(run())
    assert [j["job_id"] for j in Store(tmp_path).jobs()] == [1, 2]


def test_state_files_are_private_to_the_controller(tmp_path):
    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    (state / "minislurm.db-wal").write_bytes(b"")  # left by an older version, world-readable
    os.chmod(state / "minislurm.db-wal", 0o644)

    async def run():
        store = Store(state)
        store.put_job(1, {"job_id": 1, "environment": {"API_KEY": "secret"}})
        await store.commit()
        return store

    store = asyncio.run(run())
    assert mode(state) == 0o700
    files = sorted(p.name for p in state.iterdir())
    assert "minislurm.db" in files and "minislurm.db-wal" in files
    assert all(mode(state / f) == 0o600 for f in files), {f: oct(mode(state / f)) for f in files}
    store.close()
