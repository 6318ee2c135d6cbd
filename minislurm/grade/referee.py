"""The referee: a fresh Python process that runs a lab's check cells against a submission's answers.

    python -m minislurm.grade.referee        (spoken to by :mod:`.runner` over stdin/stdout)

Why a separate process and not the student's kernel: a check run in the kernel computes its
references with whatever the submission left there -- a rebound ``rank``, a monkeypatched
``minislurm.lab.scenario.run_scenario``, a patched ``builtins.sorted`` -- and a gamed answer then
passes.  Checking module objects for tampering inside the kernel is a race against code that can
reach every object of the process.  Here the kernel is only asked for data: each answer crosses
over as a plain value (:mod:`.wire`), and a function answer becomes a :class:`Proxy` whose calls
run in the kernel with plain arguments and return plain values.  Each check cell imports its
references here, in a process the submission never ran in (the grading-convention note:
checks read only their exercise's answer names and import the rest under private names).

Protocol, one JSON object per line.  In: ``{"question", "checks": [{"source", "hidden"}],
"answers": {name: {"value": ...} | {"missing": true}}}``; during a check the referee may ask
``{"call": name, "args": ...}`` and reads back ``{"value": ...}`` or ``{"raised": "..."}``; at
the end it says ``{"done": question, "passed": bool, "message": "..."}``.
"""

from __future__ import annotations

import builtins
import json
import os
import sys
import traceback

from minislurm.grade.wire import decode, encode_call


class StudentFunctionFailed(Exception):
    """The student's function raised, ran too long or could not be called."""


class Channel:
    def __init__(self, inp, out):
        self.inp, self.out = inp, out

    def send(self, msg: dict) -> None:
        self.out.write(json.dumps(msg) + "\n")
        self.out.flush()

    def receive(self) -> dict | None:
        line = self.inp.readline()
        return json.loads(line) if line else None


class Proxy:
    """Stands for a function of the submission: each call runs in the student's kernel."""

    def __init__(self, channel: Channel, name: str):
        self._channel, self._name = channel, name

    def __call__(self, *args, **kwargs):
        self._channel.send({"call": self._name, "args": encode_call(args, kwargs)})
        reply = self._channel.receive() or {"raised": "the grader stopped"}
        if "value" in reply:
            return decode(reply["value"])
        raise StudentFunctionFailed(f"{self._name}(...) {reply.get('raised', 'failed')}")

    def __repr__(self):
        return f"<function {self._name} of the submission>"


def namespace(channel: Channel, answers: dict) -> dict:
    ns = {"__name__": "__check__", "__builtins__": builtins}
    for name, desc in answers.items():
        if desc.get("missing"):
            continue
        value = desc.get("value")
        ns[name] = Proxy(channel, name) if value == {"__function__": True} else decode(value)
    return ns


def why(e: BaseException, hidden: bool) -> str:
    """What is wrong, in the check's own words (its assertion message says it without the answer)."""
    if isinstance(e, AssertionError):
        text = str(e) or "a check failed"
    elif isinstance(e, NameError):
        text = f"{e} (the answer cell did not define it: deleted, renamed or failed)"
    elif isinstance(e, StudentFunctionFailed):
        text = str(e)
    else:
        text = f"the answer made the check fail with {type(e).__name__}: {str(e)[:200]}"
    return ("hidden check: " if hidden else "") + text


def judge(channel: Channel, request: dict) -> dict:
    ns = namespace(channel, request.get("answers", {}))
    for check in request["checks"]:
        try:
            exec(compile(check["source"], f"<check of {request['question']}>", "exec"), ns)  # noqa: S102
        except Exception as e:  # noqa: BLE001 - any failure of a check fails its question
            traceback.print_exc()
            return {"done": request["question"], "passed": False, "message": why(e, check.get("hidden", False))}
    return {"done": request["question"], "passed": True, "message": ""}


def not_dumpable() -> None:
    """Keep other processes of the same user (the student's kernel) out of /proc/<our pid>/{fd,mem}."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except (OSError, AttributeError):
        pass


def main() -> int:
    not_dumpable()
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # what checks and their clusters print goes to stderr, not into the protocol
    channel = Channel(sys.stdin, out)
    while (request := channel.receive()) is not None:
        channel.send(judge(channel, request))
    return 0


if __name__ == "__main__":
    sys.exit(main())
