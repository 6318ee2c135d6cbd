#!/bin/sh
# Build the image of minislurm's docker cluster (default name: minislurm-cluster:latest), one
# image for the controller, node, login and hub roles (docker/compose.yaml runs it).  Needs a
# running Docker engine, root, the project's .venv (`make cluster-image` creates it) and, the
# first time only, debootstrap for the base image.  Needs no container registry: the base is
# debootstrapped (docker/common.sh), the wheels and two .debs (tini, libnss-extrausers) are
# fetched on this host with its own pip and apt settings, and `docker build` runs with
# --network none.  Safe to rerun: the base is reused, and Docker's cache makes an unchanged
# image a no-op (a change to minislurm's sources rebuilds only the last layers).
set -eu
. "$(dirname "$0")/../common.sh"
IMAGE=${IMAGE:-minislurm-cluster:latest}

ensure_base
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
# What the roles run: minislurm's runtime, torch (the DDP example), JupyterLab and the widgets
# (the labs on the login node).  Left out: the book, grading and the test tools.
grep -vE '^(jupyter-book|nbval|otter-grader|pytest|hypothesis|schemathesis)==' "$ROOT/requirements.txt" > "$ctx/requirements.txt"
wheels "$ctx/requirements.txt" "$ctx"
# JupyterHub and batchspawner (--hub) with what they need, for a layer of their own.
mkdir "$ctx/hub"
cp "$ROOT/docker/minislurm/hub-requirements.txt" "$ctx/hub/requirements.txt"
wheels "$ctx/hub/requirements.txt" "$ctx/hub"
echo "== Debian packages"
mkdir "$ctx/debs"
(cd "$ctx/debs" && { apt-get download -q tini libnss-extrausers >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null && apt-get download -q tini libnss-extrausers >/dev/null; }; })
mkdir "$ctx/minislurm"
cp -r "$ROOT/pyproject.toml" "$ROOT/README.md" "$ROOT/data" "$ROOT/examples" "$ROOT/labs" "$ctx/minislurm/"
tar -C "$ROOT" --exclude=__pycache__ -c minislurm | tar -C "$ctx/minislurm" -x
find "$ctx/minislurm" -name '.ipynb_checkpoints' -prune -exec rm -rf {} +
echo "== image $IMAGE"
# Labelled with a digest of the sources, so `minislurm cluster up --docker` knows a stale image.
source=$("$PY" "$ROOT/minislurm/cluster/engine.py" --source-hash "$ROOT")
docker build --network none --build-arg BASE="$BASE" --label "minislurm.source=$source" -t "$IMAGE" \
    -f "$ROOT/docker/minislurm/Dockerfile" "$@" "$ctx"
