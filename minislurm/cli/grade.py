"""``minislurm grade``: otter-grader for the labs (``assign``, then ``run`` on the submissions).

    minislurm grade assign [LABS...] --out DIST
    minislurm grade run SUBMISSIONS_DIR (--autograder ZIP | --dist DIST) [--timeout S] [--out grades.csv]
                        [--student NAME ...] [--rerun-timed-out]

``grade run`` exits with status 3 when a question is left not graded (timed out: rerun it).

Imports stay inside the subcommands: otter and nbconvert take seconds to import.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from minislurm.cli.parsing import ArgumentParser

USAGE = """usage: minislurm grade <command> [options]

commands:
  assign   student notebooks and autograder zips from the tagged labs
  run      grade a folder of submitted notebooks into grades.csv
"""


def default_labs() -> Path:
    """labs/ here, or the repository's labs/ (the package is installed in editable mode)."""
    here = Path("labs")
    return here if here.is_dir() else Path(__file__).resolve().parents[2] / "labs"


def assign_parser() -> ArgumentParser:
    p = ArgumentParser(prog="minislurm grade assign",
                       description="Write DIST/student/<lab>.ipynb and DIST/autograder/<lab>-autograder.zip "
                                   "for each tagged lab notebook.")
    p.add_argument("labs", nargs="*", type=Path, help="lab notebooks or folders (default: the repository's labs/)")
    p.add_argument("--out", type=Path, default=Path("dist"), help="output folder (default: dist)")
    p.add_argument("--no-run-tests", action="store_true",
                   help="skip grading the worked solutions against every test (faster)")
    p.add_argument("--jobs", type=int, default=1, help="labs assigned at once (default: 1)")
    return p


def run_parser() -> ArgumentParser:
    p = ArgumentParser(prog="minislurm grade run",
                       description="Grade every *.ipynb under SUBMISSIONS_DIR (<student>.ipynb or "
                                   "<student>/<lab>.ipynb), each in isolation, into a CSV.")
    p.add_argument("submissions", type=Path, metavar="SUBMISSIONS_DIR")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--autograder", type=Path, metavar="ZIP", help="one lab's autograder zip")
    src.add_argument("--dist", type=Path, help="the output folder of 'grade assign' (every lab)")
    p.add_argument("--out", type=Path, default=Path("grades.csv"), help="CSV to write (default: grades.csv)")
    p.add_argument("--timeout", type=float, default=120.0, metavar="S",
                   help="time limit of one notebook cell; a cell past it is interrupted and only "
                        "its question is left not graded, to rerun (default: 120)")
    p.add_argument("--submission-timeout", type=float, metavar="S",
                   help="wall-clock limit of a whole submission; past it no question of it is graded "
                        "(default: 900, or 5 x --timeout if that is more)")
    p.add_argument("--jobs", type=int, default=1, help="submissions graded at once (default: 1)")
    p.add_argument("--student", action="append", metavar="NAME",
                   help="regrade only this student (repeatable): their rows of an existing --out CSV are "
                        "replaced, the others kept")
    p.add_argument("--rerun-timed-out", action="store_true",
                   help="grade again only the submissions with a question 'not graded (timed out ...)' "
                        "in the existing --out CSV (give a larger --timeout), and replace those rows")
    p.add_argument("--image", default="minislurm-grader",
                   help="Docker image to grade in when a Docker engine answers (default: minislurm-grader)")
    p.add_argument("--docker", choices=["auto", "never", "always"], default="auto",
                   help="auto: Docker when the engine answers and the image exists (default)")
    return p


def assign_main(argv: list[str]) -> int:
    args = assign_parser().parse_args(argv)
    from minislurm.grade.assign import AssignError, assign, gradable_labs
    from minislurm.grade.exercises import LabFormatError

    paths = args.labs or [default_labs()]
    missing = [p for p in paths if not p.exists()]
    if missing:
        print(f"minislurm grade assign: error: no such file or folder: {missing[0]}", file=sys.stderr)
        return 1
    try:
        labs = gradable_labs(paths)
    except LabFormatError as e:
        print(f"minislurm grade assign: error: {e}", file=sys.stderr)
        return 1
    if not labs:
        print("minislurm grade assign: error: no lab notebook with tagged exercises", file=sys.stderr)
        return 1
    t0 = time.monotonic()
    print(f"Assigning {len(labs)} labs into {args.out} ({args.jobs} at a time):", flush=True)
    count = iter(range(1, len(labs) + 1))

    def progress(a) -> None:
        print(f"[{next(count)}/{len(labs)}] {a.line()}", flush=True)
    try:
        done = assign(labs, args.out, run_tests=not args.no_run_tests, jobs=args.jobs, done=progress)
    except (AssignError, LabFormatError, ValueError) as e:
        print(f"minislurm grade assign: error: {e}", file=sys.stderr)
        return 1
    checked = "" if args.no_run_tests else "; the worked solutions pass every test"
    print(f"{len(done)} labs in {time.monotonic() - t0:.1f} s{checked}")
    return 0


