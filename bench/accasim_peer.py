"""The overloaded replay side by side with AccaSim, the peer issue 27 names (item 3).

AccaSim (pip ``accasim``) is a Python workload-management simulator with an EASY backfilling
dispatcher.  This gives it the jobs minislurm replays -- the Philly trace (or its first ``--jobs``
jobs), read by minislurm's own trace reader -- as an SWF file, on the same 160 x 8 GPUs, and
times both in one run, one process each, CPU seconds (user + system):

* AccaSim: ``EASYBackfilling(FirstFit())``; a GPU is its ``core`` (one SWF "processor"), as a
  job's GPUs are the only thing the replay packs.  Its SWF reader makes every processor a
  request of its own, and FirstFit puts as many of a job's as fit on each node in turn, so a
  job may take a few GPUs on any nodes with room, where minislurm asks for equal shares of
  whole 8-GPU nodes: the same stream of jobs, a looser packing rule.
* minislurm: ``minislurm sim --policy easy`` on the same jobs and nodes.

AccaSim lives in a virtual environment of its own, not in the project's (it wants its own
numpy, scipy and matplotlib):

    python -m venv out/accasim && out/accasim/bin/pip install accasim
    python bench/accasim_peer.py [--jobs N] [--nodes 160] [--accasim-python out/accasim/bin/python]

Prints one line per simulator and, on its last line, one JSON object.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

from minislurm.sim.traces import read_trace

ROOT = Path(__file__).resolve().parent.parent
TRACE = ROOT / "data" / "traces" / "rfold_philly_trace.csv"

# Run under AccaSim's Python: argv = workload, system config, results folder.
ACCASIM = """
import collections, collections.abc, sys
for name in ("Mapping", "MutableMapping", "Sequence", "Iterable", "Callable"):  # AccaSim 1.1.3 predates 3.10
    setattr(collections, name, getattr(collections.abc, name))
from accasim.base.simulator_class import Simulator
from accasim.base.scheduler_class import EASYBackfilling
from accasim.base.allocator_class import FirstFit
workload, config, results = sys.argv[1:4]
Simulator(workload, config, EASYBackfilling(FirstFit()), RESULTS_FOLDER_NAME=results,
          scheduling_output=True, statistics_output=True, show_statistics=False).start_simulation()
"""


def write_swf(path: Path, jobs) -> None:
    """The jobs as SWF lines (18 fields; -1 where unknown): a job's GPUs are its processors,
    its time limit the requested time."""
    with path.open("w") as out:
        for number, job in enumerate(jobs, 1):
            gpus = job.nodes * job.gpus_per_node
            fields = [number, int(job.submit), -1, int(round(job.runtime)), gpus, -1, -1, gpus,
                      int(job.time_limit), -1, 1, 1, 1, -1, 1, 1, -1, -1]
            out.write(" ".join(map(str, fields)) + "\n")


def timed(command: list[str], cwd: Path) -> float:
    """CPU seconds of the command (user + system of the finished child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return round(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, 1)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--jobs", type=int, default=None, help="the trace's first JOBS jobs (default: all)")
    p.add_argument("--nodes", type=int, default=160)
    p.add_argument("--gpus-per-node", type=int, default=8)
    p.add_argument("--accasim-python", default=str(ROOT / "out" / "accasim" / "bin" / "python"))
    args = p.parse_args()
    jobs = read_trace(str(TRACE), cores_per_node=32, gpus_per_node=args.gpus_per_node, limit=args.jobs).jobs
    with tempfile.TemporaryDirectory(prefix="accasim-peer-") as tmp:
        work = Path(tmp)
        write_swf(work / "jobs.swf", jobs)
        (work / "system.json").write_text(json.dumps({
            "system_name": f"philly{args.nodes}", "start_time": 0,
            "equivalence": {"processor": {"core": 1}},
            "groups": {"g0": {"core": args.gpus_per_node}}, "resources": {"g0": args.nodes}}))
        (work / "run_accasim.py").write_text(ACCASIM)
        accasim = timed([args.accasim_python, "run_accasim.py", "jobs.swf", "system.json", "results"], work)
        dispatched = sum(1 for plan in (work / "results").glob("sched-*") for _ in plan.open())  # a line a job
        limit = ["--limit-jobs", str(args.jobs)] if args.jobs else []
        mini = timed([sys.executable, "-m", "minislurm.cli.main", "sim", "--no-progress", "--no-charts",
                      "--out", str(work / "minislurm"), "--trace", str(TRACE), "--nodes", str(args.nodes),
                      "--gpus-per-node", str(args.gpus_per_node), "--policy", "easy", *limit], ROOT)
        replayed = sum(1 for _ in (work / "minislurm" / "jobs.csv").open()) - 1
    result = {"jobs": len(jobs), "nodes": args.nodes, "gpus_per_node": args.gpus_per_node,
              "accasim_cpu_s": accasim, "minislurm_cpu_s": mini, "accasim_jobs": dispatched,
              "minislurm_jobs": replayed, "ratio": round(accasim / mini, 1) if mini else None}
    print(f"AccaSim EASYBackfilling(FirstFit): {accasim} s of CPU ({dispatched:,} of {len(jobs):,} jobs dispatched)",
          file=sys.stderr)
    print(f"minislurm sim --policy easy:      {mini} s of CPU ({replayed:,} jobs in jobs.csv)", file=sys.stderr)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
