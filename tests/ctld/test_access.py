"""Who may ask for what (issue 21, items 1 and 2), on the controller in-process (fake clock).

Item 1: what Slurm keeps for operators (a negative nice, ``--priority``, ``--uid``/``--gid``, a
longer time limit, a partition's AllowGroups) is refused to anyone else by submission and by
``scontrol update`` alike: one set of rules (minislurm/sched/access.py) that both paths call.
Item 2: ``AccountingStorageEnforce=associations`` charges a job to its user's default account
and refuses an account the user is not in, or an unknown one; ``-A`` of another's account opens
no reservation of theirs.  Without enforcement the account stays a label, as before.
"""

from __future__ import annotations

import math

import pytest
from ctldkit import run

from minislurm.cluster.confgen import lab_config
from minislurm.core import errors
from minislurm.core.errors import SlurmError
from minislurm.core.reservation import AdvanceReservation
from minislurm.ctld import actions, admission
from minislurm.sched import priority

ACCOUNTS = """\
Account=research Fairshare=60
Account=eval Fairshare=40
User=alice Account=research
User=alice Account=eval
User=bob Account=eval
User=teacher Account=eval AdminLevel=Operator
"""
ENFORCE = {"accounting_enforce": frozenset({"associations"})}


def _accounts(h, text: str = ACCOUNTS) -> None:
    path = h.tmp_path / "accounts.conf"
    path.write_text(text)
    h.ctl.accounts_file = path  # read at the next request (the controller rereads a changed file)


async def _refused(h, user: str, message: str, **spec) -> None:
    """Refused with Slurm's message, and nothing of it kept: no job, no id used."""
    first, jobs = h.ctl.state.next_job_id, dict(h.ctl.state.jobs)
    with pytest.raises(SlurmError) as exc:
        await h.submit(user, **spec)
    assert exc.value.message == message, (spec, exc.value.message)
    assert h.ctl.state.next_job_id == first and h.ctl.state.jobs == jobs


# -- item 1: privileged options, one rule for both paths ------------------------------------
def test_only_an_operator_may_jump_the_queue_by_submission_or_by_update(tmp_path):
    async def test(h):
        _accounts(h)
        await _refused(h, "alice", "Invalid --nice value", hold=True, nice=-100000)
        plain = await h.submit("alice", begin=h.ctl.clock() + 3600)
        with pytest.raises(SlurmError, match=f"^{errors.ACCESS_DENIED}$"):
            await actions.update_job(h.ctl, "alice", plain, {"Nice": "-5"})
        assert h.job(plain).nice == 0
        await actions.update_job(h.ctl, "alice", plain, {"Nice": "50"})  # a kinder nice is anyone's
        await actions.update_job(h.ctl, "teacher", plain, {"Nice": "-5"})  # AdminLevel=Operator
        assert h.job(plain).nice == -5
        mine = await h.submit("root", nice=-100000, begin=h.ctl.clock() + 3600)
        assert h.job(mine).nice == -100000 and h.job(mine).priority > h.job(plain).priority
    run(test, tmp_path)


def test_priority_is_an_operators_and_anyone_elses_is_dropped(tmp_path):
    async def test(h):
        later = h.ctl.clock() + 3600
        plain = await h.submit("alice", begin=later)
        asked = await h.submit("alice", begin=later, extra={"priority": "4000000"})
        given = await h.submit("root", begin=later, extra={"priority": "4000000"})
        assert h.job(asked).priority == h.job(plain).priority < 4000000
        assert h.job(given).priority == 4000000
        h.ctl.state.set_priorities(priority.recompute(h.ctl.state, h.ctl.clock() + 600))  # PriorityCalcPeriod
        assert h.job(given).priority == 4000000  # fixed, as slurmctld's direct_set_prio
        held = await h.submit("root", begin=later, extra={"priority": "0"})
        assert (h.job(held).hold, h.job(held).priority) == ("admin", 0)
    run(test, tmp_path)


def test_submitting_for_another_user_or_group_is_roots(tmp_path):
    async def test(h):
        await _refused(h, "alice", errors.USER_ID_MISSING, extra={"uid": "0"})
        await _refused(h, "alice", "Invalid group id", extra={"gid": "0"})
        job_id = await h.submit("root", hold=True, extra={"uid": "0"})
        assert h.job(job_id).user == "root"
    run(test, tmp_path)


def test_a_longer_time_limit_is_an_operators(tmp_path):
    async def test(h):
        _accounts(h)
        job_id = await h.submit("alice", hold=True, time_limit_min=60)
        with pytest.raises(SlurmError, match=f"^{errors.ACCESS_DENIED}$"):
            await actions.update_job(h.ctl, "alice", job_id, {"TimeLimit": "2:00:00"})
        await actions.update_job(h.ctl, "alice", job_id, {"TimeLimit": "30"})
        await actions.update_job(h.ctl, "teacher", job_id, {"TimeLimit": "2:00:00"})
        assert h.job(job_id).time_limit == 2 * 3600
    run(test, tmp_path)


