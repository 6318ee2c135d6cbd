"""Who may ask for what, through the real commands as ordinary Unix users (issue 21, items 1
and 2): a negative nice is refused by sbatch and by ``scontrol update`` alike (one rule for both
paths), and with ``AccountingStorageEnforce=associations`` a job goes to its user's own account,
never to another's or an unknown one, nor into another account's reservation by ``-A``.
The in-process tests (tests/ctld/test_access.py) cover each rule; these prove the commands."""

from __future__ import annotations

import os

import pytest

from livekit import started, unix_users

pytestmark = pytest.mark.live
ANN, BEN = "mslaccann", "mslaccben"  # the controller runs jobs of known users only; this module's own
ACCOUNTS = f"""\
Account=research
Account=eval
User={ANN} Account=research
User={BEN} Account=eval
"""
SUBMIT_FAILED = "sbatch: error: Batch job submission failed: "
INVALID_ACCOUNT = "Invalid account or account/partition combination specified"


@pytest.fixture(scope="module")
def users():
    if os.geteuid() != 0:
        pytest.skip("ordinary users of a live cluster need root (useradd; the controller checks them)")
    with unix_users(ANN, BEN):
        yield


@pytest.fixture(scope="module")
def lv(tmp_path_factory, users):
    root = tmp_path_factory.mktemp("access")
    (root / "cluster").mkdir()
    (root / "cluster" / "accounts.conf").write_text(ACCOUNTS)
    with started(root, accounting_enforce=frozenset({"associations"})) as lv:
        yield lv


def as_user(lv, user: str) -> dict:
    r = lv.run("scontrol", "token", f"username={user}")
    assert r.returncode == 0, r
    return {"SLURM_JWT": r.stdout.strip().split("=", 1)[1]}


def test_a_negative_nice_is_refused_to_a_user_by_sbatch_and_by_scontrol_update(lv):
    ben = as_user(lv, BEN)
    r = lv.run("sbatch", "--nice=-100000", "--hold", "--wrap", "true", env=ben)
    assert (r.returncode, r.stdout, r.stderr) == (1, "", SUBMIT_FAILED + "Invalid --nice value\n")
    job_id = lv.sbatch("--hold", "--wrap", "true", env=ben)
    r = lv.run("scontrol", "update", f"JobId={job_id}", "Nice=-5", env=ben)
    assert (r.returncode, r.stdout, r.stderr) == (1, "", f"Access/permission denied for job {job_id}\n")
    assert lv.job(job_id)["nice"] == 0
    r = lv.run("scontrol", "update", f"JobId={job_id}", "Nice=-5")  # the operator may
    assert (r.returncode, r.stderr) == (0, "")
    assert lv.job(job_id)["nice"] == -5
    assert lv.run("scancel", str(job_id)).returncode == 0


def test_a_job_goes_to_its_users_own_account_and_no_other(lv):
    ben = as_user(lv, BEN)
    job_id = lv.sbatch("--hold", "--wrap", "true", env=ben)
    assert lv.run("squeue", "-h", "-o", "%a", "-j", str(job_id)).stdout == "eval\n"  # the default account
    for account in ("research", "nosuch"):  # another user's, and one nobody has
        r = lv.run("sbatch", "-A", account, "--hold", "--wrap", "true", env=ben)
        assert (r.returncode, r.stdout, r.stderr) == (1, "", SUBMIT_FAILED + INVALID_ACCOUNT + "\n"), account
    r = lv.run("srun", "-A", "research", "true", env=ben)
    assert (r.returncode, r.stderr) == (1, f"srun: error: Unable to allocate resources: {INVALID_ACCOUNT}\n")
    r = lv.run("scontrol", "update", f"JobId={job_id}", "Account=research", env=ben)
    assert (r.returncode, r.stderr) == (1, f"{INVALID_ACCOUNT} for job {job_id}\n")
    r = lv.run("scontrol", "create", "reservation", "ReservationName=research_day", "Nodes=gpu02",
               "StartTime=now", "Duration=60", "Accounts=research")
    assert r.returncode == 0, r
    r = lv.run("sbatch", "-A", "research", "--reservation=research_day", "--hold", "--wrap", "true", env=ben)
    assert (r.returncode, r.stderr) == (1, SUBMIT_FAILED + INVALID_ACCOUNT + "\n")  # -A opens no reservation
    mine = lv.sbatch("--reservation=research_day", "--hold", "--wrap", "true", env=as_user(lv, ANN))
    assert lv.run("squeue", "-h", "-o", "%a %v", "-j", str(mine)).stdout == "research research_day\n"
    assert lv.run("scancel", str(job_id), str(mine)).returncode == 0
    assert lv.run("scontrol", "delete", "reservation", "research_day").returncode == 0
