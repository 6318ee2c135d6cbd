"""squeue's output, from JobView dicts.

Defaults (squeue man page and src/squeue): ``%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R``;
``-l`` adds a date line and uses ``%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R``;
``--start`` is ``%.18i %.9P %.8j %.8u %.2t %.19S %.6D %20Y %R`` over pending jobs, sorted
by expected start.  The default order is ``-S P,t,-p`` (partition, compact state as text,
then priority high to low), applied after a pre-sort by start time, latest first.

Pending tasks of one job array (same name and partition) collapse into one line,
``1080_[5-1024]``, with the ``%N`` throttle appended when the view carries
``array_max_tasks``; running tasks print as ``1080_1``.  Optional JobView keys read here
besides the TypedDict ones: ``uid``, ``qos``, ``array_max_tasks``.

Built for a full queue: squeue asks the controller only for the keys its format and sort read
(:func:`view_keys`), sorts positions by precomputed keys, and formats column by column
(:mod:`minislurm.cli.fmt.columns`); the bytes are those of the plain per-job way.
"""

from __future__ import annotations

from minislurm.cli.fmt.columns import Key, Via, cells, or_text, values
from minislurm.cli.fmt.fields import (Field, check_width, ctime, mem_units, natural_key, parse_format, render, secs,
                                      timestamp)
from minislurm.core.hostlist import compress, expand
from minislurm.core.states import JobState

DEFAULT = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R"
LONG = "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R"
START = "%.18i %.9P %.8j %.8u %.2t %.19S %.6D %20Y %R"
DEFAULT_SORT = "P,t,-p"
NO_VAL = 0xFFFFFFFE
# squeue shows the reason instead of the nodes for these (print.c, _print_job_reason_list)
_REASON_STATES = {"PENDING", "TIMEOUT", "OUT_OF_MEMORY", "DEADLINE", "FAILED"}


_CODES = {s.name: s.code for s in JobState}


def _code(state: str) -> str:
    return _CODES.get(state) or state[:2]


def _used(j: dict, now: float) -> float:
    start = j.get("start_time")
    if j.get("state") == "PENDING" or not start:
        return 0.0
    end = j.get("end_time")
    if j.get("state") == "RUNNING" or not end:
        end = now
    return end - start


def _start(j: dict) -> float | None:
    if j.get("state") == "PENDING":
        return j.get("expected_start") or j.get("start_time")
    return j.get("start_time")


def _end(j: dict, now: float) -> str:
    limit, end = j.get("time_limit"), j.get("end_time")
    if j.get("state") in ("RUNNING", "PENDING") and not end:
        start = _start(j)
        if start and limit is None:
            return "NONE"
        end = start + limit if start and limit is not None else None
    return timestamp(end)


def _limit(j: dict) -> str:
    return "UNLIMITED" if j.get("time_limit") is None else secs(j["time_limit"])


def _left(j: dict, now: float) -> str:
    return "UNLIMITED" if j.get("time_limit") is None else secs(j["time_limit"] - _used(j, now))


def _job_id(j: dict) -> str:
    if j.get("array_task_str") is not None:
        return f"{j['array_job_id']}_[{j['array_task_str']}]"
    return j.get("display_id") or str(j["job_id"])


def _reason_list(j: dict) -> tuple[str, bool]:
    if j.get("state") in _REASON_STATES:
        return f"({j.get('reason') or 'None'})", True
    return compress(expand(j.get("nodes") or "")), False


