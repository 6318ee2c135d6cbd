"""sprio's output, from priority/multifactor ``Factors``.

src/sprio: the default format is ``%.15i %9r %.10Y %.10S`` followed by one column per
factor whose weight is not zero (``%.10A`` age, ``%.10B`` assoc, ``%.10F`` fair-share,
``%.10J`` job size, ``%.10P`` partition, ``%.10Q`` QOS, ``%.20T`` TRES); ``-l`` always
shows ``%.15i %9r %.8u %.8o %.10Y %.10S %.10A %.10B %.10F %.10J %.10P %.10n %.10Q %.11N
%.20T``.  Weighted factors print rounded to integers (``%.0f``), rows sort by job id.
minislurm has no site, association, QOS or TRES factors: they print as 0 (TRES empty).

``-n/--norm`` (22.05's sprio.c): the same factors unweighted, each the weighted value over its
weight (``%.7f``, lower-case letters ``%a %b %f %j %p %q %t``, and ``%y`` the priority over
2^32-1 as ``%16.14f``); its formats are ``%.15i %9r %10y`` then ``%10a``... for each weighted
factor (``%20t`` for TRES), ``-l``: ``%.15i %9r %.8u %10y %10a %10b %10f %10j %10p %10q %20t``.
``%c`` is the cluster's name.  ``-u`` adds ``%.8u`` after the partition in the short formats.
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


NORM_LONG = "%.15i %9r %.8u %10y %10a %10b %10f %10j %10p %10q %20t"


def default_format(weights: dict[str, float] | None = None, *, norm: bool = False, users: bool = False) -> str:
    """The short format for these weights (``None``: every factor minislurm computes)."""
    if weights is None:
        weights = {"age": 1, "fairshare": 1, "jobsize": 1, "partition": 1}
    head = "%.15i %9r" + (" %.8u" if users else "") + (" %10y" if norm else " %.10Y %.10S")
    return head + "".join(f" {spec.replace('.', '').lower() if norm else spec}" for name, spec in _WEIGHTED
                          if weights.get(name))


def _norm(value: float, weight: float | None) -> str:
    return f"{value / weight if weight else 0.0:.7f}"


def _letters(weights: dict[str, float], cluster: str | None) -> dict:
    """Every letter: the weighted ones above, and the normalized (lower-case) ones."""
    w = weights.get
    return {**LETTERS,
            "a": ("AGE", lambda r: _norm(r.age, w("age"))),
            "b": ("ASSOC", lambda r: _norm(0.0, w("assoc"))),
            "f": ("FAIRSHARE", lambda r: _norm(r.fairshare, w("fairshare"))),
            "j": ("JOBSIZE", lambda r: _norm(r.jobsize, w("jobsize"))),
            "p": ("PARTITION", lambda r: _norm(r.part, w("partition"))),
            "q": ("QOS", lambda r: _norm(0.0, w("qos"))),
            "t": ("TRES", lambda r: ""),
            "y": ("PRIORITY", lambda r: f"{r.priority / 0xFFFFFFFF:16.14f}"),
            "c": ("CLUSTER", lambda r: cluster or "")}


def format_sprio(rows: list, *, long: bool = False, noheader: bool = False,
                 weights: dict[str, float] | None = None, fmt: str | None = None, norm: bool = False,
                 users: bool = False, cluster: str | None = None) -> str:
    """The text sprio prints for these pending jobs' factors."""
    default = (NORM_LONG if norm else LONG) if long else default_format(weights, norm=norm, users=users)
    prefix, fields = parse_format(fmt or default)
    letters = _letters(weights or {}, cluster)
    for f in fields:
        if f.letter not in letters:
            raise ValueError(f"Invalid job format specification: {f.letter}")
    lines = []
    if not noheader:
        lines.append(render(prefix, fields, lambda f: (letters[f.letter][0], True)))
    for r in sorted(rows, key=lambda r: r.job_id):
        lines.append(render(prefix, fields, lambda f, r=r: (letters[f.letter][1](r), True)))
    return "".join(line + "\n" for line in lines)
