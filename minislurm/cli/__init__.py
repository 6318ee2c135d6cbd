"""The commands people type: ``minislurm sim``, ``minislurm demo`` and, later, sbatch, squeue, ..."""
