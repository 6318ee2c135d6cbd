"""accounts.conf beside slurm.conf (what slurmdbd's associations are for real Slurm): the controller
reads its fair-share tree and its operators (AdminLevel) when it starts.  The docker cluster's
``cluster add-users`` writes this file; before, the controller never read it (every association
had one share, and only root and SlurmUser were operators)."""

from __future__ import annotations

import pytest

from livekit import started
from minislurm.client import ClientError
from minislurm.common.auth import Signer, load_key

ACCOUNTS = """\
Account=research Fairshare=3
User=alice Account=research Fairshare=5
User=teacher Account=research AdminLevel=Operator
User=mallory Account=research
"""


@pytest.fixture(scope="module")
def lv(tmp_path_factory):
    root = tmp_path_factory.mktemp("accounts")
    (root / "cluster").mkdir()
    (root / "cluster" / "accounts.conf").write_text(ACCOUNTS)
    with started(root) as lv:
        yield lv


def as_user(lv, user: str):
    return lv.c.client(Signer(load_key(lv.c.key_path)).user_token(user, 600))


def test_the_fair_share_tree_comes_from_accounts_conf(lv):
    shares = {(r["account"], r["user"]): r["raw_shares"] for r in lv.api.call("GET", "/shares")["shares"]}
    assert shares[("research", None)] == 3 and shares[("research", "alice")] == 5
    assert shares[("research", "mallory")] == 1


def test_an_operator_may_cancel_anyones_job_and_others_may_not(lv):
    job_id = lv.sbatch("--hold", "--wrap", "true")
    with pytest.raises(ClientError, match="Access/permission denied"):
        as_user(lv, "mallory").call("POST", f"/jobs/{job_id}/cancel", {})
    as_user(lv, "teacher").call("POST", f"/jobs/{job_id}/cancel", {})
    assert lv.wait(job_id)["state"] == "CANCELLED"
