#!/bin/sh
# Build the image `minislurm grade run --docker auto|always` grades in (default name: minislurm-grader).
# Needs a running Docker engine, debootstrap and root (for debootstrap), and the project's .venv
# (`make grader-image` creates it).  Needs no container registry:
#  - the base image is Debian bookworm debootstrapped from the mirror apt already uses, built once;
#  - the Python packages are wheels downloaded here, with this machine's pip settings, at the
#    versions installed in .venv (the ones the tests pass with); the build itself has no network.
# Safe to rerun: the base is reused, and Docker's cache makes an unchanged image a no-op.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BASE=${BASE:-minislurm-base:bookworm}
IMAGE=${IMAGE:-minislurm-grader}
PY=${PY:-$ROOT/.venv/bin/python}
MIRROR=${MIRROR:-$(sed -n 's/^URIs: *\([^ ]*\/debian\)$/\1/p; s/^deb \([^ ]*\/debian\) bookworm .*/\1/p' \
    /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null | head -n 1)}
MIRROR=${MIRROR:-http://deb.debian.org/debian}

if ! docker image inspect "$BASE" >/dev/null 2>&1; then
    echo "== base image $BASE from $MIRROR"
    rootfs=$(mktemp -d)
    debootstrap --variant=minbase --include=python3,python3-venv bookworm "$rootfs" "$MIRROR"
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    tar -C "$rootfs" -c . | docker import -c 'CMD ["/bin/bash"]' - "$BASE"
    rm -rf "$rootfs"
fi

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
# What grading runs: minislurm's runtime requirements, otter and the Jupyter kernel.  Left out:
# torch (no lab trains; the labs' jobs are bash), the book, the lab runner and the test tools.
grep -vE '^(torch|jupyter-book|jupyterlab|nbval|pytest|hypothesis|schemathesis)==' "$ROOT/requirements.txt" \
    > "$ctx/requirements.txt"
# The wheels are chosen for the base image's Python and C library (bookworm: 3.11.2, glibc 2.36),
# at .venv's versions except where one needs a newer Python than the image has.
set -- $(docker run --rm "$BASE" python3 -c 'import platform; print(platform.python_version(), platform.libc_ver()[1])')
pyver=$1 glibc_minor=${2#2.}
"$PY" - "$pyver" > "$ctx/constraints.txt" <<'PYTHON'
import importlib.metadata as md, sys
from packaging.specifiers import SpecifierSet
for d in md.distributions():
    name, needs = d.metadata["Name"], d.metadata.get("Requires-Python")
    if name not in ("minislurm", "pip", "setuptools", "wheel") and SpecifierSet(needs or "").contains(sys.argv[1]):
        print(f"{name}=={d.version}")
PYTHON
echo "== wheels for Python $pyver, glibc 2.$glibc_minor"
"$PY" -m pip download -q -d "$ctx/wheels" --only-binary=:all: --implementation cp --python-version "$pyver" \
    --platform manylinux2014_x86_64 $(seq -f "--platform manylinux_2_%g_x86_64" 17 "$glibc_minor") \
    -r "$ctx/requirements.txt" -c "$ctx/constraints.txt" \
    "setuptools>=68" wheel  # the last two: to install minislurm itself without the network
mkdir "$ctx/minislurm"
cp -r "$ROOT/pyproject.toml" "$ROOT/README.md" "$ROOT/data" "$ctx/minislurm/"
tar -C "$ROOT" --exclude=__pycache__ -c minislurm | tar -C "$ctx/minislurm" -x
echo "== image $IMAGE"
docker build --network none --build-arg BASE="$BASE" -t "$IMAGE" -f "$ROOT/docker/grader/Dockerfile" "$ctx"
