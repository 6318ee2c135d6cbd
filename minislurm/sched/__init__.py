"""Scheduling policy.  Pure: it reads plain data and ``now``; it never does I/O or reads a clock."""
