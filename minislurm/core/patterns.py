"""sbatch's ``--output``/``--error``/``--input`` filename patterns (``%j``, ``%A_%a``, ``%4t`` ...).

The rules follow what slurmstepd does for a batch job, quirks included, so a learner sees the
same file names as on a real cluster:

* a backslash anywhere turns replacement off for the whole name; single backslashes are
  dropped and ``\\\\`` leaves one backslash;
* ``%%`` is a literal ``%``;
* a number after ``%`` zero-pads the value (at most 10 digits): ``%4j`` -> ``0128``;
* an unknown letter is left alone (``%q`` stays ``%q``), but a width in front of it is lost
  along with its ``%`` (``%4q`` -> ``4q``), and a width at the very end keeps only its last
  digit (``job%12`` -> ``job2``).
"""

from __future__ import annotations

NO_VAL = 0xFFFFFFFE  # 4294967294: what %a prints for a job that is not an array task
BATCH_STEP = 0xFFFFFFFB  # 4294967291: the batch step's id, printed by %s when there is no step
MAX_WIDTH = 10


def default_output(array: bool) -> str:
    """The name sbatch uses when no ``-o`` is given."""
    return "slurm-%A_%a.out" if array else "slurm-%j.out"


def _unescape(pattern: str) -> str:
    out, i = [], 0
    while i < len(pattern):
        if pattern[i] == "\\":
            if pattern[i + 1:i + 2] == "\\":
                out.append("\\")
                i += 2
            else:
                i += 1
            continue
        out.append(pattern[i])
        i += 1
    return "".join(out)


def expand_pattern(
    pattern: str,
    *,
    job_id: int,
    job_name: str,
    user: str,
    array_job_id: int | None = None,
    array_task_id: int | None = None,
    node: str = "",
    node_index: int = 0,
    step_id: int | None = None,
    task_id: int = 0,
    restart_count: int = 0,
) -> str:
    """Replace the ``%`` patterns of one file name for one task of a job."""
    if "\\" in pattern:
        return _unescape(pattern)
    task = NO_VAL if array_task_id is None else array_task_id
    master = job_id if array_task_id is None or array_job_id is None else array_job_id
    numbers = {
        "a": task,
        "A": master,
        "b": task % 10,
        "j": job_id,
        "n": node_index,
        "r": restart_count,
        "s": BATCH_STEP if step_id is None else step_id,
        "t": task_id,
    }
    words = {"N": node, "u": user, "x": job_name}
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch != "%":
            out.append(ch)
            i += 1
            continue
        if pattern[i + 1:i + 2] == "%":
            out.append("%")
            i += 2
            continue
        j = i + 1
        while j < n and pattern[j].isascii() and pattern[j].isdigit():
            j += 1
        digits = pattern[i + 1:j]
        if digits and j == n:  # a width with nothing after it keeps only its last digit
            out.append(digits[-1])
            break
        # the width is capped; a run of thousands of digits is not even read as a number
        width = 0 if not digits else min(int(digits), MAX_WIDTH) if len(digits.lstrip("0")) <= 3 else MAX_WIDTH
        letter = pattern[j] if j < n else ""
        if letter in numbers:
            out.append(f"{numbers[letter]:0{width}d}")
        elif letter == "J":
            out.append(f"{job_id:0{width}d}" + ("" if step_id is None else f".{step_id}"))
        elif letter in words:
            out.append(words[letter])
        else:  # unknown: the text stays, minus a width and its %
            out.append(digits[-1] if digits else "%")
            i = j
            continue
        i = j + 1
    return "".join(out)


def per_task(pattern: str) -> bool:
    """Whether srun's ``-o/-e/-i`` name differs from task to task or node to node (``%t``,
    ``%n``, ``%N``): such a file is opened on the nodes, one per task or per node, by the task's
    user; any other name is one file for the whole step, which srun opens itself."""
    if "\\" in pattern:
        return False
    i, n = 0, len(pattern)
    while i < n:
        if pattern[i] != "%":
            i += 1
            continue
        if pattern[i + 1:i + 2] == "%":
            i += 2
            continue
        j = i + 1
        while j < n and pattern[j].isascii() and pattern[j].isdigit():
            j += 1
        if pattern[j:j + 1] in ("t", "n", "N"):
            return True
        i = j
    return False


def step_io(value: str | None) -> str:
    """How srun handles one of ``-o/-e/-i``: ``relay`` (not given: through srun, to its terminal),
    ``none`` (/dev/null), ``task`` (a number: only that task's stream), ``tasks`` (a name per task
    or node, opened on the nodes) or ``file`` (one file, opened by srun)."""
    if value is None or value == "":
        return "relay"
    if value == "/dev/null":
        return "none"
    if value.isascii() and value.isdigit():
        return "task"
    return "tasks" if per_task(value) else "file"
