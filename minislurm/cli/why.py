"""minislurm why JOBID: why a job waits, from the scheduler's own plan, in plain words (or --json).

Not a Slurm command: Slurm's tools show one reason word (squeue) and one time (squeue --start).
This reads the controller's last backfill plan: the reason and what it means, the start the plan
holds and on which nodes, the running jobs that must end first (by their time limits), the jobs
ahead in the queue, and what-ifs the same policy works out on a copy of the state.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from minislurm.client import Client, ClientError


def wall_clock(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(epoch))


def describe(w: dict, when=wall_clock) -> str:
    """The explanation in plain words; ``when`` writes a time (a date here, a lab's minutes)."""
    name = f"Job {w['job_id']} ({w['name']})"
    if w["state"] != "PENDING":
        return f"{name} is {w['state']}: it is not waiting.\n"
    lines = [f"{name} is PENDING, reason {w['reason']}: {w['meaning']}."]
    if w["expected_start"] is not None:
        lines.append(f"The scheduler's plan starts it at {when(w['expected_start'])} on {','.join(w['planned_nodes'])}.")
    else:
        lines.append("The scheduler's plan holds no start for it (none within the backfill window, or none yet).")
    if w["held_by"]:
        lines.append("Running there first (each ends by its time limit at the latest):")
        lines += [f"  job {h['job_id']} ({h['name']}, {h['user']}) on {','.join(h['nodes'])} until "
                  f"{when(h['ends_by'])}" for h in w["held_by"]]
    if w["ahead"]:
        lines.append(f"Ahead of it in its partition: {len(w['ahead'])} job(s); its priority is {w['priority']}:")
        for a in w["ahead"][:5]:
            at = f", planned {when(a['expected_start'])} on {','.join(a['nodes'])}" if a["expected_start"] else ""
            lines.append(f"  job {a['job_id']} ({a['name']}), priority {a['priority']}{at}")
    for t in w["what_if"]:
        start = "now" if t["start"] <= w["now"] else f"at {when(t['start'])}"
        lines.append(f"With {t['option']} it would start {start} on {','.join(t['nodes'])}.")
    return "\n".join(lines) + "\n"


def section(w: dict) -> list[str]:
    """:func:`describe` as the extra lines of ``scontrol show job -d`` (after Slurm's), marked
    as minislurm's: Slurm's scontrol has no such section."""
    head = f"minislurm (not in Slurm's scontrol): why it waits, as 'minislurm why {w['job_id']}' says:"
    return [head] + [f"  {line}" for line in describe(w).splitlines()]


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="minislurm why", description="why a job waits, from the scheduler's plan")
    p.add_argument("job_id", type=int)
    p.add_argument("--json", action="store_true", help="the same as JSON")
    args = p.parse_args(argv)
    try:
        w = Client().call("GET", f"/jobs/{args.job_id}/why")
    except ClientError as exc:
        print(f"minislurm why: error: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write(json.dumps(w, indent=2) + "\n" if args.json else describe(w))
    return 0
