"""minislurm: a small, real workload manager for learning Slurm.

Layers, lowest first (imports only point down):

* ``core``  the vocabulary: jobs, nodes, partitions, states, reasons, hostlists,
  time formats, ``#SBATCH`` parsing, slurm.conf.  No I/O.
* ``sched`` the policy: priority, placement, backfill.  Pure: ``now`` is an argument.
* ``sim``   the same policy on a SimPy clock, replaying real traces.
* ``ctld``, ``slurmd``, ``cli``, ``lab``: the live cluster and its front ends.
"""

__version__ = "0.1.0"
