"""What an agent remembers of job runs to refuse stale and replayed step credentials (issue 9, defect 3)."""

import pytest

from minislurm.common.auth import CredentialError
from minislurm.slurmd.runs import MEMORY, Runs


def claims(job=7, inc=0, step=0, exp=1e12):
    return {"job": job, "inc": inc, "step": step, "exp": exp}


def test_a_step_credential_is_used_once():
    runs = Runs("gpu01")
    run = runs.admit_step(claims())
    assert runs.get(7, 0) is run
    with pytest.raises(CredentialError, match="^Job credential replayed$"):
        runs.admit_step(claims())
    assert runs.admit_step(claims(step=1)) is run


def test_an_ended_run_or_an_older_incarnation_is_revoked_and_never_replaces_the_current_one():
    runs = Runs("gpu01")
    first = runs.admit_step(claims(inc=0))
    runs.end(7, 0)
    with pytest.raises(CredentialError, match="^Job credential revoked$"):
        runs.admit_step(claims(inc=0, step=1))
    second = runs.admit_step(claims(inc=1, step=0))  # step ids start again after a requeue
    assert second is not first and runs.get(7, 1) is second
    with pytest.raises(CredentialError, match="^Job credential revoked$"):
        runs.admit_step(claims(inc=0, step=5))
    assert runs.get(7, 1) is second and runs.get(7, 0) is first


def test_an_unknown_run_ended_by_the_controller_is_revoked():
    runs = Runs("gpu02")
    runs.end(9, 2)  # terminate of a run that never had a task here
    for inc in (0, 1, 2):
        with pytest.raises(CredentialError, match="^Job credential revoked$"):
            runs.admit_step(claims(job=9, inc=inc))
    assert runs.admit_step(claims(job=9, inc=3)).inc == 3


def test_memory_is_bounded():
    now = [1000.0]
    runs = Runs("gpu01", clock=lambda: now[0])
    runs.admit_step(claims(job=1, exp=1100))
    runs.end(1, 0)
    runs.forget(runs.get(1, 0))
    now[0] += MEMORY + 61
    runs.admit_step(claims(job=2, exp=now[0] + 100))
    assert (runs.used.keys(), runs.ended, set(runs.newest)) == ({(2, 0, 0)}, {}, {2})
