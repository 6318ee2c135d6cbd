"""Option values for sbatch/srun: each converter makes the checks of Slurm's matching set function.

Kept apart from :mod:`minislurm.core.options` (the table and the getopt scanner) and
:mod:`minislurm.core.opthandlers` (what each option does to the spec) so each file stays small.  Errors are :class:`OptionError`, whose text is exactly the stderr line(s) the
real command prints, e.g. ``sbatch: error: Invalid --time specification``.
"""

from __future__ import annotations

import re
import signal as _signal

from minislurm.core import errors
from minislurm.core.spec import GresRequest, JobSpec, SignalSpec

MEM_CLI_CONFLICT = "--mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive."
MEM_ENV_CONFLICT = "SLURM_MEM_PER_CPU, SLURM_MEM_PER_GPU, and SLURM_MEM_PER_NODE are mutually exclusive."
MAX_ARRAY_INDEX_LIMIT = 4_000_001  # the largest MaxArraySize Slurm allows; the cluster's is checked later

_WS = " \t\n\v\f\r"
_STRTOL = re.compile(r"[ \t\n\v\f\r]*([+-]?[0-9]+)")
_COUNT = re.compile(r"([0-9]+)([kKmMgGtTpP]?)")
_GPU_TYPED = re.compile(r"(?:([^:,]+):)?([0-9]+)")
_SIGNALS = ("HUP", "INT", "QUIT", "ABRT", "KILL", "ALRM", "TERM", "USR1", "USR2", "URG", "CONT",
            "STOP", "TSTP", "TTIN", "TTOU")


class OptionError(ValueError):
    """An option problem; the text is exactly what the Slurm command prints on stderr."""

    def __init__(self, text: str, exit_code: int = 255):
        super().__init__(text)
        self.text = text
        self.exit_code = exit_code  # Slurm exits -1 (255) for option errors, 1 for fatal()


def error(prog: str, message: str, code: int = 255) -> OptionError:
    return OptionError(f"{prog}: error: {message}", code)


def fatal(prog: str, message: str) -> OptionError:
    return OptionError(f"{prog}: fatal: {message}", 1)


def rejected(prog: str, message: str) -> OptionError:
    """What the command prints when the controller refuses the request."""
    lead = {"sbatch": "Batch job submission failed", "salloc": "Job submit/allocate failed"}.get(
        prog, "Unable to allocate resources")
    return error(prog, f"{lead}: {message}", 1)


def strtol(text: str) -> tuple[int | None, str]:
    """C strtol: blanks, a sign, digits; returns (value, rest) or (None, text) without digits.
    Out of range it saturates at LONG_MIN/LONG_MAX, as strtol does."""
    m = _STRTOL.match(text)
    if not m:
        return None, text
    digits = m.group(1)
    value = int(digits) if len(digits) <= 20 else (-1 if digits.startswith("-") else 1) * 2**63
    return max(-2**63, min(value, 2**63 - 1)), text[m.end():]


def parse_int(name: str, text: str, prog: str = "sbatch") -> int:
    """A positive count (``-n``, ``-c``, ``--ntasks-per-node``), checked like Slurm's parse_int."""
    value, rest = strtol(text)
    if value is None or rest or value <= 0:
        raise error(prog, f'Invalid numeric value "{text}" for {name}.', 1)
    if value > 2**31 - 1:
        raise error(prog, f"Numeric argument ({min(value, 2**63 - 1)}) too large for {name}.", 1)
    return value


def _node_count(text: str) -> tuple[int, str]:
    value, rest = strtol(text)
    if value is None:
        return -1, text
    for suffix, factor in (("kK", 1024), ("mM", 1024 * 1024)):
        if rest[:1] and rest[0] in suffix:
            value, rest = value * factor, rest[1:]
    return value, rest


def parse_nodes(text: str, prog: str = "sbatch") -> tuple[int, int | None]:
    """``-N min[-max]`` (a ``k`` or ``m`` suffix multiplies by 1024); returns (min, max)."""
    low_text, dash, high_text = text.partition("-")
    low, rest = _node_count(low_text)
    if rest.strip(_WS) or (low < 0 and not dash):
        raise error(prog, f'"{low_text}" is not a valid node count')
    if not dash:
        return low, low
    low = 1 if low < 0 else low  # "-N -4" means "up to 4"
    high, rest = _node_count(high_text)
    if rest.strip(_WS):
        raise error(prog, f'"{high_text}" is not a valid node count')
    if high != 0 and high < low:
        raise error(prog, f"Maximum node count {high} is less than minimum node count {low}")
    return low, high or None


