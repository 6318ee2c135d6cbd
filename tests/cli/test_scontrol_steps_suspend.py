"""scontrol show step[s], suspend|resume and update NodeName=ALL (src/scontrol and
src/api/job_step_info.c of slurm-22-05-9-1; not yet recorded on the twin)."""

import pytest

from minislurm.cli import scontrol

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00 UTC
JOBS = [{"job_id": 12, "display_id": "12", "state": "RUNNING", "partition": "gpu", "restart_count": 0},
        {"job_id": 13, "display_id": "13", "state": "PENDING", "partition": "gpu", "restart_count": 0},
        {"job_id": 14, "display_id": "14", "state": "COMPLETED", "partition": "gpu", "restart_count": 0}]
STEP = {"job_id": 12, "display_id": "12", "uid": 1000, "start": T0, "state": "RUNNING", "restart": 0,
        "req_mem": 1000}
ACCT = [dict(STEP, step=None, nodes="c[1-2]", nnodes=2, alloc_cpus=4, name="job"),
        dict(STEP, step="0", name="python", nodes="c[1-2]", nnodes=2, alloc_cpus=4, ntasks=4, alloc_gpus=2),
        dict(STEP, step="batch", name="batch", nodes="c1", nnodes=1, alloc_cpus=2, ntasks=1)]
NODES = [{"name": "c1"}, {"name": "c2"}, {"name": "c3"}]


class Fake:
    posted: list = []

    def __init__(self, *a, **k):
        pass

    def call(self, method, path, body=None, query=None):
        if method == "POST":
            Fake.posted.append((path, body))
            return {}
        if path.startswith("/jobs/"):
            return next(j for j in JOBS if j["job_id"] == int(path.split("/")[2]))
        return {"/jobs": {"jobs": JOBS}, "/acct": {"records": ACCT}, "/nodes": {"nodes": NODES}}[path]


@pytest.fixture(autouse=True)
def fake(monkeypatch):
    Fake.posted = []
    monkeypatch.setattr(scontrol, "Client", Fake)


STEP0 = ("StepId=12.0 UserId=1000 StartTime=2026-01-01T00:00:00 TimeLimit=UNLIMITED\n"
         "   State=RUNNING Partition=gpu NodeList=c[1-2]\n"
         "   Nodes=2 CPUs=4 Tasks=4 Name=python Network=(null)\n"
         "   TRES=cpu=4,gres/gpu=2,mem=2000M,node=2\n"  # alphabetical, as on the twin (session step_gpus)
         "   ResvPorts=(null)\n"
         "   CPUFreqReq=Default Dist=Block\n"
         "   SrunHost:Pid=(null):0\n\n")


def test_show_steps_lists_running_steps_batch_first(capsys):
    assert scontrol.main(["show", "steps"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("StepId=12.batch UserId=1000 ") and out.endswith(STEP0)
    assert out.count("StepId=") == 2


def test_show_one_step_and_missing_ones(capsys):
    assert scontrol.main(["show", "step", "12.0"]) == 0
    assert capsys.readouterr().out == STEP0
    assert scontrol.main(["-o", "show", "step", "12.0"]) == 0
    assert capsys.readouterr().out == STEP0.rstrip("\n").replace("\n   ", " ") + "\n"
    assert scontrol.main(["show", "step", "12.7"]) == 1
    assert capsys.readouterr().out == "Job step 12.7 not found\n"
    assert scontrol.main(["show", "step", "13"]) == 1  # pending: no steps
    assert capsys.readouterr().out == "Job step 13. not found\n"
    assert scontrol.main(["show", "step", "99"]) == 1
    assert capsys.readouterr().err == "slurm_get_job_steps error: Invalid job id specified\n"


def test_no_steps_at_all(capsys, monkeypatch):
    monkeypatch.setattr(Fake, "call", lambda self, m, path, *a, **k: {"jobs": []})
    assert scontrol.main(["show", "steps"]) == 0
    assert capsys.readouterr().out == "No job steps in the system\n"


def test_suspend_and_resume_are_refused_as_slurm_words_it(capsys):
    assert scontrol.main(["suspend", "12"]) == 1
    assert capsys.readouterr().err == "Requested operation is presently disabled for job 12\n"
    assert scontrol.main(["resume", "13"]) == 1
    assert capsys.readouterr().err == "Job is pending execution for job 13\n"
    assert scontrol.main(["suspend", "JobId=14"]) == 1
    assert capsys.readouterr().err == "Job/step already completing or completed for job 14\n"
    assert scontrol.main(["suspend"]) == 1
    assert capsys.readouterr().err == "too few arguments for keyword:suspend\n"
    assert Fake.posted == []


def test_update_nodename_all_names_every_node():
    assert scontrol.main(["update", "NodeName=ALL", "State=RESUME"]) == 0
    assert Fake.posted == [("/nodes/update", {"names": ["c1", "c2", "c3"], "state": "RESUME", "reason": None})]
