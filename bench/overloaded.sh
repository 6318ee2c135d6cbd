#!/bin/bash
# The overloaded replays of issue 14, timed: the Philly-derived trace's first 10,000 jobs on
# 64 x 8 GPUs and the whole trace on 160 x 8, under EASY and conservative.
#   bench/overloaded.sh TREE OUT [REPLAY ...]     # e.g. a `git archive` of a commit; default: all four
# Each line of stderr: the replay's name, its wall time and its CPU time (user + system).
# The jobs.csv of each run lands in OUT/NAME/ (compare trees with cmp, as bench/same_decisions.sh).
set -u
TREE=$1; OUT=$2; shift 2
mkdir -p "$OUT"
PY=${PY:-python}  # PYTHONSAFEPATH below: the TREE given is imported, not the current directory
T=$(dirname "$0")/../data/traces
run() { name=$1; shift; /usr/bin/time -f "$name %e s wall, %U+%S s CPU" env PYTHONSAFEPATH=1 PYTHONPATH="$TREE" "$PY" -m minislurm.cli.main \
          sim --no-progress --no-charts --out "$OUT/$name" --trace $T/rfold_philly_trace.csv --gpus-per-node 8 "$@" >/dev/null; }
for name in "${@:-philly64-10k-easy philly64-10k-conservative philly160-easy philly160-conservative}"; do
  for one in $name; do
    case $one in
      philly64-10k-*) run $one --nodes 64 --limit-jobs 10000 --policy ${one##*-} ;;
      philly160-*) run $one --nodes 160 --policy ${one##*-} ;;
      *) echo "unknown replay: $one" >&2; exit 2 ;;
    esac
  done
done
