#!/bin/bash
# Start one container of the twin: `controller`, `node` or `login`.  MUNGE runs everywhere
# (every Slurm message is signed with the shared key); then the role's daemons, in the foreground.
set -euo pipefail
role=${1:-login}
runuser -u munge -- /usr/sbin/munged

case $role in
controller)
    # MariaDB and slurmdbd first: slurmctld registers the cluster with slurmdbd when it starts.
    mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld
    runuser -u mysql -- /usr/sbin/mariadbd --skip-networking=0 --bind-address=127.0.0.1 &
    until mariadb -e 'select 1' >/dev/null 2>&1; do sleep 0.2; done
    mariadb -e "CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'slurm';
                GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';"
    /usr/sbin/slurmdbd -D &
    until sacctmgr -n list cluster >/dev/null 2>&1; do sleep 0.2; done
    # The cluster, and an account for the lab user named like minislurm's default one.
    sacctmgr -i add cluster minislurm-twin >/dev/null || true
    sacctmgr -i add account default >/dev/null || true
    sacctmgr -i add user student account=default >/dev/null || true
    exec /usr/sbin/slurmctld -D
    ;;
node)
    for i in 0 1 2 3; do [ -e /dev/nvidia$i ] || mknod -m 666 /dev/nvidia$i c 195 $i; done
    exec /usr/sbin/slurmd -D
    ;;
login)
    exec sleep infinity
    ;;
*)
    echo "usage: entrypoint.sh controller|node|login" >&2; exit 2
    ;;
esac
