"""sacct's output, from accounting records (one dict per job incarnation or step).

Behaviour reproduced from src/sacct and src/common/print_fields.c:

* default fields ``JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode``;
* every field has a width (JobID and JobIDRaw are -12, i.e. left-justified; the rest are
  right-justified), is followed by one space, and a value longer than the width is cut
  with its last visible character replaced by ``+`` (``CANCELLED by 1000`` ->
  ``CANCELLED+``); a dashes line follows the header;
* ``-o name%N`` sets the width (negative = left-justified); names match case-insensitively
  by prefix, the first field of sacct's table that starts with the text winning;
* ``--parsable``: ``|`` after every field; ``--parsable2``: none after the last; no padding,
  no cutting, no dashes;
* times ``YYYY-MM-DDTHH:MM:SS``, ``Unknown`` when not set; Elapsed/Timelimit ``[D-]HH:MM:SS``;
* step rows (``12.batch``, ``12.extern``, ``12.0``) leave Partition, User, UID, QOS and
  Timelimit empty.

sacct has no ``Restarts`` field: each requeued run is its own record (``sacct -D``).

Two safety differences from Slurm, shared with squeue (:mod:`minislurm.cli.fmt.fields`):
control characters in values (a job name with a newline or an escape sequence) print escaped,
and a ``%N`` width over ``MAX_WIDTH`` is refused.
"""

from __future__ import annotations

from collections.abc import Callable

from minislurm.cli.fmt.fields import check_width, mem_units, printable, timestamp
from minislurm.core.timefmt import format_elapsed

DEFAULT_FIELDS = ["JobID", "JobName", "Partition", "Account", "AllocCPUS", "State", "ExitCode"]



def _is_step(r: dict) -> bool:
    return r.get("step") not in (None, "")


def _job_id(r: dict, raw: bool = False) -> str:
    base = str(r["job_id"]) if raw else (r.get("display_id") or str(r["job_id"]))
    return f"{base}.{r['step']}" if _is_step(r) else base


def _elapsed(r: dict, now: float | None) -> int:
    start, end = r.get("start"), r.get("end")
    if not start:
        return 0
    if end is None:
        end = now if now is not None else start
    return max(int(end - start), 0)


def _state(r: dict) -> str:
    state = r.get("state", "")
    if state == "CANCELLED" and r.get("cancelled_by") is not None:
        return f"CANCELLED by {r['cancelled_by']}"
    return state


def tres(r: dict) -> str:
    """AllocTRES: ``billing=16,cpu=16,gres/gpu=8,mem=64G,node=2`` (names in alphabetical order)."""
    if not r.get("alloc_cpus"):
        return ""
    nnodes = r.get("nnodes", 1) or 1
    items = {"cpu": str(r["alloc_cpus"]), "node": str(nnodes)}
    if not _is_step(r):
        items["billing"] = str(r["alloc_cpus"])
    if r.get("alloc_gpus"):
        items["gres/gpu"] = str(r["alloc_gpus"])
    mem = r.get("alloc_mem")  # a step's: what it asked for in all
    if mem is None:
        mem = (r.get("req_mem") or 0) * nnodes
    if mem > 0:
        items["mem"] = mem_units(mem)
    return ",".join(f"{k}={items[k]}" for k in sorted(items))


def cpu_time(seconds: float | None) -> str:
    """sacct's CPU times: ``MM:SS.mmm`` under an hour, ``[D-]HH:MM:SS`` from then on (blank: not measured)."""
    if seconds is None:
        return ""
    if seconds < 3600:
        minutes, rest = divmod(seconds, 60)
        return f"{int(minutes):02d}:{rest:06.3f}"
    return format_elapsed(int(seconds))


def req_tres(r: dict) -> str:
    """ReqTRES: what the job asked for (its steps leave it empty)."""
    if _is_step(r) or not r.get("req_cpus"):
        return ""
    items = {"billing": r["req_cpus"], "cpu": r["req_cpus"], "node": r.get("req_nodes", 1)}
    if r.get("req_gpus"):
        items["gres/gpu"] = r["req_gpus"]
    if (r.get("req_mem") or 0) > 0:
        items["mem"] = mem_units(r["req_mem"] * r.get("req_nodes", 1))
    return ",".join(f"{k}={items[k]}" for k in sorted(items))


def _derived(r: dict) -> str:
    """DerivedExitCode: the highest exit code of the job's srun steps (filled in by format_records)."""
    return "" if _is_step(r) else r.get("derived_exit", "0:0")


def _job_only(fn: Callable[[dict], str]) -> Callable[[dict, float | None], str]:
    return lambda r, now: "" if _is_step(r) else fn(r)


