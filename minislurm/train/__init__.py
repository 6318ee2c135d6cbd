"""Helpers for training jobs: the Slurm -> torch.distributed mapping and exact checkpoints.

Nothing here imports torch at module level except :mod:`checkpoint`, so the mapping can be
used (and tested) without it.
"""
