"""``--help``, ``--usage`` and ``-V/--version`` in the form Slurm 22.05's commands print them.

Every command lays its help out the same way from data: a first line (``Usage: squeue
[OPTIONS]``; ``sacct [<OPTION>]`` for sacct, sstat and scontrol), the options in Slurm's groups
(``Parallel run options:``, ``Help options:``, ...), each as ``-X, --long=value`` and a
description in a column.  Only the data differs per command (:class:`Layout`): the first line,
the group titles, the column, how an option is spelled (``-a, --all`` or sshare's ``-a or
--all``).  The parser behind a command supplies its options, so the help lists exactly what the
command accepts.  The descriptions are minislurm's own words, not Slurm's.

``--usage`` prints a synopsis built from the same options (``Usage: squeue [-o format] ...``);
``-V``/``--version`` the Slurm release minislurm's commands imitate, as ``sinfo -V`` prints it.
All three exit 0, as in Slurm.
"""

from __future__ import annotations

import textwrap
from collections import namedtuple

from minislurm import __version__

SLURM_VERSION = "22.05.8"
WIDTH = 80  # Slurm's help fits a terminal of 80 columns


def version_line() -> str:
    """What ``-V``/``--version`` prints: upstream Slurm's ``PACKAGE VERSION`` line, which tools parse.

    (Debian's build, the twin of chapter 9, says ``slurm-wlm 22.05.8``.)"""
    return f"slurm {SLURM_VERSION}"


class Entry(namedtuple("Entry", "shorts longs value optional text", defaults=(None, False, ""))):
    """One option as help prints it: ``-N, --nodes=N`` and what it does.  ``shorts``: ("-N",);
    ``longs``: ("--nodes",), aliases after the first; ``value``: "N", printed "=N";
    ``optional``: printed "--nice[=value]"; ``text``: the description."""

    __slots__ = ()


class Layout:
    """A command's help form; the options come from its parser.  Each field's default is below;
    a command's layout names what differs (``Layout("sinfo", "Usage: sinfo [OPTIONS]", column=29)``).

    A plain class, not a dataclass: every command builds its parser with one at start-up, and
    importing ``dataclasses`` costs a query command about 6 ms of CPU (of some 40)."""

    prog: str
    first_line: str
    intro: tuple[str, ...] = ()  # lines between the first line and the options
    main_title: str | None = None  # the first group's title ("Parallel run options:")
    help_title: str | None = "Help options:"  # None: --help and --usage join the first group
    version_title: str | None = None  # "Other options:" (sbatch, srun, salloc); None: the first group
    indent: int = 2  # spaces before "-X, "
    pad_long: bool = True  # a long-only option lines up with the long names of the others
    sep: str = ", "  # between "-X" and "--long" (sshare: " or ")
    colon: bool = False  # "-a, --allusers:" (sacct, sstat), the description on the next line
    column: int = 30  # where descriptions start
    values: bool = True  # print "=value" after the long name
    sort: bool = False  # the first group in letter order (the query commands' help is)
    usage: str | None = None  # a fixed --usage text; None: a synopsis made from the options
    usage_tail: str = ""  # the synopsis' last words ("executable [args...]")
    cluster_flags: bool = False  # the synopsis joins flags into one "[-ahjlrsv]"
    usage_is_help: bool = False  # sshare and scontrol print their help for --usage
    short_help: bool = False  # "-h" is help (sacct, sstat, scontrol, sbatch, srun, salloc)
    tail: str = ""  # text after the options (scontrol's commands)
    version: str | None = None  # what -V prints, when not the Slurm release (seff's own)
    version_names: tuple[str, ...] = ("-V", "--version")
    info_exit: dict = {}  # an option whose answer exits non-zero (seff's -h, -v); never changed in place
    extra_info: dict = {}  # per-command texts of the help options; likewise

    def __init__(self, prog: str, first_line: str, **fields) -> None:
        unknown = fields.keys() - Layout.__annotations__.keys()
        if unknown:
            raise TypeError(f"Layout has no field {', '.join(sorted(unknown))}")
        self.prog, self.first_line = prog, first_line
        self.__dict__.update(fields)


