"""sacctmgr end to end (issue 24 item 2): an operator adds an account and a user with the command
Slurm admins type, the user's jobs may then be charged to it (``AccountingStorageEnforce=
associations``), an ordinary user's ``sacctmgr add`` is refused as Slurm refuses it, and the
association is in accounts.conf, so a restarted controller still has it."""

from __future__ import annotations

import os

import pytest

from livekit import started, unix_users
from minislurm.common.auth import Signer, load_key

ALICE, MALLORY = "mslmgralice", "mslmgrmallory"  # known Unix users, this module's own (unix_users)


@pytest.fixture(scope="module")
def users():
    if os.geteuid() != 0:
        pytest.skip("ordinary users of a live cluster need root (useradd; the controller checks them)")
    with unix_users(ALICE, MALLORY):
        yield


@pytest.fixture(scope="module")
def lv(tmp_path_factory, users):
    with started(tmp_path_factory.mktemp("sacctmgr"), accounting_enforce=frozenset({"associations"})) as lv:
        yield lv


def token(lv, user: str) -> dict:
    return {"SLURM_JWT": Signer(load_key(lv.c.key_path)).user_token(user, 600)}


def test_an_operator_adds_an_account_and_a_user_who_may_then_submit_to_it(lv):
    before = lv.run("sbatch", "-A", "ml", "--hold", "--wrap", "true", env=token(lv, ALICE))
    assert before.returncode == 1 and "Invalid account" in before.stderr, before
    r = lv.run("sacctmgr", "-i", "add", "account", "ml", "Description=machine learning", "Fairshare=4")
    assert r.returncode == 0 and " Adding Account(s)\n  ml\n" in r.stdout, r
    r = lv.run("sacctmgr", "-i", "add", "user", ALICE, "account=ml")
    assert r.returncode == 0 and f"  U = {ALICE:<9.9} A = ml " in r.stdout, r
    job = lv.sbatch("-A", "ml", "--hold", "--wrap", "true", env=token(lv, ALICE))
    assert lv.job(job)["account"] == "ml"
    lv.api.call("POST", f"/jobs/{job}/cancel", {})
    # snakemake-executor-plugin-slurm's own call, as alice, parsed the way the plugin does
    r = lv.run("sacctmgr", "-n", "-s", "list", "user", ALICE, "format=account%256", env=token(lv, ALICE))
    assert r.returncode == 0 and {line.strip().lower() for line in r.stdout.split("\n") if line} == {"ml"}, r


def test_an_ordinary_users_add_is_refused_and_changes_nothing(lv):
    r = lv.run("sacctmgr", "-i", "add", "account", "mine", env=token(lv, MALLORY))
    assert r.returncode == 1 and r.stderr == " Problem adding accounts: Access/permission denied\n", r
    r = lv.run("sacctmgr", "-i", "add", "user", MALLORY, "account=ml", env=token(lv, MALLORY))
    assert r.returncode == 1 and r.stderr == " Problem adding users: Access/permission denied\n", r
    r = lv.run("sacctmgr", "-i", "delete", "user", ALICE, env=token(lv, MALLORY))
    assert r.returncode == 1 and r.stderr == " Error with request: Access/permission denied\n", r
    r = lv.run("sacctmgr", "-P", "-n", "list", "assoc", "format=account,user", env=token(lv, MALLORY))
    assert "mine|" not in r.stdout and f"ml|{MALLORY}" not in r.stdout and f"ml|{ALICE}" in r.stdout, r


def test_the_association_survives_a_controller_restart(lv):
    lv.c.restart_controller(crash=True)
    r = lv.run("sacctmgr", "-P", "list", "user", ALICE, "format=user,defaultaccount")
    assert r.stdout == f"User|Def Acct\n{ALICE}|ml\n", r
    job = lv.sbatch("-A", "ml", "--hold", "--wrap", "true", env=token(lv, ALICE))
    assert lv.job(job)["account"] == "ml"
    lv.api.call("POST", f"/jobs/{job}/cancel", {})


def test_without_i_sacctmgr_asks_and_only_yes_commits(lv):
    r = lv.run("sacctmgr", "add", "account", "maybe", input="n\n")
    assert r.returncode == 0 and "Would you like to commit changes? (You have 30 seconds to decide)\n(N/y): " \
        in r.stdout and r.stdout.endswith(" Changes Discarded\n"), r
    assert lv.run("sacctmgr", "-n", "-P", "list", "account", "maybe").stdout == ""
    r = lv.run("sacctmgr", "add", "account", "maybe", input="y\n")
    assert r.returncode == 0 and "Changes Discarded" not in r.stdout, r
    assert lv.run("sacctmgr", "-n", "-P", "list", "account", "maybe", "format=account").stdout == "maybe\n"
