"""Step credentials (Slurm's job credentials) and tokens are different things: each is signed so
that it never verifies as the other; both must carry an expiry (issue 9, defects 2 and 10)."""

import base64
import json
import time

import jwt
import pytest

from minislurm.common.auth import CREDENTIAL_LIFESPAN, AuthError, CredentialError, Signer

KEY = b"k" * 32


def credential(signer: Signer, **kw) -> str:
    args = dict(job_id=5, incarnation=1, step_id=2, user="alice", uid=1001, gid=1002,
                tasks={"gpu01": [0, 1], "gpu02": [2, 3]}, gpus={"gpu01": [0, 1], "gpu02": [3]}, cpus_per_task=2)
    return signer.step_credential(**{**args, **kw})


def test_a_credential_binds_the_run_the_step_the_user_the_tasks_and_the_gpus():
    signer = Signer(KEY)
    claims = signer.verify_credential(credential(signer))
    bound = {k: claims[k] for k in ("job", "inc", "step", "user", "uid", "gid", "nodes", "tasks", "gpus",
                                    "cpus_per_task")}
    assert bound == {"job": 5, "inc": 1, "step": 2, "user": "alice", "uid": 1001, "gid": 1002,
                     "nodes": ["gpu01", "gpu02"], "tasks": [[0, 1], [2, 3]],
                     "gpus": {"gpu01": [0, 1], "gpu02": [3]}, "cpus_per_task": 2}
    assert claims["exp"] - claims["iat"] == CREDENTIAL_LIFESPAN == 120  # for launching, not a lasting right


def test_a_credential_is_not_a_token_and_a_token_is_not_a_credential():
    signer = Signer(KEY)
    with pytest.raises(AuthError, match="^Invalid JWT token$"):
        signer.verify(credential(signer))  # so the API refuses it and it cannot mint a token
    with pytest.raises(CredentialError, match="^Invalid job credential$"):
        signer.verify_credential(signer.user_token("alice"))
    with pytest.raises(CredentialError, match="^Invalid job credential$"):
        signer.verify_credential(signer.ctld_token())
    # a credential's claims signed with the token key (as before) is neither
    forged = jwt.encode(jwt.decode(credential(signer), options={"verify_signature": False}), KEY, algorithm="HS256")
    with pytest.raises(CredentialError):
        signer.verify_credential(forged)
    with pytest.raises(AuthError):
        signer.verify(forged)
    with pytest.raises(CredentialError):
        Signer(b"x" * 32).verify_credential(credential(signer))


def test_tokens_and_credentials_without_exp_are_refused():
    now = int(time.time())
    with pytest.raises(AuthError, match="^Invalid JWT token$"):
        Signer(KEY).verify(jwt.encode({"sun": "root", "iat": now}, KEY, algorithm="HS256"))
    with pytest.raises(AuthError, match="^Invalid JWT token$"):
        Signer(KEY).verify(jwt.encode({"ctld": True}, KEY, algorithm="HS256"))
    claims = jwt.decode(credential(Signer(KEY)), options={"verify_signature": False})
    del claims["exp"]
    with pytest.raises(CredentialError, match="^Invalid job credential$"):
        Signer(KEY).verify_credential(jwt.encode(claims, Signer(KEY)._cred_key, algorithm="HS256"))


def test_an_expired_credential_may_only_signal():
    signer = Signer(KEY)
    old = credential(signer, lifespan=-5)
    with pytest.raises(CredentialError, match="^Job credential expired$"):
        signer.verify_credential(old)
    assert signer.verify_credential(old, check_expiry=False)["step"] == 2


def test_a_changed_credential_is_invalid():
    signer = Signer(KEY)
    head, body, sig = credential(signer).split(".")
    claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    claims["user"], claims["uid"] = "root", 0
    body = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    with pytest.raises(CredentialError, match="^Invalid job credential$"):
        signer.verify_credential(f"{head}.{body}.{sig}")


def test_what_a_credential_says_of_each_node_is_carried_compressed():
    """A step on 2,048 nodes: every launch request carries its credential (hundreds of requests),
    so each node's tasks, CPUs, GPUs and address travel compressed, and come back as they were."""
    nodes = [f"gpu{i:04d}" for i in range(1, 2049)]
    per_node = dict(tasks={n: [i] for i, n in enumerate(nodes)}, gpus={n: list(range(8)) for n in nodes},
                    cpus=[32] * len(nodes), addrs={n: f"10.0.{i // 256}.{i % 256}:6818" for i, n in enumerate(nodes)})
    signer = Signer(KEY)
    text = credential(signer, **per_node)
    claims = signer.verify_credential(text)
    assert len(text) < 64_000  # 200 kB as plain claims
    assert claims["nodes"] == nodes and claims["tasks"] == [[i] for i in range(2048)]
    assert (claims["gpus"], claims["cpus"], claims["addrs"]) == (per_node["gpus"], per_node["cpus"], per_node["addrs"])