INFO_TEXT = {"help": "print this help and exit", "usage": "print a brief synopsis and exit",
             "version": "print the Slurm version and exit"}


def left(entry: Entry, layout: Layout) -> str:
    """``-N, --nodes=N`` (or ``    --nice[=value]`` for a long-only option)."""
    names = layout.sep.join(filter(None, [", ".join(entry.shorts), ", ".join(entry.longs)]))
    if not entry.shorts and layout.pad_long:
        names = " " * (2 + len(layout.sep)) + names
    if entry.value and layout.values:
        names += f"[={entry.value}]" if entry.optional else f"={entry.value}"
    return " " * layout.indent + names + (":" if layout.colon else "")


def _entry_lines(entry: Entry, layout: Layout) -> list[str]:
    head = left(entry, layout)
    text = textwrap.wrap(entry.text, WIDTH - layout.column, break_on_hyphens=False) or [""]
    pad = " " * layout.column
    if layout.colon or len(head) >= layout.column:
        return [head] + [pad + t for t in text if t]
    return [head.ljust(layout.column) + text[0]] + [pad + t for t in text[1:]]


def render(layout: Layout, groups: list[tuple[str | None, list[Entry]]]) -> str:
    """The help text: the first line, the intro, then each group (title, entries)."""
    lines = [layout.first_line, *layout.intro]
    for i, (title, entries) in enumerate(groups):
        if not entries:
            continue
        if title:
            lines += ["", title]
        elif i and lines[-1]:
            lines.append("")
        for entry in entries:
            lines += _entry_lines(entry, layout)
    text = "\n".join(lines) + "\n"
    return text + ("\n" + layout.tail.strip("\n") + "\n" if layout.tail else "")


def synopsis(layout: Layout, entries: list[Entry]) -> str:
    """``Usage: squeue [-A account] [-i seconds] ... [-ahlr]``, wrapped under its first word."""
    items, flags = [], []
    for e in entries:
        if layout.cluster_flags and e.shorts and not e.value:
            flags.append(e.shorts[0][1])
            continue
        name = e.shorts[0] if e.shorts and (e.value is None or not e.optional) else e.longs[0]
        if e.value is None:
            items.append(f"[{name}]")
        elif name.startswith("--"):
            items.append(f"[{name}[={e.value}]]" if e.optional else f"[{name}={e.value}]")
        else:
            items.append(f"[{name} {e.value}]")
    if flags:
        items.append("[-" + "".join(sorted(flags, key=lambda c: (c.lower(), c.isupper()))) + "]")
    if layout.usage_tail:
        items.append(layout.usage_tail)
    head = f"Usage: {layout.prog} "
    lines, line = [], head
    for item in items:
        if len(line) + len(item) > WIDTH - 1 and line.strip() != head.strip():
            lines.append(line.rstrip())
            line = " " * len(head)
        line += item + " "
    lines.append(line.rstrip())
    return "\n".join(lines) + "\n"


def sort_key(entry: Entry) -> tuple:
    """Slurm's query commands list options by letter, the lower case before the upper."""
    name = entry.shorts[0][1:] if entry.shorts else entry.longs[0].lstrip("-")
    return (name[0].lower(), name[0].isupper(), (entry.longs or ("",))[0].lower())


def info_entries(layout: Layout) -> dict[str, Entry]:
    """The entries of --help, --usage and -V/--version, in the layout's words."""
    texts = {**INFO_TEXT, **layout.extra_info}
    names = info_names(layout)
    return {kind: Entry(tuple(n for n in names[kind] if not n.startswith("--")),
                        tuple(n for n in names[kind] if n.startswith("--")), text=texts[kind])
            for kind in ("help", "usage", "version")}


