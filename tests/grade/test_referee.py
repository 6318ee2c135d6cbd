"""Answers as data (wire) and the referee's verdicts, without a kernel (well under a second)."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass

import pytest

from minislurm.grade import referee
from minislurm.grade.wire import Opaque, decode, encode
from minislurm.lab.queue import Weights
from minislurm.lab.scenario import LabJob


def cross(value):
    """What the referee sees of a value of the kernel."""
    return decode(json.loads(json.dumps(encode(value))))


@pytest.mark.parametrize("value", [
    0, -7, 2**70, 1.5, True, None, "gpu[01-02]", [1, [2, "x"]], (1, 2), {("research", "alice"): 0.5, "k": [1]},
    {3, 4}, Weights(age=0, fairshare=1000, jobsize=10000), [LabJob("A", 0, 1, 4, 3600)], float("inf"),
])
def test_plain_values_and_minislurm_dataclasses_cross_unchanged(value):
    got = cross(value)
    assert got == value and type(got) is type(value)


class Cheat(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


@dataclass
class NotOurs:
    x: int = 1


class Anything:
    def __eq__(self, other):
        return True


@pytest.mark.parametrize("value", [Cheat(5), NotOurs(), Anything(), object(), b"bytes", range(3)])
def test_other_objects_arrive_as_something_that_equals_nothing(value):
    got = cross(value)
    assert isinstance(got, Opaque)
    assert got != got and not (got == 5) and got not in [5, "5", None]  # (the cheating object never exists here)


def test_decode_builds_nothing_but_minislurm_dataclasses():
    for name in ("os:system", "builtins:dict", "minislurm.lab.queue:rank", "minislurm.lab.queue:Weights.__init__"):
        assert isinstance(decode({"__dataclass__": name, "fields": {}}), Opaque)
    assert isinstance(decode({"__tuple__": [], "__set__": [], "x": 1}), Opaque)
    assert isinstance(decode({"__float__": "1e999999"}), Opaque)


def test_a_function_answer_is_a_mark_and_the_referee_calls_back_for_it():
    assert encode(len) == {"__function__": True}
    replies = io.StringIO(json.dumps({"value": encode(["gpu01", "gpu02"])}) + "\n")
    asked = io.StringIO()
    channel = referee.Channel(replies, asked)
    verdict = referee.judge(channel, {
        "question": "exercise-9",
        "answers": {"expand_it": {"value": {"__function__": True}}},
        "checks": [{"source": "from minislurm.core.hostlist import expand as _expand\n"
                              "assert expand_it('gpu[01-02]') == _expand('gpu[01-02]'), 'no'", "hidden": False}],
    })
    assert verdict == {"done": "exercise-9", "passed": True, "message": ""}
    call = json.loads(asked.getvalue().splitlines()[0])
    assert call["call"] == "expand_it" and decode(json.loads(call["args"])) == (["gpu[01-02]"], {})


@pytest.mark.parametrize("answers, source, message", [
    ({"a": {"value": 3}}, "assert a == 4, 'a is not what minislurm gives'", "a is not what minislurm gives"),
    ({"a": {"missing": True}}, "assert a == 4",
     "name 'a' is not defined (the answer cell did not define it: deleted, renamed or failed)"),
    ({"a": {"value": {"__opaque__": "a Anything"}}}, "assert a == 4", "a check failed"),
    ({"a": {"value": "x"}}, "assert int(a) > 0, 'no'", "the answer made the check fail with ValueError: "
                                                       "invalid literal for int() with base 10: 'x'"),
])
def test_a_failing_check_says_what_is_wrong(answers, source, message):
    channel = referee.Channel(io.StringIO(), io.StringIO())
    verdict = referee.judge(channel, {"question": "q", "answers": answers,
                                      "checks": [{"source": "pass", "hidden": False},
                                                 {"source": source, "hidden": True}]})
    assert verdict == {"done": "q", "passed": False, "message": "hidden check: " + message}


def test_a_student_function_that_raises_fails_its_check_with_its_error():
    channel = referee.Channel(io.StringIO(json.dumps({"raised": "ZeroDivisionError: division by zero"}) + "\n"),
                              io.StringIO())
    verdict = referee.judge(channel, {"question": "q", "answers": {"f": {"value": {"__function__": True}}},
                                      "checks": [{"source": "assert f(1) == 1", "hidden": False}]})
    assert verdict["message"] == "f(...) ZeroDivisionError: division by zero"


class NoKernel:
    """Stands for the student's kernel where the checks read only plain answers."""

    call_timeout = None

    def __init__(self, answers: dict):
        self.answers = answers

    def answer(self, name: str) -> dict:
        return {"value": encode(self.answers[name])}


def test_checks_past_their_time_leave_the_question_not_graded_and_a_wrong_answer_scores_nothing():
    import sys

    from minislurm.grade.runner import Referee

    judge = Referee(sys.stderr)
    slow = {"points": 2, "answers": ["a"], "checks": [{"source": "import time\ntime.sleep(30)\nassert a == 4",
                                                       "hidden": True, "timeout": 0.5}]}
    quick = {"points": 2, "answers": ["a"], "checks": [{"source": "assert a == 4, 'not 4'", "hidden": False}]}
    try:
        assert judge.grade(NoKernel({"a": 4}), "q", slow) == (False, "", (0.5, "its checks ran past their time"))
        assert judge.grade(NoKernel({"a": 3}), "q", quick) == (False, "not 4", None)  # the referee restarted
        assert judge.grade(NoKernel({"a": 4}), "q", quick) == (True, "", None)
    finally:
        judge.stop()


def cells(*spec):
    """Notebook cells from (kind, source): kind "answer" is an answer cell, "lab" a lab cell."""
    return [{"cell_type": "code", "source": src,
             "metadata": {"tags": ["otter_answer_cell"]} if kind == "answer" else {}} for kind, src in spec]


def test_a_question_depends_on_its_answer_cells_and_the_lab_cells_before_its_check():
    from minislurm.grade.runner import timeouts_by_question

    nb = cells(("lab", "setup"), ("answer", "a = 1"), ("lab", 'grader.check("exercise-1")'),
               ("lab", "demo"), ("answer", "b = 2"), ("lab", 'grader.check("exercise-2")'),
               ("answer", "c = 3"), ("lab", 'grader.check("exercise-3")'))
    qs = ["exercise-1", "exercise-2", "exercise-3", "exercise-4"]  # exercise-4's check call was deleted
    assert timeouts_by_question(nb, {}, qs) == {}
    own = timeouts_by_question(nb, {1: 3.0}, qs)
    assert own == {"exercise-1": (3.0, "the answer cell ran past the cell time limit"),
                   "exercise-4": (3.0, "a cell of the notebook ran past its limit")}  # not exercise-2's or 3's
    lab = timeouts_by_question(nb, {3: 30.0}, qs)
    assert sorted(lab) == ["exercise-2", "exercise-3", "exercise-4"]
    assert lab["exercise-2"] == (30.0, "cell 3 of the notebook ran past its limit")
