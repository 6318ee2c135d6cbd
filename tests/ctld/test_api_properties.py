"""Properties of the validation edge, generated from the published OpenAPI document itself.

* Whatever JSON (or non-JSON) arrives on any route, checking it raises only RequestError (a 4xx).
* A submission the schema accepts goes through the controller without any exception but
  Slurm's own (SlurmError): queued, scheduled (main and backfill passes), started, listed the
  way squeue, scontrol and sacct see it, launched (the agent's payload), ended, and saved and
  read back.  So a typed request cannot break the queue for everyone.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import re

import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minislurm.cluster.confgen import lab_config
from minislurm.common.auth import Signer
from minislurm.core.errors import SlurmError
from minislurm.core.options import OptionError, parse_options
from minislurm.core.spec import spec_to_dict
from minislurm.ctld import accounting, admission, validate
from minislurm.ctld.api import PREFIX, make_app
from minislurm.ctld.controller import Controller
from minislurm.ctld.jobs import job_from_dict, job_to_dict
from minislurm.ctld.launch import batch_payload
from minislurm.ctld.openapi import build
from minislurm.ctld.present import full_job, node_views
from minislurm.ctld.schema import ROUTES

DOC = build(make_app(None), PREFIX)
SCHEMA = schemathesis.openapi.from_dict(json.loads(json.dumps(DOC)))
SUBMIT = SCHEMA[PREFIX + "/jobs"]["POST"]
SETTINGS = settings(deadline=None, database=None, suppress_health_check=list(HealthCheck))

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner,
                                                                                 max_size=4), max_leaves=30)


@SETTINGS
@given(route=st.sampled_from(sorted(ROUTES)), data=JSON | st.binary(max_size=200))
def test_any_body_on_any_route_is_checked_or_refused_never_an_error(route, data):
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    try:
        validate.body(route, validate.parse_json(raw) if raw.strip() else None)
    except validate.RequestError as exc:
        assert exc.status == 400 and str(exc)


@settings(SETTINGS, max_examples=30)  # schemathesis' negative cases are slow to make (~0.5 s each)
@given(case=SUBMIT.as_strategy(generation_mode=schemathesis.GenerationMode.NEGATIVE))
def test_invalid_submissions_are_refused(case):
    try:
        validate.body(("POST", "/jobs"), _body(case))
    except validate.RequestError as exc:
        assert str(exc)


_OPTION = st.sampled_from([
    "-N", "2", "-N", "1-2", "-N", "5m", "-n", "8", "-c", "4", "--ntasks-per-node=2", "-t", "10", "-t", "1-0",
    "-t", "UNLIMITED", "--time-min=5", "--gres=gpu:2", "--gres=gpu:a100:1,foo:3", "--gpus=3", "--gpus-per-node=a100:2",
    "--gpus-per-task=1", "--mem=4G", "--mem-per-cpu=0", "--array=0-15:4%2", "--array=1,3,5-7", "-d", "afterok:1:2",
    "-d", "singleton", "--begin=now+60", "--begin=2030-01-01", "--signal=B:USR1@90", "--signal=9",
    "-w", "gpu[01-02]", "-x", "gpu01", "--exclusive", "--exclusive=user", "--oversubscribe", "-J", "INFINITE",
    "-J", "train", "--nice=-5", "--nice", "--open-mode=append", "-o", "%x-%j.out", "-e", "none", "-i", "in.txt",
    "--requeue", "--no-requeue", "-H", "--wait", "--parsable", "--comment=hi", "--export=NONE,A=1", "-p", "gpu",
    "-A", "ml", "--reservation=r1", "--wrap", "true", "-D", "/tmp", "--constraint=a100", "--mail-type=END", "-v"])
_SHAPE = r"expected (an? (integer|number|string|list|object)|true or false)|Unknown field|Missing field|items"
_VALUE = st.one_of(st.integers(0, 10**12).map(str), st.text(max_size=8))


@SETTINGS
@given(words=st.lists(st.one_of(_OPTION, _VALUE), max_size=14))
def test_what_sbatch_and_srun_send_the_schema_accepts_or_refuses_with_slurms_text(words):
    """No option sbatch or srun accepts turns into a request of the wrong shape: the schema takes
    it, or refuses a value (beyond Slurm's limits, or a control character in a name), never a type."""
    for prog in ("sbatch", "srun"):
        try:
            spec = parse_options(words, prog=prog, now=1.75e9)[0]
        except OptionError:
            continue
        try:
            validate.body(("POST", "/jobs"), {"spec": spec_to_dict(spec)})
        except validate.RequestError as exc:
            assert not re.search(_SHAPE, str(exc)), (words, str(exc))


def _body(case):
    return None if type(case.body).__name__ == "NotSet" else case.body


def _usable(body: dict, rng: random.Random) -> dict:
    """Most generated names match nothing in the cluster (refused with Slurm's text, fine);
    clear some so that jobs get queued, scheduled and run too."""
    spec = body.get("spec")
    if isinstance(spec, dict) and rng.random() < 0.7:
        for key in ("partition", "account", "reservation", "dependency", "nodelist", "exclude", "gres"):
            spec.pop(key, None)
        if rng.random() < 0.5:
            spec.pop("array", None)
    return body


def test_valid_submissions_never_break_the_controller(tmp_path, caplog):
    caplog.set_level(logging.ERROR)
    loop = asyncio.new_event_loop()
    config = lab_config(2, 4, 8, 64_000)
    config.slurmd_timeout = 10**6  # no agents answer here: on a loaded machine the run outlasts 5 s
    ctl = Controller(config, tmp_path / "state", Signer(b"k" * 32), operators={"root"})
    loop.run_until_complete(ctl.start())
    tally = {"refused": 0, "accepted": 0, "ran": 0}
    rng = random.Random(9)

    async def one(body) -> None:
        for agent in ctl.agents.values():  # the nodes answer, however long drawing a case took
            agent.last_response = ctl.clock()
        for n in range(len(ctl.state.nodes)):  # and take work (launches go nowhere: no agents),
            ctl.state.nodes.set_responding(n, True)  # whenever the first ping round came
        try:
            body = validate.body(("POST", "/jobs"), body)
        except validate.RequestError:
            tally["refused"] += 1  # a few generated values are stricter here (2.0 is no count)
            return
        try:
            await admission.submit(ctl, rng.choice(["root", "alice"]), body)
            tally["accepted"] += 1
        except SlurmError:
            tally["refused"] += 1
        ctl.run_pass(backfill=False)
        ctl.run_pass(backfill=True)
        for job in list(ctl.state.jobs.values()):
            full_job(ctl, job)
            job_from_dict(job_to_dict(job, ctl.live[job.job_id], ctl.state.nodes.names), ctl.state.nodes.index)
        for job in list(ctl.state.running.values()):
            batch_payload(ctl, job)
            tally["ran"] += 1
            await ctl.running.job_ended(job.job_id, job.restart_count, exit_code=rng.choice([0, 1]), signal=0)
        node_views(ctl)
        accounting.query(ctl)
        await asyncio.sleep(0)

    @settings(SETTINGS, max_examples=150)
    @given(case=SUBMIT.as_strategy())
    def submit(case):
        loop.run_until_complete(one(_usable(_body(case), rng)))

    try:
        submit()
        loop.run_until_complete(asyncio.sleep(1.2))  # a timed backfill pass over what is left
        failures = [r for r in caplog.records if r.levelno >= logging.ERROR]  # a pass or a task that raised
        assert not failures, caplog.text[-5000:]
    finally:
        loop.run_until_complete(ctl.stop())
        loop.close()
    assert tally["accepted"] >= 20 and tally["ran"] >= 10, tally
