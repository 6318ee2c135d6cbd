"""The durable store (group commit) and the JWT signer."""

import asyncio
import os
import stat
import time

import jwt
import pytest

from minislurm.common.auth import AuthError, Signer, create_key, load_key
from minislurm.ctld.store import Store


def test_commit_makes_writes_durable_and_groups_them(tmp_path):
    async def run():
        store = Store(tmp_path)

        async def submit(i):
            store.put_job(i, {"job_id": i})
            await store.commit()

        await asyncio.gather(*(submit(i) for i in range(500)))
        commits = store.commits
        store.put_meta("next_job_id", 501)
        await store.commit()
        store.close()
        return commits

    commits = asyncio.run(run())
    assert 1 <= commits < 50  # 500 concurrent submissions share a handful of fsyncs
    again = Store(tmp_path)
    assert [j["job_id"] for j in again.jobs()] == list(range(500))
    assert again.meta("next_job_id") == "501"


def test_accounting_rows_keyed_by_run_and_step(tmp_path):
    async def run():
        store = Store(tmp_path)
        store.put_acct(7, 0, "", {"state": "NODE_FAIL"})
        store.put_acct(7, 1, "", {"state": "RUNNING"})
        store.put_acct(7, 1, "", {"state": "COMPLETED"})
        store.put_acct(7, 1, "batch", {"state": "COMPLETED"})
        await store.commit()
        return [r["state"] for r in store.acct()]

    assert asyncio.run(run()) == ["NODE_FAIL", "COMPLETED", "COMPLETED"]


def test_key_file_is_private(tmp_path):
    key = create_key(tmp_path / "jwt.key")
    assert stat.S_IMODE(os.stat(tmp_path / "jwt.key").st_mode) == 0o600
    assert load_key(tmp_path / "jwt.key") == key and len(key) == 32


def test_tokens_carry_the_user_and_expire():
    signer = Signer(b"k" * 32)
    claims = signer.verify(signer.user_token("alice", 60))
    assert claims["sun"] == "alice" and claims["exp"] - claims["iat"] == 60
    with pytest.raises(AuthError, match="Invalid JWT token"):
        Signer(b"x" * 32).verify(signer.user_token("alice"))
    expired = jwt.encode({"sun": "bob", "exp": int(time.time()) - 5}, b"k" * 32, algorithm="HS256")
    with pytest.raises(AuthError, match="Expired"):
        signer.verify(expired)
    # (step credentials: tests/ctld/test_credentials.py)


def test_a_token_is_decoded_once_per_process_until_it_expires(monkeypatch):
    """The agents of one process see the controller's token once per node and request: it is
    checked once, and refused as any other once it has expired."""
    signer = Signer(b"m" * 32)
    token = signer.ctld_token(lifespan=1)
    decoded = []
    real = jwt.decode
    monkeypatch.setattr(jwt, "decode", lambda *a, **kw: decoded.append(1) or real(*a, **kw))
    assert all(Signer(b"m" * 32).verify(token)["ctld"] for _ in range(5)) and len(decoded) == 1
    with pytest.raises(AuthError, match="Invalid JWT token"):
        Signer(b"n" * 32).verify(token)  # known under its own key only
    exp = signer.verify(token)["exp"]
    while time.time() <= exp:
        time.sleep(0.05)
    with pytest.raises(AuthError, match="Expired"):
        signer.verify(token)
