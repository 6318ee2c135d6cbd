#!/bin/bash
# The real-Slurm twin: `cluster.sh build|up|down|status|exec [container] [command...]`.
#
#   build   the image minislurm-slurm:22.05 (Debian's Slurm 22.05, MUNGE, MariaDB, torch CPU)
#           FROM minislurm-base:bookworm; packages from the Debian mirror, wheels from pip
#   up      a network, the controller, compute nodes c1 and c2 and a login node; returns when
#           both nodes are idle (idempotent: a running twin is left as it is)
#   down    removes the containers and the network (the image and the shared folder stay)
#   exec    a command (default: a shell) as the lab user `student` on a container (default: login)
#
# Every container mounts $SHARED (default out/real-slurm in the repository) at /shared: the
# cluster's shared file system, with a copy of examples/ and a work folder for jobs.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
IMAGE=${IMAGE:-minislurm-slurm:22.05}
BASE=${BASE:-minislurm-base:bookworm}
NET=minislurm-slurm
SHARED=${SHARED:-$ROOT/out/real-slurm}
PY=${PY:-$ROOT/.venv/bin/python}
# The nodes first: slurmctld resolves every node's name when it starts (and waits 10 s per
# name it cannot resolve yet); the slurmd daemons keep trying until the controller answers.
CONTAINERS="c1 c2 login slurmctld"

build() {
    docker image inspect "$BASE" >/dev/null \
        || { echo "no base image $BASE (docker/grader/build.sh builds it)" >&2; exit 1; }
    ctx=$(mktemp -d)
    trap 'rm -rf "$ctx"' EXIT
    cp "$HERE"/{Dockerfile,slurm.conf,gres.conf,slurmdbd.conf,entrypoint.sh} "$ctx/"
    tar -C "$ROOT" --exclude=__pycache__ -c minislurm | tar -C "$ctx" -x
    # The versions the project's own environment runs (torch==2.13.0 is a CPU wheel on this machine).
    numpy=$("$PY" -c 'import numpy; print(numpy.__version__)')
    "$PY" -m pip download -qq -d "$ctx/wheels" --only-binary=:all: --python-version 3.11 \
        --platform manylinux_2_28_x86_64 "torch==2.13.0" "numpy==$numpy"
    docker build "$@" --build-arg BASE="$BASE" -t "$IMAGE" "$ctx"
}

running() { [ "$(docker inspect -f '{{.State.Running}}' "minislurm-$1" 2>/dev/null)" = true ]; }

up() {
    docker image inspect "$IMAGE" >/dev/null 2>&1 || build
    mkdir -p "$SHARED/work"
    rm -rf "$SHARED/examples" && cp -r "$ROOT/examples" "$SHARED/examples"
    chown -R 1000:1000 "$SHARED" 2>/dev/null || chmod -R a+rwX "$SHARED"
    docker network inspect "$NET" >/dev/null 2>&1 || docker network create "$NET" >/dev/null
    for name in $CONTAINERS; do
        running "$name" && continue
        docker rm -f "minislurm-$name" >/dev/null 2>&1 || true
        case $name in slurmctld) role=controller ;; login) role=login ;; *) role=node ;; esac
        docker run -d --name "minislurm-$name" --hostname "$name" --network "$NET" --network-alias "$name" \
            -v "$SHARED:/shared" "$IMAGE" "$role" >/dev/null
    done
    wait_for 120 "nodes c1 and c2 to be idle" \
        sh -c "docker exec minislurm-login sinfo -h -N -o '%N %t' | grep -c ' idle$' | grep -qx 2"
}

wait_for() {  # seconds, what, command...
    local deadline=$((SECONDS + $1)) what=$2; shift 2
    until "$@" >/dev/null 2>&1; do
        if [ $SECONDS -ge $deadline ]; then echo "timed out waiting for $what" >&2; exit 1; fi
        sleep 0.5
    done
}

down() {
    for name in $CONTAINERS; do docker rm -f "minislurm-$name" >/dev/null 2>&1 || true; done
    docker network rm "$NET" >/dev/null 2>&1 || true
}

cmd=${1:-}; shift || true
case $cmd in
build) build "$@" ;;
up) up ;;
down) down ;;
status)
    for name in $CONTAINERS; do
        state=$(docker inspect -f '{{.State.Status}}' "minislurm-$name" 2>/dev/null) || state=absent
        echo "minislurm-$name: $state"
    done ;;
exec)
    where=${1:-login}; shift || true
    [ $# -gt 0 ] || set -- bash -l
    tty=; [ -t 0 ] && tty=-t
    docker exec -i $tty -u student -w /shared/work "minislurm-$where" "$@" ;;
*) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
