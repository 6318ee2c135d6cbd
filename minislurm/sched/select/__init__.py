"""Node selection plugins (Slurm's ``SelectType``).  minislurm has one: ``select/cons_tres``."""
