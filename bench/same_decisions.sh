#!/bin/bash
# The replays whose jobs.csv must not change when the scheduler is made faster (issue 14).
#   bench/same_decisions.sh OLD_TREE OLD_OUT     # e.g. a `git archive` of the commit before
#   bench/same_decisions.sh NEW_TREE NEW_OUT
#   for d in OLD_OUT/*/; do cmp $d/jobs.csv NEW_OUT/$(basename $d)/jobs.csv; done
# Each line of stderr: the replay's name and its wall time.
set -u
TREE=$1; OUT=$2; mkdir -p "$OUT"
PY=${PY:-python}  # PYTHONSAFEPATH below: the TREE given is imported, not the current directory
T=$(dirname "$0")/../data/traces
run() { name=$1; shift; /usr/bin/time -f "$name %e s" env PYTHONSAFEPATH=1 PYTHONPATH="$TREE" "$PY" -m minislurm.cli.main sim \
          --no-progress --no-charts --out "$OUT/$name" "$@" >/dev/null; }
for p in conservative easy fifo; do
  run philly320-$p --trace $T/rfold_philly_trace.csv --nodes 320 --gpus-per-node 8 --policy $p
  run hpc2n-$p --trace $T/alea_hpc2n.swf --policy $p
  run lesson-$p --trace $T/lesson_small.csv --nodes 4 --gpus-per-node 8 --policy $p
  run lublin-$p --trace $T/lublin_256.swf --policy $p
done
for p in easy conservative; do
  run philly64-10k-$p --trace $T/rfold_philly_trace.csv --nodes 64 --gpus-per-node 8 --policy $p --limit-jobs 10000
done
