"""Grading the lab notebooks: ``minislurm grade assign`` and ``minislurm grade run``.

The labs in ``labs/`` stay in a simple tag convention (an ``answer`` cell with the solution between
``# BEGIN SOLUTION`` / ``# END SOLUTION`` and its points in its metadata, ``check`` cells of plain
asserts, ``hidden-check`` cells), so nbval keeps running them as ordinary notebooks.  otter-grader
makes the student versions; grading is minislurm's own, so that no check trusts the submission:

- :mod:`.exercises` reads the tagged cells of a lab and enforces the check-cell convention;
- :mod:`.testgen` turns a cell of asserts into one of otter's test cases (the students' grader.check);
- :mod:`.master` writes the otter master notebook (questions, solutions, public/hidden tests);
- :mod:`.assign` runs ``otter assign``, lays out the student notebooks and autograder zips, and
  grades the worked solutions as a submission;
- :mod:`.runner` grades one submission: its cells in a Jupyter kernel under time limits, then the
  checks in :mod:`.referee`, a fresh process that gets the answers as data (:mod:`.wire`); a
  question that ran past a limit is not graded, never 0 (a slow machine is no wrong answer);
- :mod:`.sandbox` starts the runner, locally or in a network-less Docker container, feeds it on
  stdin and enforces the wall-clock limit of the whole submission;
- :mod:`.folder` grades a folder of submissions; :mod:`.report` writes grades.csv and the
  instructor's summaries beside it;
- :mod:`.quick` skips one slow import that none of this uses (it halves a submission's time).

Everything imports lazily from the CLI (``minislurm.cli.grade``): otter pulls in pandas and
nbconvert, which the rest of minislurm never needs.
"""
