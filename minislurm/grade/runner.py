"""Grade ONE submission: run the notebook in a kernel, then its checks in the referee.

    python -m minislurm.grade.runner  < request      (started by :mod:`.sandbox`)

The request is one JSON line on stdin: ``{"nonce", "cell_timeout", "notebook": <the submission's
text>, "checks": <the lab's minislurm-checks.json>}``; the answer is one line on stdout,
``RESULT <nonce> {"questions": {"exercise-1": {"score", "possible", "failed": [...]}, ...},
"notes": {...}, "error": null}``.  Everything arrives on stdin and is read before the student's
code starts, so the submission never finds the hidden checks on disk, and it cannot forge the
result: it does not know the nonce (this process is made non-dumpable, so the kernel, running
as the same user, cannot read its memory or file descriptors).

Steps: the submission's cells run in a fresh Jupyter kernel, each under a time limit (a looping
cell is interrupted and only its question suffers; otter's own cells are skipped); then for each
question the kernel is asked for the answer names as data (:mod:`.wire`) and the check cells run
in the referee (:mod:`.referee`), a separate process, calling back into the kernel only to call
a function answer.  A question scores its points when all its checks pass, else 0.
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

    def run(self, source: str):
        """Execute ``source`` as a cell; its outputs, or None once the kernel is gone."""
        import nbformat

        if self.dead:
            return None
        cell = nbformat.v4.new_code_cell(source)
        cell.metadata["minislurm_grader"] = True  # under the cell limit, like an answer cell
        self.nb.cells.append(cell)  # nbclient stores the executed cell back at its index
        try:
            self.client.execute_cell(cell, len(self.nb.cells) - 1)
        except Exception as e:  # noqa: BLE001 - DeadKernelError and the like: the submission killed it
            self.dead = f"the kernel stopped ({type(e).__name__})"
            return None
        finally:
            self.nb.cells.pop()
        return cell.outputs

    def run_notebook(self) -> None:
        for index, cell in enumerate(self.nb.cells):
            if cell.cell_type != "code" or GRADER_CELL.match(cell.source):
                cell.outputs = [] if cell.cell_type == "code" else None
                continue
            try:
                self.client.execute_cell(cell, index)
            except Exception as e:  # noqa: BLE001
                self.dead = f"the kernel stopped at cell {index} ({type(e).__name__})"
                cell.outputs = [{"output_type": "error", "ename": type(e).__name__, "evalue": str(e)[:200]}]
                return
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

    def grade(self, kernel: Kernel, question: str, spec: dict) -> tuple[bool, str]:
        budget = sum(c.get("timeout", 30) for c in spec["checks"])
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
                    return False, f"the checks ran past their {budget:g} s (the answer makes them slow)"
                line = proc.stdout.readline()
                if not line:
                    self.stop()
                    return False, "the checks stopped without a verdict"
                msg = json.loads(line)
                if "done" in msg:
                    return bool(msg["passed"]), msg.get("message", "")
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
            for q, spec in questions.items():
                passed, message = referee.grade(kernel, q, spec)
                result[q] = {"score": spec["points"] if passed else 0, "possible": spec["points"],
                             "failed": [] if passed else [message]}
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