# In the order of sacct's own table (prefix matching picks the first hit).
FIELDS: list[tuple[str, int, Callable[[dict, float | None], str]]] = [
    ("Account", 10, lambda r, now: r.get("account", "")),
    ("AllocCPUS", 10, lambda r, now: str(r.get("alloc_cpus", 0))),
    ("AllocNodes", 10, lambda r, now: str(r.get("nnodes", 0) if r.get("start") else 0)),
    ("AllocTRES", 10, lambda r, now: tres(r)),
    ("CPUTime", 10, lambda r, now: format_elapsed(_elapsed(r, now) * r.get("alloc_cpus", 0))),
    ("CPUTimeRAW", 10, lambda r, now: str(_elapsed(r, now) * r.get("alloc_cpus", 0))),
    ("DerivedExitCode", 15, lambda r, now: _derived(r)),
    ("Elapsed", 10, lambda r, now: format_elapsed(_elapsed(r, now))),
    ("ElapsedRaw", 10, lambda r, now: str(_elapsed(r, now))),
    ("Eligible", 19, lambda r, now: timestamp(r.get("eligible"), "Unknown")),
    ("End", 19, lambda r, now: timestamp(r.get("end"), "Unknown")),
    ("ExitCode", 8, lambda r, now: f"{r.get('exit_code', 0)}:{r.get('exit_signal', 0)}"),
    ("JobID", -12, lambda r, now: _job_id(r)),
    ("JobIDRaw", -12, lambda r, now: _job_id(r, raw=True)),
    ("JobName", 10, lambda r, now: r.get("name", "")),
    ("MaxRSS", 10, lambda r, now: "" if not _is_step(r) or r.get("max_rss") is None else f"{r['max_rss']}K"),
    ("NCPUS", 10, lambda r, now: str(r.get("alloc_cpus", 0))),
    ("NNodes", 8, lambda r, now: str(r.get("nnodes", 0))),
    ("NodeList", 15, lambda r, now: r.get("nodes") or "None assigned"),
    ("NTasks", 8, lambda r, now: str(r["ntasks"]) if _is_step(r) and r.get("ntasks") else ""),
    ("Partition", 10, _job_only(lambda r: r.get("partition", ""))),
    ("QOS", 10, _job_only(lambda r: r.get("qos", "normal"))),
    ("ReqMem", 10, lambda r, now: mem_units(max(r.get("req_mem") or 0, 0))),
    ("ReqTRES", 10, lambda r, now: req_tres(r)),
    ("Start", 19, lambda r, now: timestamp(r.get("start"), "Unknown")),
    ("State", 10, lambda r, now: _state(r)),
    ("Submit", 19, lambda r, now: timestamp(r.get("submit"), "Unknown")),
    ("Timelimit", 10, _job_only(lambda r: "UNLIMITED" if r.get("time_limit") is None
                                else format_elapsed(r["time_limit"]))),
    ("TimelimitRaw", 10, _job_only(lambda r: "UNLIMITED" if r.get("time_limit") is None
                                   else str(int(r["time_limit"] // 60)))),
    ("TotalCPU", 10, lambda r, now: cpu_time(r.get("total_cpu"))),
    ("UID", 6, _job_only(lambda r: str(r.get("uid", "")))),
    ("User", 9, _job_only(lambda r: r.get("user", ""))),
    ("WorkDir", 20, lambda r, now: r.get("work_dir", "")),
]


def parse_fields(names: list[str]) -> list[tuple[str, int, Callable]]:
    """``-o`` items (``jobname%30``, ``JobID%-20``) to (name, width, value function)."""
    out = []
    for item in names:
        name, pct, width = item.strip().partition("%")
        match = next((f for f in FIELDS if name and f[0].lower().startswith(name.lower())), None)
        if match is None:
            raise ValueError(f'Invalid field requested: "{name}"')
        size = match[1]
        if pct and width.lstrip("-").isdigit() and int(width):
            size = int(width)
            check_width(abs(size))
        out.append((match[0], size, match[2]))
    return out


def _cell(text: str, size: int) -> str:
    width = abs(size)
    if len(text) > width:
        text = text[:width - 1] + "+"
    return (text.rjust(width) if size > 0 else text.ljust(width)) + " "


def derived_exit(steps: list[dict]) -> tuple[int, int]:
    """DerivedExitCode (code, signal): the worst exit of a job's srun steps, leaving out those
    stopped with their job (22.05: a cancelled job's step says 0:15, its job 0:0)."""
    return max(((s.get("exit_code", 0), s.get("exit_signal", 0)) for s in steps
                if str(s["step"]).isdigit() and not s.get("ended_with_job")), default=(0, 0))


def _with_derived(records: list[dict]) -> list[dict]:
    steps: dict[tuple, list[dict]] = {}
    for r in records:
        if _is_step(r):
            steps.setdefault((r["job_id"], r.get("restart")), []).append(r)
    def with_code(r: dict) -> dict:
        return dict(r, derived_exit="%d:%d" % derived_exit(steps.get((r["job_id"], r.get("restart")), [])))
    return [r if _is_step(r) else with_code(r) for r in records]


def field_list() -> str:
    """``sacct -e``: the field names, four to a line (each left-justified in 19 columns)."""
    names = [name for name, _, _ in FIELDS]
    rows = [names[i:i + 4] for i in range(0, len(names), 4)]
    return "".join(" ".join(f"{n:<19}" for n in row) + "\n" for row in rows)


def format_records(records: list[dict], *, fields: list[str] | None = None, parsable2: bool = False,
                   parsable: bool = False, noheader: bool = False, now: float | None = None) -> str:
    """The text sacct prints; ``now`` gives running jobs their Elapsed."""
    cols = parse_fields(fields or DEFAULT_FIELDS)
    if any(name == "DerivedExitCode" for name, _, _ in cols):
        records = _with_derived(records)
    lines = []
    if parsable or parsable2:
        end = "" if parsable2 else "|"
        if not noheader:
            lines.append("|".join(name for name, _, _ in cols) + end)
        for r in records:
            lines.append("|".join(printable(fn(r, now)) for _, _, fn in cols) + end)
    else:
        if not noheader:
            lines.append("".join(f"{name[:abs(s)]:{'>' if s > 0 else '<'}{abs(s)}} " for name, s, _ in cols))
            lines.append("".join("-" * abs(s) + " " for _, s, _ in cols))
        for r in records:
            lines.append("".join(_cell(printable(fn(r, now)), s) for _, s, fn in cols))
    return "".join(line + "\n" for line in lines)
