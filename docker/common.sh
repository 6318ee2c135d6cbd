# Shared by the image build scripts (grader/build.sh, minislurm/build.sh): the debootstrapped
# base image and the wheels, without any container registry.  Sourced, not run.
#  - the base image is Debian bookworm debootstrapped from the mirror apt already uses, built once;
#  - the Python packages are wheels downloaded here, with this machine's pip settings, at the
#    versions installed in .venv (the ones the tests pass with); the builds have no network.
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BASE=${BASE:-minislurm-base:bookworm}
PY=${PY:-$ROOT/.venv/bin/python}
MIRROR=${MIRROR:-$(sed -n 's/^URIs: *\([^ ]*\/debian\)$/\1/p; s/^deb \([^ ]*\/debian\) bookworm .*/\1/p' \
    /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null | head -n 1)}
MIRROR=${MIRROR:-http://deb.debian.org/debian}

ensure_base() {
    docker image inspect "$BASE" >/dev/null 2>&1 && return 0
    command -v debootstrap >/dev/null \
        || { echo "error: no base image $BASE and no debootstrap to make it (apt-get install debootstrap)" >&2; exit 1; }
    echo "== base image $BASE from $MIRROR"
    rootfs=$(mktemp -d)
    debootstrap --variant=minbase --include=python3,python3-venv bookworm "$rootfs" "$MIRROR"
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    tar -C "$rootfs" -c . | docker import -c 'CMD ["/bin/bash"]' - "$BASE"
    rm -rf "$rootfs"
}

# wheels REQUIREMENTS OUT [MORE...]: the wheels for the base image's Python and C library
# (bookworm: 3.11.2, glibc 2.36) at .venv's versions (except where one needs a newer Python than
# the image has) in OUT/wheels, with the pins in OUT/constraints.txt.  pip's own cache keeps
# what it fetched, so a second build downloads nothing.
wheels() {
    local reqs=$1 out=$2
    shift 2
    local more="$*"
    set -- $(docker run --rm "$BASE" python3 -c 'import platform; print(platform.python_version(), platform.libc_ver()[1])')
    local pyver=$1 glibc_minor=${2#2.}
    mkdir -p "$out/wheels"
    "$PY" - "$pyver" > "$out/constraints.txt" <<'PYTHON'
import importlib.metadata as md, sys
from packaging.specifiers import SpecifierSet
for d in md.distributions():
    name, needs = d.metadata["Name"], d.metadata.get("Requires-Python")
    if name not in ("minislurm", "pip", "setuptools", "wheel") and SpecifierSet(needs or "").contains(sys.argv[1]):
        print(f"{name}=={d.version}")
PYTHON
    echo "== wheels for Python $pyver, glibc 2.$glibc_minor"
    "$PY" -m pip download -q -d "$out/wheels" --only-binary=:all: --implementation cp --python-version "$pyver" \
        --platform manylinux2014_x86_64 $(seq -f "--platform manylinux_2_%g_x86_64" 17 "$glibc_minor") \
        -r "$reqs" -c "$out/constraints.txt" $more
}
