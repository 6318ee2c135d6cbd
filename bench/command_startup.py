"""What a command costs before it does anything (issue 27 item 1): CPU time per command, and the
part of it that is imports (``python -X importtime``), for source trees side by side.

Each tree is compiled to bytecode first (as an installed package is), then every command runs
``--runs`` times per tree, interleaved, against one local cluster (2 nodes), with the system's
python3 as a student's commands run.  A child's CPU time is read from ``os.wait4``.  Reported
per tree and command: the median CPU ms, the median wall ms, and the imports' ms (the sum of
importtime's top-level entries, one run); Python's own start (``python3 -c pass``) first.

    python bench/command_startup.py OLD_TREE NEW_TREE [--runs 30]    # e.g. a `git archive` of a commit

Prints a table on stderr and one JSON object on its last line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = "/usr/bin/python3"
RUN = "import sys; from minislurm.cli.main import main; sys.exit(main(sys.argv[1:]))"
COMMANDS = (["squeue"], ["sacct", "-X"], ["scancel", "999999"], ["sbatch", "-o", "/dev/null", "--wrap", "true"],
            ["srun", "-N1", "true"])


def timed(argv: list[str], env: dict) -> tuple[float, float]:
    """(CPU ms, wall ms) of one run of ``argv``."""
    began = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(proc.pid, 0)
    wall = (time.perf_counter() - began) * 1000
    return (usage.ru_utime + usage.ru_stime) * 1000, wall


def import_ms(tree: str, command: list[str], env: dict) -> float:
    """The sum of ``-X importtime``'s top-level entries (microseconds, cumulative) for one run."""
    r = subprocess.run([PYTHON, "-X", "importtime", "-c", RUN, *command], env={**env, "PYTHONPATH": tree},
                       capture_output=True, text=True)
    total = 0
    for line in r.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            _, cumulative, name = line.split("|")
            if not name.startswith("  ") and cumulative.strip().isdigit():
                total += int(cumulative)
    return total / 1000


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trees", nargs="+")
    p.add_argument("--runs", type=int, default=30)
    args = p.parse_args()
    sys.path.insert(0, str(ROOT))
    from minislurm.cluster import LocalCluster
    trees = [str(Path(t).resolve()) for t in args.trees]
    for tree in trees:
        subprocess.run([PYTHON, "-m", "compileall", "-q", f"{tree}/minislurm"], check=True, stdout=subprocess.DEVNULL)
    with tempfile.TemporaryDirectory(prefix="startup-") as tmp:
        cluster = LocalCluster(nodes=2, gpus_per_node=8, dir=Path(tmp) / "c").up(timeout=60)
        try:
            # PYTHONSAFEPATH: each run imports its PYTHONPATH tree, not the one in the current directory
            env = {"PATH": "/usr/bin:/bin", "HOME": tmp, "SLURM_CONF": str(cluster.conf_path), "LANG": "C.UTF-8",
                   "PYTHONSAFEPATH": "1"}
            rows: dict = {"python3 -c pass": {t: [timed([PYTHON, "-c", "pass"], env) for _ in range(args.runs)]
                                              for t in trees[:1]}}
            for command in COMMANDS:
                runs = {t: [] for t in trees}
                for _ in range(args.runs):
                    for t in trees:
                        runs[t].append(timed([PYTHON, "-c", RUN, *command], {**env, "PYTHONPATH": t}))
                rows[" ".join(command)] = runs
            imports = {" ".join(c): {t: import_ms(t, c, env) for t in trees} for c in COMMANDS}
        finally:
            cluster.down()
    out = {"bench": "command_startup", "runs": args.runs, "python": PYTHON, "trees": trees, "commands": {}}
    print(f"{'command':38}" + "".join(f"{Path(t).name[:24]:>34}" for t in trees), file=sys.stderr)
    for name, runs in rows.items():
        cells = {}
        for t, samples in runs.items():
            cells[t] = {"cpu_ms": round(statistics.median(s[0] for s in samples), 1),
                        "wall_ms": round(statistics.median(s[1] for s in samples), 1),
                        "imports_ms": round(imports.get(name, {}).get(t, 0.0), 1)}
        out["commands"][name] = cells
        print(f"{name:38}" + "".join(f"{c['cpu_ms']:>9.1f} cpu {c['wall_ms']:>7.1f} wall {c['imports_ms']:>5.1f} imp"
                                     for c in cells.values()), file=sys.stderr)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
