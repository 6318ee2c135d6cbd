"""Resource limits that follow a job from the submit host (``--propagate``, Slurm's
PropagateResourceLimits).

sbatch and srun put their own soft limits in the environment they send, one
``SLURM_RLIMIT_<NAME>`` each (``U`` before the value when the user named it with
``--propagate``); the task's launcher on the node sets them just before the command starts and
takes the variables out again.  Without ``--propagate`` every limit goes, as under Slurm's
default ``PropagateResourceLimits=ALL``; ``--propagate=NONE`` sends none.  minislurm has no
PropagateResourceLimits in slurm.conf: the nodes always take what was sent.
"""

from __future__ import annotations

import resource

NAMES = ("AS", "CORE", "CPU", "DATA", "FSIZE", "MEMLOCK", "NOFILE", "NPROC", "RSS", "STACK")
PREFIX = "SLURM_RLIMIT_"
UNLIMITED = 2 ** 64 - 1  # RLIM_INFINITY as the C library writes it (an unsigned long)


def chosen(propagate: str | None) -> tuple[list[str], bool]:
    """The limits to send and whether the user named them.  ``propagate`` is the option's value:
    None when not given (all, by default), "" for a bare ``--propagate`` (all, named), else
    ``ALL``, ``NONE`` or names such as ``NOFILE,CORE``.  ValueError for a name Slurm lacks."""
    if propagate is None:
        return list(NAMES), False
    names = [n.strip().upper() for n in propagate.split(",") if n.strip()] or ["ALL"]
    if names == ["ALL"]:
        return list(NAMES), True
    if names == ["NONE"]:
        return [], True
    wrong = [n for n in names if n not in NAMES]
    if wrong:
        raise ValueError(f"Bad rlimit name: {wrong[0]}")
    return names, True


def refusal(propagate: str | None, prog: str) -> str | None:
    """sbatch's or srun's two error lines for a ``--propagate`` naming a limit Slurm lacks (as
    22.05 prints them on the twin), else None."""
    try:
        chosen(propagate)
    except ValueError as exc:
        return f"{prog}: error: {exc}\n{prog}: error: --propagate={propagate} is not valid."
    return None


def submit_env(propagate: str | None) -> dict[str, str]:
    """This process's soft limits, as the ``SLURM_RLIMIT_*`` variables a job carries."""
    names, named = chosen(propagate)
    env = {}
    for name in names:
        soft, _ = resource.getrlimit(getattr(resource, f"RLIMIT_{name}"))
        env[PREFIX + name] = ("U" if named else "") + str(UNLIMITED if soft == resource.RLIM_INFINITY else soft)
    return env


def changes(env: dict[str, str]) -> dict[str, str]:
    """The ``SLURM_RLIMIT_*`` variables of ``env`` whose value is not already this process's
    soft limit (what a process started from here would inherit anyway)."""
    out = {}
    for key, value in env.items():
        if not key.startswith(PREFIX) or key[len(PREFIX):] not in NAMES:
            continue
        number = value[1:] if value.startswith("U") else value
        if not number.isdigit():
            continue
        soft, _ = resource.getrlimit(getattr(resource, f"RLIMIT_{key[len(PREFIX):]}"))
        if int(number) != (UNLIMITED if soft == resource.RLIM_INFINITY else soft):
            out[key] = value
    return out


def without_sent(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if not k.startswith(PREFIX)}
