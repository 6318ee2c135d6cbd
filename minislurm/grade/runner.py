"""Grade ONE submission: run the notebook in a kernel, then its checks in the referee.

    python -m minislurm.grade.runner  < request      (started by :mod:`.sandbox`)

The request is one JSON line on stdin: ``{"nonce", "cell_timeout", "notebook": <the submission's
text>, "checks": <the lab's minislurm-checks.json>}``; the answer is one line on stdout,
``RESULT <nonce> {"questions": {"exercise-1": {"score", "possible", "failed": [...], "timed_out"}, ...},
"notes": {...}, "error": null}``.  Everything arrives on stdin and is read before the student's
code starts, so the submission never finds the hidden checks on disk, and it cannot forge the
result: it does not know the nonce (this process is made non-dumpable, so the kernel, running
as the same user, cannot read its memory or file descriptors).

Steps: the submission's cells run in a fresh Jupyter kernel, each under a time limit (a looping
cell is interrupted and only its question suffers; otter's own cells are skipped); then for each
question the kernel is asked for the answer names as data (:mod:`.wire`) and the check cells run
in the referee (:mod:`.referee`), a separate process, calling back into the kernel only to call
a function answer.  A question scores its points when all its checks pass, else 0 -- unless
something it depends on ran past its time limit (its answer cell, a cell of the lab before its
check, a call of the answer's function, its checks): then it is not graded (``score`` null,
``timed_out`` the limit in seconds), since on a slow machine a right answer can run past a limit
too.  ``grade run`` reports it as such and can rerun it with a larger limit.
"""

from __future__ import annotations

import json
import os
import re
import selectors
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

from minislurm.grade.quick import ipython_dir, skip_slow_imports
from minislurm.grade.referee import not_dumpable
from minislurm.grade.report import not_graded
from minislurm.grade.wire import MIME

CHECK_CALL = re.compile(r"""grader\.check\(\s*["']([^"']+)["']\s*\)""")
ANSWER_TAG = "otter_answer_cell"
# Cells otter adds (its imports, grader.check calls): the grader's, not the student's; skipped.
GRADER_CELL = re.compile(r"\s*(# Initialize Otter|import otter\b|from otter import Notebook as |grader\.check\(|"
                         r"from otter\.execute import Checker)")


OTHER_CELLS = 10  # the lab's own cells (set-up, demos on a live cluster) get this many times the cell limit


def cell_limit(seconds: float):
    """nbclient's ``timeout_func``: ``seconds`` for answer cells and the grader's calls into the
    kernel, ten times that for the lab's other cells (a demo that runs a cluster is not a loop)."""
    def limit(cell) -> int:
        meta = cell.get("metadata", {})
        short = meta.get("minislurm_grader") or ANSWER_TAG in meta.get("tags", [])
        return max(1, int(round(seconds if short else seconds * OTHER_CELLS)))
    return limit


