"""Starting a whole minislurm cluster: ``minislurm cluster up [--docker]``, ``LocalCluster``
(processes on this machine), ``DockerCluster`` (containers) and ``make_cluster`` (either, by
``$MINISLURM_CLUSTER``)."""

from minislurm.cluster.base import Cluster, chosen_kind, make_cluster, wait_for
from minislurm.cluster.local import LocalCluster


def __getattr__(name):  # DockerCluster on first use: local clusters never import it
    if name == "DockerCluster":
        from minislurm.cluster.docker import DockerCluster
        return DockerCluster
    raise AttributeError(name)


__all__ = ["Cluster", "DockerCluster", "LocalCluster", "chosen_kind", "make_cluster", "wait_for"]