def _two_partitions():
    cfg = lab_config(2, 4, 8, 64_000)
    closed = type(cfg.partitions[0])("class", nodes=list(cfg.partitions[0].nodes), allow_groups=["students"],
                                     allow_accounts=["research"])
    cfg.partitions.append(closed)
    return cfg


def test_allow_groups_admits_its_members_and_root_by_either_path(tmp_path, monkeypatch):
    from minislurm.ctld import controller
    monkeypatch.setattr(controller, "_groups", lambda user: frozenset({"students"} if user == "alice" else ()))

    async def test(h):
        await _refused(h, "bob", "User's group not permitted to use this partition", partition="class")
        job_id = await h.submit("bob", hold=True)
        with pytest.raises(SlurmError, match="^User's group not permitted to use this partition$"):
            await actions.update_job(h.ctl, "bob", job_id, {"Partition": "class"})
        assert h.job(job_id).partition == "gpu"
        assert h.job(await h.submit("alice", hold=True, partition="class")).partition == "class"
        assert h.job(await h.submit("root", hold=True, partition="class")).partition == "class"
    run(test, tmp_path, config=_two_partitions())


def test_allow_accounts_holds_a_job_of_another_account_back(tmp_path, monkeypatch):
    from minislurm.ctld import controller
    monkeypatch.setattr(controller, "_groups", lambda user: frozenset({"students"}))

    async def test(h):
        other = await h.submit("alice", partition="class", account="eval", seconds=5)
        mine = await h.submit("alice", partition="class", account="research", seconds=5)
        await h.until(lambda: h.job(mine).state.name == "COMPLETED")
        assert (h.job(other).state.name, h.job(other).reason) == ("PENDING", "AccountNotAllowed")
    run(test, tmp_path, config=_two_partitions())


# -- item 2: AccountingStorageEnforce=associations -------------------------------------------
def test_a_job_is_charged_to_its_users_default_account(tmp_path):
    async def test(h):
        _accounts(h, ACCOUNTS + "User=carol Account=research\nUser=carol Account=eval DefaultAccount=eval\n")
        assert h.job(await h.submit("alice", hold=True)).account == "research"  # the first line's
        assert h.job(await h.submit("alice", hold=True, account="eval")).account == "eval"
        assert h.job(await h.submit("carol", hold=True)).account == "eval"  # DefaultAccount=
        assert h.job(await h.submit("root", hold=True)).account == "root"  # as sacctmgr makes root
    run(test, tmp_path, **ENFORCE)


def test_an_account_the_user_is_not_in_or_an_unknown_one_is_refused(tmp_path):
    async def test(h):
        _accounts(h)
        for user, account in (("bob", "research"), ("bob", "nosuch"), ("mallory", None), ("mallory", "eval")):
            await _refused(h, user, errors.INVALID_ACCOUNT, hold=True, account=account)
        with pytest.raises(SlurmError, match=f"^{errors.INVALID_ACCOUNT}$"):  # --test-only too
            await admission.test_only(h.ctl, "bob", {"spec": {"account": "research"}, "script": "true"})
        assert not any(a.account == "nosuch" for a in h.ctl.fairshare.tree.nodes.values())  # no account made
        job_id = await h.submit("bob", hold=True)
        assert h.job(job_id).account == "eval"
        with pytest.raises(SlurmError, match=f"^{errors.INVALID_ACCOUNT}$"):  # scontrol update: the same rule
            await actions.update_job(h.ctl, "bob", job_id, {"Account": "research"})
        assert h.job(job_id).account == "eval"
        await actions.update_job(h.ctl, "alice", await h.submit("alice", hold=True), {"Account": "eval"})
    run(test, tmp_path, **ENFORCE)


def test_another_users_account_opens_no_reservation_of_theirs(tmp_path):
    async def test(h):
        _accounts(h)
        h.ctl.state.add_reservation(AdvanceReservation("research_day", ("gpu01",), h.ctl.clock(), math.inf,
                                                       accounts=frozenset({"research"})))
        await _refused(h, "bob", errors.INVALID_ACCOUNT, account="research", reservation="research_day")
        await _refused(h, "bob", "Access denied to requested reservation", reservation="research_day")
        job_id = await h.submit("alice", account="research", reservation="research_day", hold=True)
        assert h.job(job_id).reservation == "research_day"
    run(test, tmp_path, **ENFORCE)


def test_a_new_association_counts_without_a_restart(tmp_path):
    """``cluster add-users`` appends to accounts.conf; the controller reads it again."""
    async def test(h):
        _accounts(h)
        await _refused(h, "dave", errors.INVALID_ACCOUNT, hold=True)
        path = h.tmp_path / "accounts.conf"
        path.write_text(ACCOUNTS + "User=dave Account=eval\n")
        assert h.job(await h.submit("dave", hold=True)).account == "eval"
    run(test, tmp_path, **ENFORCE)


def test_without_enforcement_the_account_is_a_label(tmp_path):
    async def test(h):
        _accounts(h)
        assert h.job(await h.submit("bob", hold=True)).account == "default"
        assert h.job(await h.submit("bob", hold=True, account="nosuch")).account == "nosuch"
    run(test, tmp_path)
