"""Starting a whole minislurm cluster on one machine: ``minislurm cluster up`` and ``LocalCluster``."""

from minislurm.cluster.local import LocalCluster

__all__ = ["LocalCluster"]