def _per_node_cpus(j: dict) -> str:
    return str(j.get("num_cpus", 0) // max(j.get("num_nodes", 1), 1))


# letter -> (header, value(job, now) -> text, cut).  Headers come from squeue's print.c.
# ``cut`` None: the value is (text, cut).
LETTERS: dict[str, tuple] = {
    "a": ("ACCOUNT", Key("account", ""), True),
    "A": ("JOBID", Key("job_id", None, str), True),
    "b": ("TRES_PER_NODE", Key("gres", None, lambda g: f"gres:{g}" if g else "N/A"), True),
    "B": ("EXEC_HOST", Key("batch_host", None, or_text("n/a")), True),
    "c": ("MIN_CPUS", lambda j, n: _per_node_cpus(j), True),
    "C": ("CPUS", Key("num_cpus", 0, str), True),
    "D": ("NODES", Key("num_nodes", 0, str), True),
    "e": ("END_TIME", _end, True),
    "E": ("DEPENDENCY", Key("dependency", None, or_text("(null)")), True),
    "F": ("ARRAY_JOB_ID", lambda j, n: str(j.get("array_job_id") or j["job_id"]), True),
    "i": ("JOBID", lambda j, n: _job_id(j), True),
    "j": ("NAME", Key("name", ""), True),
    "K": ("ARRAY_TASK_ID", lambda j, n: j.get("array_task_str") or (
        "N/A" if j.get("array_task_id") is None else str(j["array_task_id"])), True),
    "l": ("TIME_LIMIT", lambda j, n: _limit(j), False),
    "L": ("TIME_LEFT", _left, False),
    "m": ("MIN_MEMORY", Key("mem_per_node", 0, lambda mb: mem_units(max(mb, 0))), True),
    "M": ("TIME", Via(_used, secs), False),
    "n": ("REQ_NODES", Key("req_nodes", None, or_text("")), False),
    "N": ("NODELIST", Key("nodes", None, lambda nodes: compress(expand(nodes or ""))), False),
    "o": ("COMMAND", Key("command", None, or_text("(null)")), True),
    "p": ("PRIORITY", Key("priority", 0, lambda p: f"{p / 0xFFFFFFFF:16.14f}"), True),
    "P": ("PARTITION", Key("partition", ""), True),
    "q": ("QOS", Key("qos", "normal"), True),
    "Q": ("PRIORITY", Key("priority", 0, str), True),
    "r": ("REASON", Key("reason", None, or_text("None")), True),
    "R": ("NODELIST(REASON)", lambda j, n: _reason_list(j), None),
    "S": ("START_TIME", Via(lambda j, n: _start(j), timestamp), True),
    "t": ("ST", Key("state", "", _code), True),
    "T": ("STATE", Key("state", ""), True),
    "u": ("USER", Key("user", ""), True),
    "U": ("UID", Key("uid", 0, str), True),
    "v": ("RESERVATION", Key("reservation", None, or_text("(null)")), True),
    "V": ("SUBMIT_TIME", Key("submit_time", None, timestamp), True),
    "x": ("EXC_NODES", Key("exc_nodes", None, or_text("")), False),
    "y": ("NICE", Key("nice", 0, str), True),
    "Y": ("SCHEDNODES", Key("sched_nodes", None, or_text("(null)")), False),
    "Z": ("WORK_DIR", Key("work_dir", None, or_text("(null)")), True),
}
_UNCUT_HEADERS = {"N", "Y", "R"}

# The view keys each letter (of a format or of -S) reads, besides _ALWAYS: what squeue asks the
# controller for (``GET /jobs?fields=``) instead of every key of every job.
_ALWAYS = ("job_id", "display_id", "array_job_id", "array_task_id", "array_max_tasks", "het_job_id", "name", "partition",
           "state", "reason", "start_time", "expected_start")  # array collapsing, -S, the start pre-sort
_KEYS_OF = {"a": "account", "b": "gres", "B": "batch_host", "c": "num_cpus num_nodes", "C": "num_cpus",
            "D": "num_nodes", "e": "time_limit end_time", "E": "dependency", "l": "time_limit",
            "L": "time_limit end_time", "m": "mem_per_node", "M": "end_time", "n": "req_nodes", "N": "nodes",
            "o": "command", "p": "priority", "q": "qos", "Q": "priority", "R": "nodes", "u": "user", "U": "uid",
            "v": "reservation", "V": "submit_time", "x": "exc_nodes", "y": "nice", "Y": "sched_nodes",
            "Z": "work_dir"}

# -O/--Format long names (a subset) -> letters
LONG_NAMES = {
    "account": "a", "arrayjobid": "F", "arraytaskid": "K", "batchhost": "B", "command": "o",
    "dependency": "E", "endtime": "e", "jobarrayid": "i", "jobid": "A", "minmemory": "m",
    "name": "j", "nice": "y", "nodelist": "N", "numcpus": "C", "numnodes": "D", "partition": "P",
    "priority": "p", "prioritylong": "Q", "qos": "q", "reason": "r", "reasonlist": "R",
    "reqnodes": "n", "excnodes": "x", "reservation": "v", "schednodes": "Y", "starttime": "S",
    "statecompact": "t", "state": "T", "submittime": "V", "timeleft": "L", "timelimit": "l",
    "timeused": "M", "tres-per-node": "b", "userid": "U", "username": "u", "workdir": "Z",
}


def parse_long_format(spec: str) -> list[Field]:
    """``-O name[:[.]size][suffix],...``: no size means 20 columns, left-justified."""
    fields = []
    for item in filter(None, spec.split(",")):
        name, _, rest = item.partition(":")
        letter = LONG_NAMES.get(name.strip().lower())
        if letter is None:
            raise ValueError(f"Invalid job format specification: {name}")
        right = rest.startswith(".")
        rest = rest[1:] if right else rest
        digits = "".join(c for c in rest[: len(rest) - len(rest.lstrip("0123456789"))])
        fields.append(Field(letter, check_width(int(digits)) if digits else 20, right, rest[len(digits):]))
    return fields


def _bit_fmt(ids: list[int]) -> str:
    """Task ids as Slurm writes a bitmap: ``1,3,5-7``."""
    ranges, ids = [], sorted(set(ids))
    for i in ids:
        if ranges and i == ranges[-1][1] + 1:
            ranges[-1][1] = i
        else:
            ranges.append([i, i])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)


