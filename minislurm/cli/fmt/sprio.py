"""sprio's output, from priority/multifactor ``Factors``.

src/sprio: the default format is ``%.15i %9r %.10Y %.10S`` followed by one column per
factor whose weight is not zero (``%.10A`` age, ``%.10B`` assoc, ``%.10F`` fair-share,
``%.10J`` job size, ``%.10P`` partition, ``%.10Q`` QOS, ``%.20T`` TRES); ``-l`` always
shows ``%.15i %9r %.8u %.8o %.10Y %.10S %.10A %.10B %.10F %.10J %.10P %.10n %.10Q %.11N
%.20T``.  Weighted factors print rounded to integers (``%.0f``), rows sort by job id.
minislurm has no site, association, QOS or TRES factors: they print as 0 (TRES empty).
"""

from __future__ import annotations

from minislurm.cli.fmt.fields import parse_format, render

LONG = "%.15i %9r %.8u %.8o %.10Y %.10S %.10A %.10B %.10F %.10J %.10P %.10n %.10Q %.11N %.20T"
_WEIGHTED = [("age", "%.10A"), ("assoc", "%.10B"), ("fairshare", "%.10F"), ("jobsize", "%.10J"),
             ("partition", "%.10P"), ("qos", "%.10Q"), ("tres", "%.20T")]


def _num(x: float) -> str:
    return f"{x:.0f}"


LETTERS = {
    "i": ("JOBID", lambda r: str(r.job_id)),
    "r": ("PARTITION", lambda r: r.partition),
    "u": ("USER", lambda r: r.user),
    "o": ("ACCOUNT", lambda r: r.account),
    "Y": ("PRIORITY", lambda r: str(r.priority)),
    "S": ("SITE", lambda r: "0"),
    "A": ("AGE", lambda r: _num(r.age)),
    "B": ("ASSOC", lambda r: "0"),
    "F": ("FAIRSHARE", lambda r: _num(r.fairshare)),
    "J": ("JOBSIZE", lambda r: _num(r.jobsize)),
    "P": ("PARTITION", lambda r: _num(r.part)),
    "n": ("QOSNAME", lambda r: "normal"),
    "Q": ("QOS", lambda r: "0"),
    "N": ("NICE", lambda r: str(r.nice)),
    "T": ("TRES", lambda r: ""),
}


def default_format(weights: dict[str, float] | None = None) -> str:
    """The short format for these weights (``None``: every factor minislurm computes)."""
    if weights is None:
        weights = {"age": 1, "fairshare": 1, "jobsize": 1, "partition": 1}
    return "%.15i %9r %.10Y %.10S" + "".join(f" {spec}" for name, spec in _WEIGHTED if weights.get(name))


def format_sprio(rows: list, *, long: bool = False, noheader: bool = False,
                 weights: dict[str, float] | None = None, fmt: str | None = None) -> str:
    """The text sprio prints for these pending jobs' factors."""
    prefix, fields = parse_format(fmt or (LONG if long else default_format(weights)))
    for f in fields:
        if f.letter not in LETTERS:
            raise ValueError(f"Invalid job format specification: {f.letter}")
    lines = []
    if not noheader:
        lines.append(render(prefix, fields, lambda f: (LETTERS[f.letter][0], True)))
    for r in sorted(rows, key=lambda r: r.job_id):
        lines.append(render(prefix, fields, lambda f, r=r: (LETTERS[f.letter][1](r), True)))
    return "".join(line + "\n" for line in lines)
