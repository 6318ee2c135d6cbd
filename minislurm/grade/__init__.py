"""Grading the lab notebooks with otter-grader: ``minislurm grade assign`` and ``minislurm grade run``.

The labs in ``labs/`` stay in a simple tag convention (an ``answer`` cell with the solution between
``# BEGIN SOLUTION`` / ``# END SOLUTION``, ``check`` cells of plain asserts, ``hidden-check``
cells), so nbval keeps running them as ordinary notebooks.  This package turns them into what
otter-grader understands, and grades folders of submissions without otter's Docker-only
``otter grade``:

- :mod:`.exercises` reads the tagged cells of a lab;
- :mod:`.testgen` turns a cell of asserts into one of otter's exception-based test cases;
- :mod:`.master` writes the otter master notebook (questions, solutions, public/hidden tests);
- :mod:`.assign` runs ``otter assign`` and lays out the student notebooks and autograder zips;
- :mod:`.runner` grades one submission with ``otter run`` under a per-cell time limit (it runs in
  its own process, in a throwaway folder);
- :mod:`.sandbox` starts that process, locally or in a network-less Docker container, and
  enforces the wall-clock limit of the whole submission;
- :mod:`.folder` grades a folder of submissions into ``grades.csv``;
- :mod:`.quick` skips one slow import that none of this uses (it halves a submission's time).

Everything imports lazily from the CLI (``minislurm.cli.grade``): otter pulls in pandas and
nbconvert, which the rest of minislurm never needs.
"""
