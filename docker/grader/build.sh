#!/bin/sh
# Build the image `minislurm grade run --docker auto|always` grades in (default name: minislurm-grader).
# Needs a running Docker engine, debootstrap and root (for debootstrap), and the project's .venv
# (`make grader-image` creates it).  Needs no container registry (docker/common.sh: a
# debootstrapped base, wheels from this host; the build itself has no network).
# Safe to rerun: the base is reused, and Docker's cache makes an unchanged image a no-op.
set -eu
. "$(dirname "$0")/../common.sh"
IMAGE=${IMAGE:-minislurm-grader}

ensure_base
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
# What grading runs: minislurm's runtime requirements, otter, the Jupyter kernel and torch (lab 10's
# pre-flight all-reduce).  Left out: the book, the lab runner and the test tools.
grep -vE '^(jupyter-book|jupyterlab|nbval|pytest|hypothesis|schemathesis)==' "$ROOT/requirements.txt" \
    > "$ctx/requirements.txt"
wheels "$ctx/requirements.txt" "$ctx" "setuptools>=68" wheel  # the last two: to install minislurm itself without the network
mkdir "$ctx/minislurm"
cp -r "$ROOT/pyproject.toml" "$ROOT/README.md" "$ROOT/data" "$ctx/minislurm/"
tar -C "$ROOT" --exclude=__pycache__ -c minislurm | tar -C "$ctx/minislurm" -x
echo "== image $IMAGE"
# Labelled with a digest of the sources, so `minislurm grade run --docker` knows a stale image.
source=$("$PY" "$ROOT/minislurm/cluster/engine.py" --source-hash "$ROOT")
docker build --network none --build-arg BASE="$BASE" --label "minislurm.source=$source" -t "$IMAGE" \
    -f "$ROOT/docker/grader/Dockerfile" "$@" "$ctx"
