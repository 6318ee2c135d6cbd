"""minislurm: a small, real workload manager for learning Slurm.

Layers, lowest first (imports only point down):

* ``core``  the vocabulary: jobs, nodes, partitions, states, reasons, hostlists,
  time formats, ``#SBATCH`` parsing, slurm.conf.  No I/O.
* ``sched`` the policy: priority, placement, backfill.  Pure: ``now`` is an argument.
* ``sim``   the same policy on a SimPy clock, replaying real traces.
* ``common`` what the daemons share: keys and tokens, settings from slurm.conf, the RPC client.
* ``ctld``, ``slurmd`` (neither imports the other), ``cluster``, ``cli``, ``lab``: the live
  cluster and its front ends.  tests/arch/test_layers.py holds the full table.
"""

__version__ = "0.1.0"
