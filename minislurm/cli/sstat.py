"""sstat: what the steps of a running job use now (CPU time, memory), asked of its nodes.

As in Slurm 22.05, only the job's ``srun`` steps are listed unless ``-a``/``--allsteps`` adds
the batch step (``N.batch``).  Simplification: the default fields are a short list (``JobID,
NTasks,AveCPU,MaxRSS,MaxRSSNode``) instead of Slurm's several dozen; ``-o`` picks among
JobID, NTasks, AveCPU, MinCPU, TotalCPU, MaxRSS, MaxRSSNode, AveRSS (AveRSS and MinCPU are
per-node figures here).
"""

from __future__ import annotations

import re
import sys

from minislurm.cli.fmt.fields import check_width
from minislurm.cli.fmt.sacct import cpu_time
from minislurm.cli.helptext import LAYOUTS
from minislurm.cli.parsing import ArgumentParser
from minislurm.client import Client, ClientError
from minislurm.core import errors

_JOB_STEP = re.compile(r"(\d+)(?:_(\d+))?(?:\.(\w+))?", re.ASCII)  # 12, 12_3, 12.0, 12.batch

DEFAULT = ["JobID", "NTasks", "AveCPU", "MaxRSS", "MaxRSSNode"]
FIELDS = {
    "JobID": (-12, lambda job, s: f"{job}.{s['step']}"),
    "NTasks": (8, lambda job, s: str(s["ntasks"])),
    "AveCPU": (10, lambda job, s: cpu_time(s["cpu"] / max(s["ntasks"], 1))),
    "MinCPU": (10, lambda job, s: cpu_time(s["cpu"] / max(s["ntasks"], 1))),
    "TotalCPU": (10, lambda job, s: cpu_time(s["cpu"])),
    "MaxRSS": (10, lambda job, s: f"{s['max_rss']}K"),
    "MaxRSSNode": (14, lambda job, s: s["max_rss_node"]),
    "AveRSS": (10, lambda job, s: f"{s['max_rss']}K"),
}


def _fields(text: str | None) -> list[tuple[str, int]]:
    out = []
    for item in (text.split(",") if text else DEFAULT):
        name, _, width = item.strip().partition("%")
        match = next((f for f in FIELDS if name and f.lower() == name.lower()), None)
        if match is None:
            raise ValueError(f'Invalid field requested: "{name}"')
        size = FIELDS[match][0]
        if width.lstrip("-").isdigit() and int(width):
            size = int(width)
            check_width(abs(size))
        out.append((match, size))
    return out


def parser() -> ArgumentParser:
    p = ArgumentParser(prog="sstat", description=__doc__.splitlines()[0], try_help=False, layout=LAYOUTS["sstat"])
    p.add_argument("-j", "--jobs", required=True, metavar="job(.step)",
                   help="The running job, or its step, to report on (required; comma-separated). "
                        "Without a step, every srun step.")
    p.add_argument("-a", "--allsteps", action="store_true", help="Add the batch step to the job's steps.")
    p.add_argument("-o", "--format", "--fields", metavar="fields",
                   help="The fields to print, comma-separated (JobID, NTasks, AveCPU, MinCPU, TotalCPU, "
                        "MaxRSS, MaxRSSNode, AveRSS).")
    p.add_argument("-n", "--noheader", action="store_true", help="Leave out the header lines.")
    p.add_argument("-P", "--parsable2", action="store_true", help="Fields split by '|', none at the end.")
    p.add_argument("-p", "--parsable", action="store_true", help="Fields split by '|', one at the end.")
    return p


def main(argv: list[str]) -> int:
    p = parser()
    args = p.parse_args(argv)
    try:
        fields = _fields(args.format)
    except ValueError as exc:
        print(f"sstat: error: {exc}", file=sys.stderr)
        return 1
    lines = []
    if not args.noheader:
        lines.append(_line([(n, w, n) for n, w in fields], args))
        if not (args.parsable or args.parsable2):
            lines.append(" ".join("-" * abs(w) for _, w in fields) + " ")
    targets = []
    for text in filter(None, args.jobs.split(",")):
        m = _JOB_STEP.fullmatch(text)
        if not m:  # refused before any request, in Slurm's words
            print(f"sstat: fatal: Bad job/step specified: {text}", file=sys.stderr)
            return 1
        targets.append(m.groups())
    client = Client()
    for base, task, want in targets:
        job = f"{base}_{task}" if task else base
        try:
            job_id = _array_task(client, int(base), int(task)) if task else int(base)
            steps = client.call("GET", f"/jobs/{job_id}/usage")["steps"]
        except ClientError as exc:
            print(f"sstat: error: couldn't get steps for job {job}: {exc}", file=sys.stderr)
            return 1
        for s in steps:
            if (want and s["step"] != want) or (not want and s["step"] == "batch" and not args.allsteps):
                continue
            lines.append(_line([(n, w, FIELDS[n][1](job, s)) for n, w in fields], args))
    sys.stdout.write("".join(line + "\n" for line in lines))
    return 0


def _array_task(client: Client, array_job_id: int, task: int) -> int:
    """The job id of task ``task`` of array ``array_job_id`` (``sstat -j 12_3``)."""
    for job in client.call("GET", "/jobs", query={"ids": str(array_job_id)})["jobs"]:
        if job["array_job_id"] == array_job_id and job["array_task_id"] == task:
            return job["job_id"]
    raise ClientError(errors.INVALID_JOB_ID)


def _line(cells: list[tuple[str, int, str]], args) -> str:
    if args.parsable2 or args.parsable:
        return "|".join(v for _, _, v in cells) + ("|" if args.parsable else "")
    out = []
    for _, width, value in cells:
        value = value[:abs(width) - 1] + "+" if len(value) > abs(width) else value
        out.append(value.ljust(-width) if width < 0 else value.rjust(width))
    return " ".join(out) + " "


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
