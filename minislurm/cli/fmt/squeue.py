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
"""

from __future__ import annotations

from minislurm.cli.fmt.fields import Field, check_width, ctime, mem_units, natural_key, parse_format, render, secs, timestamp
from minislurm.core.hostlist import compress, expand
from minislurm.core.states import JobState

DEFAULT = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R"
LONG = "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R"
START = "%.18i %.9P %.8j %.8u %.2t %.19S %.6D %20Y %R"
DEFAULT_SORT = "P,t,-p"
NO_VAL = 0xFFFFFFFE
# squeue shows the reason instead of the nodes for these (print.c, _print_job_reason_list)
_REASON_STATES = {"PENDING", "TIMEOUT", "OUT_OF_MEMORY", "DEADLINE", "FAILED"}


def _code(state: str) -> str:
    try:
        return JobState[state].code
    except KeyError:
        return state[:2]


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
LETTERS: dict[str, tuple] = {
    "a": ("ACCOUNT", lambda j, n: j.get("account", ""), True),
    "A": ("JOBID", lambda j, n: str(j["job_id"]), True),
    "b": ("TRES_PER_NODE", lambda j, n: f"gres/{j['gres']}" if j.get("gres") else "N/A", True),
    "B": ("EXEC_HOST", lambda j, n: j.get("batch_host") or "n/a", True),
    "c": ("MIN_CPUS", lambda j, n: _per_node_cpus(j), True),
    "C": ("CPUS", lambda j, n: str(j.get("num_cpus", 0)), True),
    "D": ("NODES", lambda j, n: str(j.get("num_nodes", 0)), True),
    "e": ("END_TIME", _end, True),
    "E": ("DEPENDENCY", lambda j, n: j.get("dependency") or "(null)", True),
    "F": ("ARRAY_JOB_ID", lambda j, n: str(j.get("array_job_id") or j["job_id"]), True),
    "i": ("JOBID", lambda j, n: _job_id(j), True),
    "j": ("NAME", lambda j, n: j.get("name", ""), True),
    "K": ("ARRAY_TASK_ID", lambda j, n: j.get("array_task_str") or (
        "N/A" if j.get("array_task_id") is None else str(j["array_task_id"])), True),
    "l": ("TIME_LIMIT", lambda j, n: _limit(j), False),
    "L": ("TIME_LEFT", _left, False),
    "m": ("MIN_MEMORY", lambda j, n: mem_units(max(j.get("mem_per_node", 0), 0)), True),
    "M": ("TIME", lambda j, n: secs(_used(j, n)), False),
    "n": ("REQ_NODES", lambda j, n: j.get("req_nodes") or "", False),
    "N": ("NODELIST", lambda j, n: compress(expand(j.get("nodes") or "")), False),
    "o": ("COMMAND", lambda j, n: j.get("command") or "(null)", True),
    "p": ("PRIORITY", lambda j, n: f"{j.get('priority', 0) / 0xFFFFFFFF:16.14f}", True),
    "P": ("PARTITION", lambda j, n: j.get("partition", ""), True),
    "q": ("QOS", lambda j, n: j.get("qos", "normal"), True),
    "Q": ("PRIORITY", lambda j, n: str(j.get("priority", 0)), True),
    "r": ("REASON", lambda j, n: j.get("reason") or "None", True),
    "R": ("NODELIST(REASON)", lambda j, n: _reason_list(j), None),
    "S": ("START_TIME", lambda j, n: timestamp(_start(j)), True),
    "t": ("ST", lambda j, n: _code(j.get("state", "")), True),
    "T": ("STATE", lambda j, n: j.get("state", ""), True),
    "u": ("USER", lambda j, n: j.get("user", ""), True),
    "U": ("UID", lambda j, n: str(j.get("uid", 0)), True),
    "v": ("RESERVATION", lambda j, n: j.get("reservation") or "(null)", True),
    "V": ("SUBMIT_TIME", lambda j, n: timestamp(j.get("submit_time")), True),
    "x": ("EXC_NODES", lambda j, n: j.get("exc_nodes") or "", False),
    "y": ("NICE", lambda j, n: str(j.get("nice", 0)), True),
    "Y": ("SCHEDNODES", lambda j, n: j.get("sched_nodes") or "(null)", False),
    "Z": ("WORK_DIR", lambda j, n: j.get("work_dir") or "(null)", True),
}
_UNCUT_HEADERS = {"N", "Y", "R"}

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
    "j": lambda j, n: j.get("name", ""), "P": lambda j, n: j.get("partition", ""),
    "t": lambda j, n: _code(j.get("state", "")), "T": lambda j, n: j.get("state", ""),
    "p": lambda j, n: j.get("priority", 0), "Q": lambda j, n: j.get("priority", 0),
    "u": lambda j, n: j.get("user", ""), "a": lambda j, n: j.get("account", ""),
    "D": lambda j, n: j.get("num_nodes", 0), "C": lambda j, n: j.get("num_cpus", 0),
    "S": _start_key, "V": lambda j, n: j.get("submit_time") or 0, "M": lambda j, n: _used(j, n),
    "l": lambda j, n: NO_VAL if j.get("time_limit") is None else j["time_limit"],
    "e": lambda j, n: j.get("end_time") or 0,
    "N": lambda j, n: natural_key((expand(j.get("nodes") or "") or [""])[0]),
}


def sort_jobs(jobs: list[dict], spec: str, now: float) -> list[dict]:
    """squeue's ``-S``: keys applied last to first, each a stable sort; ``-`` = descending."""
    jobs = sorted(jobs, key=lambda j: _start_key(j, now), reverse=True)
    for i in range(len(spec) - 1, -1, -1):
        c = spec[i]
        if c in ",+-":
            continue
        if c not in _SORT_KEYS:
            raise ValueError(f"Invalid sort specification: {c}")
        jobs = sorted(jobs, key=lambda j: _SORT_KEYS[c](j, now), reverse=i > 0 and spec[i - 1] == "-")
    return jobs


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

    def value(job):
        def one(f):
            _, fn, cut = LETTERS[f.letter]
            out = fn(job, now)
            return out if cut is None else (out, cut)
        return one

    lines.extend(render(prefix, fields, value(j)) for j in jobs)
    return "".join(line + "\n" for line in lines)