def collapse_arrays(jobs: list[dict]) -> list[dict]:
    """Pending tasks of one array (same name and partition) become one record."""
    out: list = []
    groups: dict[tuple, list[dict]] = {}
    for j in jobs:
        if j.get("state") == "PENDING" and j.get("array_job_id") is not None \
                and j.get("array_task_id") is not None:
            key = (j["array_job_id"], j.get("name"), j.get("partition"))
            if key not in groups:
                groups[key] = []
                out.append(key)
            groups[key].append(j)
        else:
            out.append(j)
    result = []
    for item in out:
        if isinstance(item, dict):
            result.append(item)
            continue
        tasks = sorted(groups[item], key=lambda t: t["array_task_id"])
        if len(tasks) == 1:
            result.append(tasks[0])
            continue
        meta = dict(tasks[0], job_id=item[0], array_task_id=None)
        text = _bit_fmt([t["array_task_id"] for t in tasks])
        if tasks[0].get("array_max_tasks"):
            text += f"%{tasks[0]['array_max_tasks']}"
        meta["array_task_str"] = text
        reasons: list[str] = []
        for t in tasks:  # like squeue's _merge_job_reason
            if (t.get("reason") or "None") not in reasons:
                reasons.append(t.get("reason") or "None")
        meta["reason"] = ",".join(reasons)
        result.append(meta)
    return result


def _start_key(j: dict, now: float) -> float:
    start = _start(j)
    if not start:
        return now + 100
    return now if j.get("state") == "PENDING" and start < now else start


_SORT_KEYS = {
    "i": lambda j, n: (j.get("array_job_id") or j["job_id"], NO_VAL if j.get("array_task_id") is None
                       else j["array_task_id"]),
    "j": Key("name", ""), "P": Key("partition", ""), "t": Key("state", "", _code), "T": Key("state", ""),
    "p": Key("priority", 0), "Q": Key("priority", 0), "u": Key("user", ""), "a": Key("account", ""),
    "D": Key("num_nodes", 0), "C": Key("num_cpus", 0),
    "S": _start_key, "V": Key("submit_time", None, lambda t: t or 0), "M": lambda j, n: _used(j, n),
    "l": Key("time_limit", None, lambda t: NO_VAL if t is None else t),
    "e": Key("end_time", None, lambda t: t or 0),
    "N": Key("nodes", None, lambda nodes: natural_key((expand(nodes or "") or [""])[0])),
}


