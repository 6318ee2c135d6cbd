"""Starting a whole minislurm cluster on one machine: ``minislurm cluster up`` and ``LocalCluster``."""

from minislurm.cluster.local import LocalCluster, wait_for

__all__ = ["LocalCluster", "wait_for"]
