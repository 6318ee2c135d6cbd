"""What every daemon of a cluster shares, below both the controller and the node agents (as
Slurm's ``src/common``): the cluster key, tokens and step credentials (:mod:`.auth`), the
daemon settings read from slurm.conf (:mod:`.settings`) and the JSON-over-HTTP client they
call each other with (:mod:`.rpc`).  Neither ``ctld`` nor ``slurmd`` imports the other."""