def sort_jobs(jobs: list[dict], spec: str, now: float) -> list[dict]:
    """squeue's ``-S``: keys applied last to first, each a stable sort; ``-`` = descending.
    (Positions are sorted by precomputed keys: the same order as sorting the jobs themselves.)"""
    order = list(range(len(jobs)))
    first = [_start_key(j, now) for j in jobs]
    order.sort(key=first.__getitem__, reverse=True)
    for i in range(len(spec) - 1, -1, -1):
        c = spec[i]
        if c in ",+-":
            continue
        if c not in _SORT_KEYS:
            raise ValueError(f"Invalid sort specification: {c}")
        keys = values(_SORT_KEYS[c], jobs, now)
        order.sort(key=keys.__getitem__, reverse=i > 0 and spec[i - 1] == "-")
    return [jobs[i] for i in order]


def job_fields(fmt: str | None = None, *, long: bool = False, start: bool = False,
               long_format: str | None = None) -> tuple[str, list[Field]]:
    """The prefix and fields of the format squeue will print; ValueError names a bad one."""
    if long_format is not None:
        prefix, fields = "", parse_long_format(long_format)
    else:
        prefix, fields = parse_format(fmt or (START if start else LONG if long else DEFAULT))
    for f in fields:
        if f.letter not in LETTERS:
            raise ValueError(f"Invalid job format specification: {f.letter}")
    return prefix, fields


def view_keys(fields: list[Field], sort: str | None = None) -> list[str]:
    """The JobView keys that printing ``fields`` in the order ``sort`` reads."""
    keys = dict.fromkeys(_ALWAYS)
    for letter in [f.letter for f in fields] + list(sort or DEFAULT_SORT):
        keys.update(dict.fromkeys(_KEYS_OF.get(letter, "").split()))
    return list(keys)


def format_jobs(jobs: list[dict], *, fmt: str | None = None, long: bool = False, start: bool = False,
                noheader: bool = False, now: float, sort: str | None = None, array: bool = False,
                long_format: str | None = None) -> str:
    """The text squeue prints.  ``fmt`` is ``-o``, ``long_format`` is ``-O``, ``sort`` is ``-S``,
    ``array`` is ``-r`` (one line per array task)."""
    prefix, fields = job_fields(fmt, long=long, start=start, long_format=long_format)
    if start:
        jobs = [j for j in jobs if j.get("state") == "PENDING"]
    if not array:
        jobs = collapse_arrays(jobs)
    jobs = sort_jobs(jobs, sort or ("S" if start else DEFAULT_SORT), now)
    lines = []
    if not noheader:
        if long:
            lines.append(ctime(now))
        lines.append(render(prefix, fields, lambda f: (LETTERS[f.letter][0], f.letter not in _UNCUT_HEADERS)))
    if fields:
        columns = (cells(LETTERS[f.letter][1], LETTERS[f.letter][2], f, jobs, now) for f in fields)
        lines.extend(prefix + "".join(row) for row in zip(*columns))
    else:
        lines.extend(prefix for _ in jobs)
    return "".join(line + "\n" for line in lines)


STEPS = "%.15i %.8j %.9P %.8u %.9M %N"  # squeue -s


def _step_cells(r: dict, job: dict, now: float) -> dict[str, str]:
    return {"i": f"{r.get('display_id') or r['job_id']}.{r['step']}", "j": r.get("name") or "",
            "P": job.get("partition", ""), "u": job.get("user", ""), "M": secs(now - (r.get("start") or now)),
            "N": r.get("nodes") or ""}


_STEP_HEADERS = {"i": "STEPID", "j": "NAME", "P": "PARTITION", "u": "USER", "M": "TIME", "N": "NODELIST"}


def format_steps(steps: list[dict], jobs: dict[int, dict], *, noheader: bool = False, now: float) -> str:
    """``squeue -s``: a line per running step (``steps``: their accounting records, ``jobs``
    their jobs' views by id), in the default step format."""
    prefix, fields = parse_format(STEPS)
    lines = [] if noheader else [render(prefix, fields, lambda f: (_STEP_HEADERS[f.letter], False))]
    for r in steps:
        cell = _step_cells(r, jobs[r["job_id"]], now)
        lines.append(render(prefix, fields, lambda f: (cell[f.letter], True)))
    return "".join(line + "\n" for line in lines)