def info_names(layout: Layout) -> dict[str, tuple[str, ...]]:
    """The option strings that ask for help, usage and the version."""
    return {"help": ("-h", "--help") if layout.short_help else ("--help",), "usage": ("--usage",),
            "version": layout.version_names}


def arrange(layout: Layout, groups: list[tuple[str | None, list[Entry]]]) -> list[tuple[str | None, list[Entry]]]:
    """Add the help options where the layout puts them, and sort the first group if it is sorted."""
    info = info_entries(layout)
    groups = [(t, list(e)) for t, e in groups] or [(layout.main_title, [])]
    groups[0] = (layout.main_title, groups[0][1])
    if layout.help_title is None:
        groups[0][1].extend([info["help"], info["usage"]])
    if layout.version_title is None:
        groups[0][1].append(info["version"])
    if layout.sort:
        groups[0][1].sort(key=sort_key)
    if layout.help_title:
        groups.append((layout.help_title, [info["help"], info["usage"]]))
    if layout.version_title:
        groups.append((layout.version_title, [info["version"]]))
    return groups


def answer(kind: str, layout: Layout, groups: list[tuple[str | None, list[Entry]]]) -> str:
    """The text for ``kind`` (help, usage or version)."""
    if kind == "version":
        return (layout.version or version_line()) + "\n"
    arranged = arrange(layout, groups)
    if kind == "usage" and not layout.usage_is_help:
        if layout.usage is not None:
            return layout.usage.rstrip("\n") + "\n"
        info = set(info_entries(layout).values())
        return synopsis(layout, [e for _, es in arranged for e in es if e not in info])
    return render(layout, arranged)