def rebuild_if_stale(image: str) -> None:
    """The checks run the image's copy of minislurm: an image older than the sources here is
    rebuilt first (Docker's cache keeps that short), so a grade never depends on stale code."""
    from minislurm.cluster import engine

    try:  # a no-op when the image's label is the sources' digest
        engine.ensure_image(image, build_script=engine.GRADER_BUILD_SCRIPT)
    except engine.EngineError as e:
        raise RuntimeError(f"the image {image!r} is older than minislurm here, and rebuilding it failed: {e}") from None


def run_main(argv: list[str]) -> int:
    args = run_parser().parse_args(argv)
    from minislurm.grade import folder, report, sandbox

    if not args.submissions.is_dir():
        print(f"minislurm grade run: error: {args.submissions} is not a folder", file=sys.stderr)
        return 1
    for opt in ("autograder", "dist"):
        path = getattr(args, opt)
        if path is not None and not path.exists():
            print(f"minislurm grade run: error: --{opt} {path} does not exist", file=sys.stderr)
            return 1
    if args.timeout <= 0 or (args.submission_timeout is not None and args.submission_timeout <= 0):
        print("minislurm grade run: error: time limits must be positive", file=sys.stderr)
        return 1
    total = args.submission_timeout or max(900.0, 5 * args.timeout)
    try:
        box = sandbox.choose(args.image, docker=args.docker)
        if box.name == "docker":
            rebuild_if_stale(args.image)
        subs = folder.find_submissions(args.submissions, autograder=args.autograder, dist=args.dist)
        labs = folder.labs_of(subs)  # of every submission found: a regrade's rows match the first run's
    except (RuntimeError, ValueError) as e:
        print(f"minislurm grade run: error: {e}", file=sys.stderr)
        return 1
    if not subs:
        print(f"minislurm grade run: error: no *.ipynb under {args.submissions}", file=sys.stderr)
        return 1
    if args.student:
        unknown = sorted(set(args.student) - {s.student for s in subs})
        if unknown:
            print(f"minislurm grade run: error: no submission of {', '.join(unknown)} under {args.submissions}",
                  file=sys.stderr)
            return 1
        subs = [s for s in subs if s.student in args.student]
    if args.rerun_timed_out:
        waiting = {(r[0], r[1]) for r in report.ungraded(report.read_grades(args.out))}
        subs = folder.timed_out_submissions(subs, waiting)
        if not subs:
            print(f"nothing to rerun: no question of {args.out} is marked not graded"
                  + (f" for {', '.join(args.student)}" if args.student else ""))
            return 0
    print(f"grading {len(subs)} submissions {box.description}; "
          f"cell limit {args.timeout:g} s, submission limit {total:g} s", flush=True)

    def progress(g: folder.Graded) -> None:
        most = sum(m for _, m in g.scores.values())
        got = sum(s for s, _ in g.scores.values() if s is not None)
        later = f" ({len(g.not_graded)} not graded: timed out)" if g.not_graded else ""
        status = f"FAILED: {g.error}" if g.error else f"{got:g}/{most:g}{later}"
        print(f"  {g.submission.student} ({g.submission.path.name}): {status} [{g.seconds:.1f} s]", flush=True)

    t0 = time.monotonic()
    graded = folder.grade_folder(subs, sandbox=box, cell_timeout=args.timeout, total_timeout=total,
                                 jobs=args.jobs, progress=progress)
    rows, failures = folder.rows(graded, labs), folder.failures(graded, labs)
    if args.student or args.rerun_timed_out:  # regrading: keep everyone else's rows
        rows, failures = report.merge(report.read_grades(args.out), report.read_failures(report.sibling(args.out, "failures")),
                                      rows, failures, None if args.rerun_timed_out else set(args.student))
    written = report.write_reports(args.out, rows, failures)
    print()
    print(folder.summary(graded, labs))
    failed = sum(1 for g in graded if g.error)
    slow = [g for g in graded if g.not_graded]
    print(f"\nwrote {args.out} ({len(rows)} rows) in {time.monotonic() - t0:.1f} s; "
          f"{len(graded) - failed - len(slow)} graded, {failed} failed, {len(slow)} not graded (timed out)")
    print("beside it: " + ", ".join(p.name for p in written[1:] if p.exists()))
    waiting = report.ungraded(rows)
    if waiting:
        print(f"{len(waiting)} questions of {len({r[0] for r in waiting})} students in {args.out} are not graded: "
              f"they ran past a time limit, which a slow machine can make a right answer do too; grade them "
              f"again with --rerun-timed-out (and a larger --timeout or --submission-timeout)")
        return 3
    return 0


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, end="")
        return 0 if argv else 1
    commands = {"assign": assign_main, "run": run_main}
    if argv[0] not in commands:
        print(f"minislurm grade: error: unknown command '{argv[0]}' (try 'minislurm grade --help')",
              file=sys.stderr)
        return 1
    return commands[argv[0]](argv[1:])
