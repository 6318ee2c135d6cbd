"""``#SBATCH`` directives: which lines count, how they split into words, and how the three
option sources are layered (script directives < ``SBATCH_*`` environment < command line).

The rules are sbatch's, which surprise people: a directive must start in column 0 (an indented
``#SBATCH`` is just a comment), scanning stops at the first line that is not a comment or
blank, an unescaped ``#`` ends the words of a line, and quotes group words.  No I/O here: the
caller reads the script and passes its text.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from minislurm.core.options import OptionError, apply_options, combine, env_options, refuse_hetjob, split_options
from minislurm.core.spec import JobSpec

MAGIC = "#SBATCH"
LEGACY = "#SLURM"
LEGACY_WARNING = ("sbatch: error: Change from #SLURM to #SBATCH in your script and verify "
                  "the options are valid in sbatch")
_WS = " \t\n\v\f\r"
# Options sbatch handles before reading the script; in a directive they have no effect.
_EARLY = ("help", "usage", "version", "verbose", "quiet")


def _fatal(text: str) -> OptionError:
    return OptionError(f"sbatch: fatal: {text}", 1)


def _error(*lines: str, code: int = 1) -> OptionError:
    return OptionError("\n".join(f"sbatch: error: {line}" for line in lines), code)


def _line_words(text: str, path: str, lineno: int) -> list[str]:
    """Split what follows ``#SBATCH`` into words, the way sbatch's get_argument does."""
    words: list[str] = []
    pos = 0
    while True:
        segment, k = text[pos:], 0
        while k < len(segment) and segment[k] in _WS:
            k += 1
        word: list[str] = []
        quote, escaped = "", False
        while k < len(segment) and (quote or segment[k] not in _WS):
            ch = segment[k]
            k += 1
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
                continue
            elif quote:
                if ch == quote:
                    quote = ""
                    continue
            elif ch in "\"'":
                quote = ch
                continue
            elif ch == "#":  # an unescaped, unquoted # starts a comment
                k -= 1
                break
            word.append(ch)
        if quote:
            raise _fatal(f"{path}: line {lineno}: Unmatched `{quote}` in [{segment}]")
        if not word:  # nothing left (or an empty "" word): sbatch stops reading this line
            return words
        words.append("".join(word))
        pos += k


def scan_components(script: str, path: str = "<script>", *,
                    warnings: list[str] | None = None) -> list[list[str]]:
    """The option words of a script's ``#SBATCH`` lines, in order, one list per component of
    a heterogeneous job: a directive line whose first word is ``hetjob`` (or the old
    ``packjob``) starts the next component.

    Only lines starting exactly with ``#SBATCH`` (or the legacy ``#SLURM``, which adds a warning
    to ``warnings``) count; ``#!``, other comments and blank lines are skipped; the first other
    line ends the scan.
    """
    parts: list[list[str]] = [[]]
    warned = False
    for lineno, line in enumerate(script.split("\n"), start=1):
        if line.startswith(MAGIC):
            rest = line[len(MAGIC):]
        elif line.startswith(LEGACY):
            rest = line[len(LEGACY):]
            if not warned and warnings is not None:
                warnings.append(LEGACY_WARNING)
            warned = True
        else:
            stripped = line.lstrip(_WS)
            if stripped and not stripped.startswith("#"):
                break
            continue
        words = _line_words(rest, path, lineno)
        if words[:1] and words[0].lower() in ("hetjob", "packjob"):
            parts.append(words[1:])
        else:
            parts[-1].extend(words)
    return parts


def scan_directives(script: str, path: str = "<script>", *, warnings: list[str] | None = None) -> list[str]:
    """The option words of the first component (all of them, for a script of one job)."""
    return scan_components(script, path, warnings=warnings)[0]


def check_script(script: str) -> None:
    """sbatch's sanity checks on a script body, in its order, with its exact messages."""
    if script == "":
        raise _error("Batch script is empty!")
    if script.strip(_WS) == "":
        raise _error("Batch script contains only whitespace!")
    if not script.startswith("#!"):
        raise _error("This does not look like a batch script.  The first",
                     "line must start with #! followed by the path to an interpreter.",
                     "For instance: #!/bin/sh")
    if "\0" in script:
        raise _error("The Slurm controller does not allow scripts that",
                     "contain a NULL character '\\0'.")
    if "\r\n" in script:
        raise _error("Batch script contains DOS line breaks (\\r\\n)",
                     "instead of expected UNIX line breaks (\\n).")


def wrap_script(command: str) -> str:
    """The script sbatch builds for ``--wrap=<command>``."""
    return f"#!/bin/sh\n# This script was created by sbatch --wrap.\n\n{command}\n"


def default_job_name(script_path: str | None, wrap: bool = False) -> str:
    """``wrap`` for ``--wrap``, the script's file name, or ``sbatch`` for a script on stdin."""
    if wrap:
        return "wrap"
    if script_path is None or script_path in ("", "-"):
        return "sbatch"
    return os.path.basename(script_path)


def directive_spec(script: str, path: str = "<script>", *, now: float,
                   warnings: list[str] | None = None) -> JobSpec:
    """The options a script's directives set; a stray word is an ``Invalid directive``."""
    pairs, leftover = split_options(scan_directives(script, path, warnings=warnings), prog="sbatch")
    if leftover:
        raise _error(f"Invalid directive found in batch script: {leftover[0]}", code=255)
    spec = apply_options([(o, val) for o, val in pairs if o.key != "wrap"], prog="sbatch", now=now)
    for name in _EARLY:
        spec.extra.pop(name, None)
    return spec


def component_specs(script: str | None, path: str = "<script>", *, now: float) -> list[JobSpec]:
    """The second and later components of a heterogeneous job, from their directives alone
    (the environment and the command line set the first's).  A component without a job name
    takes the first's, as sbatch does."""
    if script is None:
        return []
    specs = []
    for words in scan_components(script, path)[1:]:
        pairs, leftover = split_options(words, prog="sbatch")
        if leftover:
            raise _error(f"Invalid directive found in batch script: {leftover[0]}", code=255)
        specs.append(combine(apply_options(pairs, prog="sbatch", now=now), JobSpec(), JobSpec(), prog="sbatch"))
    return specs


def build_spec(script: str | None, environ: Mapping[str, str], argv_words: list[str], *,
               now: float, path: str = "<script>",
               warnings: list[str] | None = None) -> tuple[JobSpec, list[str]]:
    """sbatch's whole option pipeline: returns the request and the script path plus its arguments.

    Order of work (and so of errors) follows sbatch: command-line words are split first, the
    script is checked and its directives read, then the environment, then the command-line
    values.  ``script`` is None for ``--wrap``.  An unset job name gets sbatch's default.
    """
    pairs, rest = split_options(argv_words, prog="sbatch")
    refuse_hetjob("sbatch", rest)
    wrap = any(o.key == "wrap" for o, _ in pairs)
    if wrap and rest:
        raise _error("Script arguments not permitted with --wrap option")
    script_spec = None
    if script is not None:
        check_script(script)
        script_spec = directive_spec(script, path, now=now, warnings=warnings)
    env_spec = env_options(environ, prog="sbatch", now=now)
    cli_spec = apply_options(pairs, prog="sbatch", now=now)
    spec = combine(script_spec, env_spec, cli_spec, prog="sbatch")
    if spec.job_name is None:
        spec.job_name = default_job_name(rest[0] if rest else None, wrap=spec.wrap is not None)
    return spec, rest