class Kernel:
    """The submission's kernel: runs its cells, then answers the referee's questions."""

    def __init__(self, nb, workdir: Path, cell_timeout: float):
        from minislurm.grade.kernelwait import notebook_client

        self.nb, self.cell_timeout = nb, cell_timeout
        self.client = notebook_client(nb, timeout_func=cell_limit(cell_timeout), interrupt_on_timeout=True,
                                      allow_errors=True, kernel_name="python3", record_timing=False,
                                      resources={"metadata": {"path": str(workdir)}})
        self.dead: str | None = None
        self.cell_timeouts: dict[int, float] = {}  # notebook cell index -> the limit it ran past
        self.call_timeout: float | None = None  # the limit the last grader call into the kernel ran past

    def run(self, source: str):
        """Execute ``source`` as a cell; its outputs, or None once the kernel is gone."""
        import nbformat

        if self.dead:
            return None
        cell = nbformat.v4.new_code_cell(source)
        cell.metadata["minislurm_grader"] = True  # under the cell limit, like an answer cell
        self.nb.cells.append(cell)  # nbclient stores the executed cell back at its index
        self.client.timed_out = None
        try:
            self.client.execute_cell(cell, len(self.nb.cells) - 1)
        except Exception as e:  # noqa: BLE001 - DeadKernelError and the like: the submission killed it
            self.dead = f"the kernel stopped ({type(e).__name__})"
            return None
        finally:
            self.nb.cells.pop()
            if self.client.timed_out is not None:
                self.call_timeout = float(self.client.timed_out)
        return cell.outputs

    def run_notebook(self) -> None:
        for index, cell in enumerate(self.nb.cells):
            if cell.cell_type != "code" or GRADER_CELL.match(cell.source):
                cell.outputs = [] if cell.cell_type == "code" else None
                continue
            self.client.timed_out = None
            try:
                self.client.execute_cell(cell, index)
            except Exception as e:  # noqa: BLE001
                self.dead = f"the kernel stopped at cell {index} ({type(e).__name__})"
                cell.outputs = [{"output_type": "error", "ename": type(e).__name__, "evalue": str(e)[:200]}]
                return
            if self.client.timed_out is not None:
                self.cell_timeouts[index] = float(self.client.timed_out)
            # keep errors only: the notes need them, and a flood of output must not pile up here
            cell.outputs = [o for o in cell.outputs if o.get("output_type") == "error"]

    def published(self, source: str) -> dict | None:
        """The last :mod:`.wire` payload that running ``source`` published."""
        found = None
        for out in self.run(source) or []:
            data = out.get("data", {}) if isinstance(out, dict) else {}
            if MIME in data:
                found = data[MIME]
        try:
            return json.loads(found) if isinstance(found, str) else None
        except ValueError:
            return None

    def answer(self, name: str) -> dict:
        got = self.published(f"import minislurm.grade.wire as _ms_wire\n_ms_wire.probe(globals(), {name!r})")
        if got is None or ("value" not in got and not got.get("missing")):
            return {"missing": True}
        return got

    def call(self, name: str, args_json: str) -> dict:
        got = self.published("import minislurm.grade.wire as _ms_wire\n"
                             f"_ms_wire.call(globals(), {name!r}, {args_json!r})")
        if got is None:
            return {"raised": self.dead or f"ran past the {self.cell_timeout:g} s limit or printed no result"}
        return got if ("value" in got or "raised" in got) else {"raised": "returned nothing readable"}


