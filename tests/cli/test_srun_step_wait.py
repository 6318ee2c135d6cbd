"""srun asks again for a step its job's running steps keep waiting, saying so as 22.05's srun
does (twin session step_gpus); ``--immediate`` bounds how long."""

from __future__ import annotations

import time

import pytest

from minislurm.cli.srun import STEP_WAIT, create_step
from minislurm.client import ClientError

BUSY = "Unable to create step for job 7: Requested nodes are busy"


class Controller:
    """Refuses the step ``busy`` times, then gives it; keeps what each request asked."""

    def __init__(self, busy: int):
        self.busy, self.asked = busy, []

    def call(self, method, path, body=None, query=None, timeout=None):
        self.asked.append((path, body["wait"], timeout))
        if self.busy:
            self.busy -= 1
            raise ClientError(BUSY, 400)
        return {"step_id": 3}


def test_a_waiting_step_says_so_once_then_still_then_created(capsys):
    ctl = Controller(busy=2)
    assert create_step(ctl, 7, {"ntasks": 1}, None) == {"step_id": 3}
    assert capsys.readouterr().err == (
        "srun: Job 7 step creation temporarily disabled, retrying (Requested nodes are busy)\n"
        "srun: Job 7 step creation still disabled, retrying (Requested nodes are busy)\n"
        "srun: Step created for job 7\n")
    assert ctl.asked == [("/jobs/7/steps", STEP_WAIT, STEP_WAIT + 60)] * 3


def test_a_step_given_at_once_says_nothing_and_other_refusals_are_final(capsys):
    assert create_step(Controller(busy=0), 7, {}, None) == {"step_id": 3}

    class Refusing(Controller):
        def call(self, *a, **k):
            raise ClientError("Unable to create step for job 7: More processors requested than permitted", 400)

    with pytest.raises(ClientError, match="More processors"):
        create_step(Refusing(busy=0), 7, {}, None)
    assert capsys.readouterr().err == ""


def test_immediate_stops_asking_when_its_seconds_are_up(capsys):
    class Waiting(Controller):  # each refusal after the request's wait, as the controller's
        def call(self, method, path, body=None, query=None, timeout=None):
            time.sleep(body["wait"])
            return super().call(method, path, body, query, timeout)

    ctl = Waiting(busy=10**6)
    with pytest.raises(ClientError, match="Requested nodes are busy"):
        create_step(ctl, 7, {}, 0.2)
    assert len(ctl.asked) == 1 and 0 < ctl.asked[0][1] <= 0.2  # never longer than --immediate's seconds
    assert capsys.readouterr().err == ""