def parse_mem(text: str) -> int | None:
    """Slurm's str_to_mbytes: a number and K/M/G/T (only that first letter is read), in MB."""
    value, rest = strtol(text)
    if value is None:
        value, rest = 0, text
    suffix = rest[:1].upper()
    if value < 0 or suffix not in ("", "K", "M", "G", "T"):
        return None
    if suffix == "K":
        return (value + 1023) // 1024
    return value * {"": 1, "M": 1, "G": 1024, "T": 1024 * 1024}[suffix]


def parse_gres(text: str) -> tuple[GresRequest, ...]:
    """``--gres=name[[:type]:count][,...]`` (count 1 by default); ``none`` means no GRES."""
    if text.lower() == "none":
        return ()
    out = []
    for item in text.split(","):
        parts = item.removeprefix("gres/").split(":")
        counted = len(parts) > 1 and _COUNT.fullmatch(parts[-1]) is not None
        kinds = parts[1:-1] if counted else parts[1:]
        if not parts[0] or len(kinds) > 1 or "" in kinds:
            raise ValueError(errors.INVALID_GRES)
        count = 1
        if counted:
            digits, unit = _COUNT.fullmatch(parts[-1]).groups()
            count = int(digits) * 1024 ** ("KMGTP".find(unit.upper()) + 1 if unit else 0)
        out.append(GresRequest(parts[0], kinds[0] if kinds else None, count))
    return tuple(out)


def parse_gpus(text: str) -> tuple[str | None, int]:
    """``[type:]N`` of ``--gpus``/``--gpus-per-node``/``--gpus-per-task`` (first item of a list)."""
    m = _GPU_TYPED.fullmatch(text.split(",")[0])
    if not m:
        raise ValueError(errors.INVALID_GRES)
    return m.group(1), int(m.group(2))


def _signal_number(text: str) -> int:
    value, rest = strtol(text)
    if value is not None:
        return value if not rest.strip(_WS) else 0
    name = text.lstrip(_WS)
    name = name[3:] if name[:3].upper() == "SIG" else name
    for sig in _SIGNALS:
        if name[:len(sig)].upper() == sig and not name[len(sig):].strip(_WS):
            return int(_signal.Signals[f"SIG{sig}"])
    return 0


def parse_signal(text: str) -> SignalSpec:
    """``[{R|B}:]<sig>[@sec]`` (also ``RB:``); the time defaults to 60 s, and must be 0..65535."""
    invalid = ValueError("Invalid --signal specification")
    prefix = next((p for p in ("RB:", "BR:", "B:", "R:") if text.upper().startswith(p)), "")
    name, at, when = text[len(prefix):].partition("@")
    number = _signal_number(name)
    if not 1 <= number <= 0xFFFF:
        raise invalid
    seconds, rest = strtol(when) if at else (60, "")
    if seconds is None:
        seconds, rest = 0, when  # "USR1@" is 0 s, as strtol reads "" as 0
    if rest or not 0 <= seconds <= 0xFFFF:
        raise invalid
    return SignalSpec(number, seconds, batch_only="B" in prefix, reservation="R" in prefix)


def set_extra(spec: JobSpec, name: str, value: str | None) -> None:
    """Record an option minislurm does not act on (``-v`` counts its repeats)."""
    if name == "verbose" and value is None:
        value = str(int(spec.extra.get("verbose") or 0) + 1)
    spec.extra[name] = "" if value is None else value


def env_flag(value: str) -> bool:
    """A flag variable is on when empty, ``yes`` or a non-zero number."""
    number, rest = strtol(value)
    return value == "" or value.lower() == "yes" or (bool(number) and not rest)


def mem_kinds(spec: JobSpec) -> set[str]:
    given = (("mem", spec.mem_mb), ("mem-per-cpu", spec.mem_per_cpu_mb),
             ("mem-per-gpu", spec.extra.get("mem-per-gpu")))
    return {name for name, value in given if value is not None}


def drop_mem(spec: JobSpec, keep: set[str]) -> JobSpec:
    """Clear the memory options not in ``keep`` (spec is modified and returned)."""
    spec.mem_mb = spec.mem_mb if "mem" in keep else None
    spec.mem_per_cpu_mb = spec.mem_per_cpu_mb if "mem-per-cpu" in keep else None
    if "mem-per-gpu" not in keep:
        spec.extra.pop("mem-per-gpu", None)
    return spec
