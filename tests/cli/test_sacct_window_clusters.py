"""sacct -E/--endtime and -M/--clusters as sacct 22.05 reads them (src/sacct/options.c,
slurmdb_job_cond_def_start_end of slurm-22-05-9-1; not yet recorded on the twin)."""

import time

import pytest

from minislurm.cli import sacct
from minislurm.client import Client

NOW = time.time()


def rec(job_id, step=None, eligible=NOW - 7200):
    return {"job_id": job_id, "display_id": str(job_id), "step": step, "name": "job", "partition": "gpu",
            "account": "research", "user": "alice", "uid": 1000, "state": "COMPLETED", "cancelled_by": None,
            "exit_code": 0, "exit_signal": 0, "submit": eligible, "eligible": eligible, "start": eligible,
            "end": NOW - 60, "time_limit": 600.0, "alloc_cpus": 1, "nnodes": 1, "nodes": "c1", "restart": 0}


RECORDS = [rec(1, eligible=NOW - 7200), rec(1, "batch", eligible=NOW - 7200), rec(2, eligible=NOW - 600),
           rec(2, "batch", eligible=NOW - 600)]


class FakeClient:
    def __init__(self, *a, **k):
        pass

    def call(self, method, path, *a, **k):
        return {"/acct": {"records": RECORDS}, "/ping": {"cluster": "linux"}}[path]

    cluster_name = Client.cluster_name  # the real one, over the answers above


@pytest.fixture(autouse=True)
def fake(monkeypatch):
    monkeypatch.setattr(sacct, "Client", FakeClient)


def ids(capsys, *argv):
    assert sacct.main(["-a", "-n", "-P", "-o", "JobID", "-S", "now-1day", *argv]) == 0
    return capsys.readouterr().out.split()


def test_endtime_keeps_the_jobs_eligible_by_then(capsys):
    assert ids(capsys) == ["1", "1.batch", "2", "2.batch"]
    assert ids(capsys, "-E", "now-1hour") == ["1", "1.batch"]
    assert ids(capsys, "--endtime=now") == ["1", "1.batch", "2", "2.batch"]
    assert ids(capsys, "-E", "now-3hours") == []


def test_a_start_after_the_end_is_refused(capsys):
    assert sacct.main(["-S", "2026-01-02T00:00:00", "-E", "2026-01-01T00:00:00"]) == 1
    assert capsys.readouterr().err == ("sacct: error: Start time (2026-01-02T00:00:00) requested is after "
                                       "end time (2026-01-01T00:00:00).\n")


def test_a_bad_endtime_is_refused(capsys):
    assert sacct.main(["-E", "bogus"]) == 1
    assert capsys.readouterr().err == "Invalid time specification (pos=0): bogus\n"


def test_clusters_own_name_and_all(capsys):
    assert ids(capsys, "-M", "linux") == ["1", "1.batch", "2", "2.batch"]
    assert ids(capsys, "--clusters=all") == ["1", "1.batch", "2", "2.batch"]
    assert ids(capsys, "-M", "other,LINUX") == ["1", "1.batch", "2", "2.batch"]
    assert ids(capsys, "-M", "other") == []  # another cluster's jobs are not in this database