_CAPITALIZED = {kind: text[0].upper() + text[1:] + "." for kind, text in INFO_TEXT.items()}
# The query commands: one list (Slurm's own order is by letter), then "Help options:".
_QUERY = dict(column=34, sort=True, cluster_flags=True)
LAYOUTS = {
    "squeue": Layout("squeue", "Usage: squeue [OPTIONS]", **_QUERY),
    "sinfo": Layout("sinfo", "Usage: sinfo [OPTIONS]", **{**_QUERY, "column": 29}),
    "scancel": Layout("scancel", "Usage: scancel [OPTIONS] [job_id[_array_id][.step_id]]",
                      usage_tail="[job_id[_array_id][.step_id]]", **_QUERY),
    "sprio": Layout("sprio", "Usage: sprio [OPTIONS]", **_QUERY),
    "sdiag": Layout("sdiag", "Usage: sdiag [OPTIONS]", column=22, values=False, pad_long=False,
                    usage="Usage: sdiag [-M cluster] [-aritT]"),
    "sacct": Layout("sacct", "sacct [<OPTION>]", intro=("    Valid <OPTION> values are:",), help_title=None,
                    indent=5, pad_long=False, colon=True, column=19, values=False, sort=True, short_help=True,
                    usage="Usage: sacct [options]\n\tUse --help for help",
                    extra_info=_CAPITALIZED, tail="""\
     A time for -S is one of HH:MM[:SS], MM/DD[/YY], YYYY-MM-DD[THH:MM[:SS]],
     now[{+|-}count[seconds|minutes|hours|days|weeks]], today, tomorrow,
     midnight, noon or teatime.
"""),
    "sstat": Layout("sstat", "sstat [<OPTION>] -j <job(.stepid)>", intro=("    Valid <OPTION> values are:",),
                    help_title=None, indent=5, pad_long=False, colon=True, column=19, values=False, sort=True,
                    short_help=True, usage="Usage: sstat [options] -j <job(.stepid)>\n\tUse --help for help",
                    extra_info=_CAPITALIZED),
    "sshare": Layout("sshare", "Usage:  sshare [OPTION]", intro=("  Valid OPTIONs are:",), help_title=None,
                     indent=4, sep=" or ", column=27, values=False, sort=True, usage_is_help=True,
                     extra_info={"usage": "print this help and exit"}),
    "sacctmgr": Layout("sacctmgr", "sacctmgr [<OPTION>] [<COMMAND>]", intro=("    Valid <OPTION> values are:",),
                       help_title=None, indent=5, pad_long=False, column=26, values=False, sort=True,
                       short_help=True, usage_is_help=True,
                       extra_info={"help": "print this help (the help command)", "usage": "print this help",
                                   "version": "print the Slurm version (the version command)"},
                       tail="""\
    Valid <COMMAND> values are:
     add|create <ENTITY> <SPECS>
                          add users or accounts (operators only)
     delete|remove <ENTITY> where <SPECS>
                          remove users (or their associations) or accounts
     help                 print this help
     list|show <ENTITY> [<SPECS>]
                          print users, accounts or associations
     modify|update <ENTITY> where <SPECS> set <SPECS>
                          change users or accounts (operators only)
     version              print the Slurm version

    <ENTITY> is user, account or (for list) association.  <SPECS> are Key=value
    words: Name=, Account=, Parent=, DefaultAccount=, AdminLevel=, Fairshare=,
    Description=, Organization=, and for list Format=Field[%width],...
    (User, Account, DefaultAccount, AdminLevel, Cluster, ParentName, Share,
    QOS, Description, Organization, ...) and WithAssoc.
"""),
    "scontrol": Layout("scontrol", "scontrol [<OPTION>] [<COMMAND>]", intro=("    Valid <OPTION> values are:",),
                       help_title=None, indent=5, pad_long=False, column=20, values=False, sort=True,
                       short_help=True, usage_is_help=True,
                       extra_info={"help": "print this help (the help command)", "usage": "print this help",
                                   "version": "print the Slurm version (the version command)"},
                       tail="""\
    Valid <COMMAND> values are:
     create reservation <SPECIFICATIONS>
                              make an advance reservation (ReservationName=,
                              StartTime=, Duration=, Nodes=, Users=, Flags=)
     delete reservation <NAME>
                              remove a reservation
     help                     print this help
     hold <job_list>          keep pending jobs from starting (priority 0)
     ping                     say whether the controller answers
     release <job_list>       let held jobs start again
     requeue <job_list>       put jobs back in the queue
     requeuehold <job_list>   requeue jobs and hold them
     show <ENTITY> [<ID>]     print the records of an entity (all by default)
     token [lifespan=] [username=]
                              print a JWT for the REST API (SLURM_JWT=...)
     uhold <job_list>         hold pending jobs so their user may release them
     update <SPECIFICATIONS>  change a job, node, partition or reservation
     version                  print the Slurm version

  <ENTITY> is one of "config", "hostlist", "hostlistsorted", "hostnames",
       "job", "node", "partition" or "reservation".

  <SPECIFICATIONS> are Name=value words as "show" prints them, e.g.
       "update JobId=12 TimeLimit=30" or "update NodeName=n1 State=RESUME".

  Without a command, scontrol prints this help and exits 1 (Slurm's reads
  commands from its input).
"""),
    # not Slurm's (sites install Princeton's jobstats beside it): help in the query commands' form
    "jobstats": Layout("jobstats", "Usage: jobstats [OPTIONS] JOBID", usage_tail="JOBID", short_help=True,
                       version=f"jobstats (minislurm {__version__})",
                       extra_info={"version": "print jobstats' version and exit"}, **_QUERY),
    "seff": Layout("seff", "Usage: seff [Options] <Jobid>", intro=("       Options:",), help_title=None,
                   indent=7, column=29, short_help=True, usage_is_help=True, version="seff Version 2.1",
                   version_names=("-v", "-V", "--version"), info_exit={"-h": 1, "-v": 1},
                   extra_info={"usage": "print this help and exit", "version": "print seff's version and exit"}),
}
