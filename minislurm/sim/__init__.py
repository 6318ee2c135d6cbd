"""The scheduling policy on a SimPy clock, replaying real workload traces."""