class Referee:
    """The referee process (:mod:`.referee`), restarted when a check overruns its time."""

    def __init__(self, log):
        self.log, self.proc = log, None

    def start(self):
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen([sys.executable, "-m", "minislurm.grade.referee"], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=self.log, text=True)
        return self.proc

    def stop(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def grade(self, kernel: Kernel, question: str, spec: dict) -> tuple[bool, str, tuple[float, str] | None]:
        """(passed, what failed, and (limit, what) when something ran past its time limit)."""
        budget = sum(c.get("timeout", 30) for c in spec["checks"])
        kernel.call_timeout = None
        answers = {name: kernel.answer(name) for name in spec["answers"]}
        proc = self.start()
        request = {"question": question, "checks": spec["checks"], "answers": answers}
        proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.flush()
        deadline = time.monotonic() + budget
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            while True:
                if not sel.select(timeout=max(0.0, deadline - time.monotonic())):
                    self.stop()
                    return False, "", (budget, "its checks ran past their time")
                line = proc.stdout.readline()
                if not line:
                    self.stop()
                    return False, "the checks stopped without a verdict", None
                msg = json.loads(line)
                if "done" in msg:
                    slow = kernel.call_timeout  # reading an answer or calling it ran past the limit
                    return (bool(msg["passed"]), msg.get("message", ""),
                            (slow, "reading or calling the answer in the kernel ran past the cell time limit")
                            if slow is not None else None)
                t0 = time.monotonic()
                reply = kernel.call(msg["call"], msg["args"])
                deadline += time.monotonic() - t0  # time in the student's function is the kernel's limit
                proc.stdin.write(json.dumps(reply) + "\n")
                proc.stdin.flush()


def notes_from(cells, cell_timeout: float) -> dict[str, str]:
    """Why answer cells failed, per question: the error of the answer cells before each check call."""
    notes: dict[str, str] = {}
    pending: list[str] = []
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        m = CHECK_CALL.search(cell.get("source", ""))
        if m:
            if pending:
                notes[m.group(1)] = "; ".join(pending)
            pending = []
            continue
        if ANSWER_TAG not in cell.get("metadata", {}).get("tags", []):
            continue
        for out in cell.get("outputs") or []:
            if out.get("output_type") != "error":
                continue
            if out.get("ename") == "KeyboardInterrupt":
                pending.append(f"the answer cell ran past the {cell_timeout:g} s cell time limit")
            else:
                pending.append(f"the answer cell raised {out.get('ename')}: {str(out.get('evalue', ''))[:200]}")
    return notes


def timeouts_by_question(cells, timed_out: dict[int, float], questions) -> dict[str, tuple[float, str]]:
    """Question -> (limit, what ran past it) when a cell its grade depends on ran past its time
    limit: one of its answer cells, or a cell of the lab (not another question's answer) before
    its check call.  A question whose check call the submission lost depends on every cell."""
    found: dict[str, tuple[float, str]] = {}
    shared = own = None  # the worst lab cell so far; this question's answer cells since the last check call
    for index, cell in enumerate(cells):
        if cell.get("cell_type") != "code":
            continue
        m = CHECK_CALL.search(cell.get("source", ""))
        if m:
            worst = max((t for t in (own, shared) if t), default=None)
            if worst:
                found[m.group(1)] = worst
            own = None
        elif index in timed_out:
            if ANSWER_TAG in cell.get("metadata", {}).get("tags", []):
                own = max(own or (0.0, ""), (timed_out[index], "the answer cell ran past the cell time limit"))
            else:
                shared = max(shared or (0.0, ""), (timed_out[index], f"cell {index} of the notebook ran past its limit"))
    checked = {m.group(1) for c in cells if c.get("cell_type") == "code"
               and (m := CHECK_CALL.search(c.get("source", "")))}
    if timed_out:
        anywhere = (max(timed_out.values()), "a cell of the notebook ran past its limit")
        found.update({q: anywhere for q in questions if q not in checked})
    return found


def grade(text: str, checks: dict, cell_timeout: float, log) -> dict:
    import nbformat

    questions = checks["questions"]
    try:
        nb = nbformat.reads(text, as_version=4)
    except Exception as e:  # noqa: BLE001
        return {"error": f"not a readable notebook ({type(e).__name__}: {str(e)[:120]})"}
    lab = (nb.metadata.get("otter") or {}).get("assignment_name") if isinstance(nb.metadata, dict) else None
    if lab and lab != checks["lab"]:
        return {"error": f"a submission for {lab}, not {checks['lab']}: nothing graded"}
    work = Path(tempfile.mkdtemp(prefix="minislurm-grade-nb-"))
    kernel, referee = Kernel(nb, work, cell_timeout), Referee(log)
    result = {}
    try:
        with kernel.client.setup_kernel(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=str(work)):
            kernel.run_notebook()
            slow = timeouts_by_question(nb.cells, kernel.cell_timeouts, questions)
            for q, spec in questions.items():
                passed, message, ran_past = referee.grade(kernel, q, spec)
                ran_past = ran_past or slow.get(q)
                if passed:
                    result[q] = {"score": spec["points"], "possible": spec["points"], "failed": [], "timed_out": None}
                elif ran_past:  # a slow machine, not a wrong answer, may be why: not graded
                    result[q] = {"score": None, "possible": spec["points"], "failed": [not_graded(*ran_past)],
                                 "timed_out": ran_past[0]}
                else:
                    result[q] = {"score": 0, "possible": spec["points"], "failed": [message], "timed_out": None}
    finally:
        referee.stop()
        shutil.rmtree(work, ignore_errors=True)
    notes = notes_from(nb.cells, cell_timeout)
    if kernel.dead:
        notes["kernel"] = kernel.dead
    return {"questions": result, "notes": notes, "error": None}


def main() -> int:
    not_dumpable()
    request = json.loads(sys.stdin.readline())
    sys.stdin.close()
    skip_slow_imports()
    ipython = Path(tempfile.mkdtemp(prefix="ipython-"))
    os.environ["IPYTHONDIR"] = str(ipython_dir(ipython))  # for the kernel
    try:
        out = grade(request["notebook"], request["checks"], float(request["cell_timeout"]), sys.stderr)
    except Exception as e:  # noqa: BLE001 - any failure is this submission's, reported, not raised
        traceback.print_exc()
        msg = str(e).strip().splitlines()
        out = {"error": f"{type(e).__name__}: {msg[-1] if msg else ''}"[:500]}
    finally:
        shutil.rmtree(ipython, ignore_errors=True)
    sys.stdout.write(f"RESULT {request['nonce']} {json.dumps(out)}\n")
    sys.stdout.flush()
    return 0 if out.get("error") is None else 1


if __name__ == "__main__":
    sys.exit(main())
