"""``sshare -l``: the long format, checked against what the real-Slurm twin printed (Slurm
22.05.8, ``sinfo -V``; issue 20, item 8) for its own tree: a ``root`` user under root and the
``default`` account with ``student``, who had used 1062 CPU-seconds, no job running."""

from __future__ import annotations

from types import SimpleNamespace

from minislurm.cli.fmt.sshare import format_sshare
from minislurm.core.accounts import AssociationTree
from minislurm.sched.fairshare import UsageLedger, share_rows

TRES = ["cpu", "mem", "energy", "node", "billing", "fs/disk", "vmem", "pages", "gres/gpu"]
IDLE = "cpu=0,mem=0,energy=0,node=0,billing=0,fs/disk=0,vmem=0,pages=0,gres/gpu=0"


def twin_rows():
    tree = AssociationTree()
    tree.add_user("root", "root")
    tree.add_user("student", "default")
    ledger = UsageLedger(tree, half_life=0)
    ledger.charge("student", "default", 1062, 0)
    parents = {a.account: a.parent for a in tree.nodes.values() if a.user is None}
    return share_rows(tree, ledger, 0), parents


def test_long_all_users_as_the_twin_prints_it():
    rows, parents = twin_rows()
    text = format_sshare(rows, all_users=True, parents=parents, long=True, tres=TRES)
    assert text == (
        "Account                    User  RawShares  NormShares    RawUsage   NormUsage  EffectvUsage  FairShare"
        "    LevelFS                    GrpTRESMins                    TRESRunMins \n"
        "-------------------- ---------- ---------- ----------- ----------- ----------- ------------- ----------"
        " ---------- ------------------------------ ------------------------------ \n"
        "root                                          0.000000        1062                  1.000000           "
        "                                           cpu=0,mem=0,energy=0,node=0,b+ \n"
        " root                      root          1    0.500000           0    0.000000      0.000000   1.000000"
        "        inf                                cpu=0,mem=0,energy=0,node=0,b+ \n"
        " default                                 1    0.500000        1062    1.000000      1.000000           "
        "   0.500000                                cpu=0,mem=0,energy=0,node=0,b+ \n"
        "  default               student          1    1.000000        1062    1.000000      1.000000   0.500000"
        "   1.000000                                cpu=0,mem=0,energy=0,node=0,b+ \n")


def test_long_parsable_for_one_user_as_the_twin_prints_it():
    rows, parents = twin_rows()
    assert format_sshare(rows, users=["student"], parents=parents, long=True, tres=TRES, parsable2=True) == (
        "Account|User|RawShares|NormShares|RawUsage|NormUsage|EffectvUsage|FairShare|LevelFS|GrpTRESMins|TRESRunMins\n"
        f"root|||0.000000|1062||1.000000||||{IDLE}\n"
        f" default||1|0.500000|1062|1.000000|1.000000||0.500000||{IDLE}\n"
        f"  default|student|1|1.000000|1062|1.000000|1.000000|0.500000|1.000000||{IDLE}\n")


def test_a_running_job_counts_in_tres_run_mins_and_classic_has_no_level_fs():
    rows, parents = twin_rows()
    run = {"cpu": 8, "mem": 8000, "node": 1, "billing": 8}
    student = [r for r in rows if r.user == "student"][0]
    rows = [r if r is not student else SimpleNamespace(**vars(r), tres_run_mins=run) for r in rows]
    text = format_sshare(rows, users=["student"], parents=parents, long=True, tres=TRES, parsable2=True,
                         fair_tree=False, root_run=run)
    lines = text.splitlines()
    assert lines[0] == "Account|User|RawShares|NormShares|RawUsage|NormUsage|EffectvUsage|FairShare|GrpTRESMins|TRESRunMins"
    busy = "cpu=8,mem=8000,energy=0,node=1,billing=8,fs/disk=0,vmem=0,pages=0,gres/gpu=0"
    assert lines[1].endswith(f"||{busy}") and lines[-1].endswith(f"||{busy}")
