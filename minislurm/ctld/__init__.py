"""The controller daemon (like slurmctld).  Built in the live-cluster issue."""
