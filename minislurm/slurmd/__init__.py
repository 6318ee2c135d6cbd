"""The node agent (like slurmd).  Built in the live-cluster issue."""
