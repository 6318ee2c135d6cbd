"""Pure formatters: view dicts in, the exact text the real Slurm command prints out.

One module per command (squeue, sinfo, sacct, scontrol, sprio, sshare).  None of them does
I/O or reads the clock: the current time is always a parameter.  ``fields`` holds the
``%[.][width]<letter>`` machinery that squeue, sinfo and sprio share.
"""
