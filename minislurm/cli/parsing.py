"""The option parser of the commands that Slurm writes with getopt (squeue, sinfo, sacct, scancel,
...): argparse, made to answer and complain as they do.  sbatch, srun and salloc read their
options with :mod:`minislurm.core.options` instead, and never import this.
"""

from __future__ import annotations

import argparse
import sys


class ArgumentParser(argparse.ArgumentParser):
    """argparse that reports errors the way Slurm's tools do (``prog: error: ...``, exit 1).

    ``-h`` is left free: squeue, sinfo and sprio use it for ``--noheader``; help is ``--help``.
    An option the command does not know is reported first, as glibc's getopt words it
    (``squeue: unrecognized option '--bogus'``, ``invalid option -- 'Z'``), followed, unless
    ``try_help`` is false (sacct, sstat), by Slurm's ``Try "squeue --help" ...`` line.

    A Slurm command names its help ``layout`` (:mod:`minislurm.cli.helptext`): it then also
    takes ``--usage`` and ``-V``/``--version``, and ``--help`` prints Slurm's form of help,
    its option groups those declared with ``add_argument_group`` and each option's ``help``
    (``%%`` for a ``%``, as argparse wants) and ``metavar``.  As getopt reads options in order, the first of them answers (exit 0)
    unless an unknown option comes before it.
    """

    def __init__(self, *args, try_help: bool = True, layout=None, **kwargs):
        kwargs["add_help"] = False
        super().__init__(*args, **kwargs)
        self.try_help = try_help
        self.layout = layout
        self.info: dict[str, str] = {}  # option string -> help, usage or version
        if layout is None:
            self.add_argument("--help", action="help", help="show this help and exit")
            return
        from minislurm.cli.helptext import info_names
        for kind, names in info_names(layout).items():
            self.add_argument(*names, dest=f"info_{kind}", action="store_true", help=argparse.SUPPRESS)
            self.info.update(dict.fromkeys(names, kind))

    def error(self, message: str):  # noqa: D401 - argparse hook
        self.exit(1, f"{self.prog}: error: {message}\n")

    def parse_args(self, args=None, namespace=None):
        words = list(sys.argv[1:] if args is None else args)
        if not self._subparsers:  # a subcommand's options are its own parser's to judge
            problem, option = self.first_answer(words)
            if problem:
                tail = f'Try "{self.prog} --help" for more information\n' if self.try_help else ""
                self.exit(1, f"{self.prog}: {problem}\n{tail}")
            if option:  # on stdout, as Slurm prints them
                sys.stdout.write(self.answer(self.info[option]))
                self.exit(self.layout.info_exit.get(option, 0))
        return super().parse_args(words, namespace)

    def answer(self, kind: str) -> str:
        """The text of --help, --usage or --version."""
        from minislurm.cli import helptext
        return helptext.answer(kind, self.layout, self.help_groups())

    def format_help(self) -> str:
        return self.answer("help") if self.layout else super().format_help()

    def help_groups(self) -> list:
        """The declared option groups as help entries, the command's own options first."""
        from minislurm.cli.helptext import Entry
        groups = []
        for group in self._action_groups:
            entries = []
            for action in group._group_actions:
                if not action.option_strings or action.help == argparse.SUPPRESS:
                    continue
                shorts = [o for o in action.option_strings if not o.startswith("--")]
                takes = action.nargs != 0
                value = (action.metavar or action.dest.replace("_", "-")) if takes else None
                entries.append(Entry(tuple(shorts), tuple(o for o in action.option_strings if o.startswith("--")),
                                     value, action.nargs == "?", (action.help or "").replace("%%", "%")))
            if group is self._positionals:
                continue
            groups.append((None if group is self._optionals else group.title, entries))
        return groups

    def unknown_option(self, words: list[str]) -> str | None:
        """The getopt complaint about the first unknown option in ``words``, if any."""
        return next((what for kind, what in self._scan(words) if kind == "error"), None)

    def first_answer(self, words: list[str]) -> tuple[str | None, str | None]:
        """(the getopt complaint, None) or (None, the option asking for help, usage or the
        version; ``self.info`` says which): whichever comes first."""
        for kind, what in self._scan(words):
            if kind == "error":
                return what, None
            if what in self.info:
                return None, what
        return None, None

    def _scan(self, words: list[str]):
        """The options of ``words`` in getopt's order: ("option", its string) or ("error", text)."""
        options = self._option_string_actions
        takes_value = {name for name, a in options.items() if a.nargs not in (0, "?", "*")}
        i = 0
        while i < len(words):
            word = words[i]
            i += 1
            if word == "--":
                return
            if word.startswith("--"):
                name = word.partition("=")[0]
                matches = [o for o in options if o.startswith("--") and o.startswith(name)]
                if name not in options and not matches:
                    yield "error", f"unrecognized option '{word}'"
                    return
                if name not in options and len({id(options[o]) for o in matches}) > 1:
                    names = " ".join(f"'{o}'" for o in sorted(matches))
                    yield "error", f"option '{word}' is ambiguous; possibilities: {names}"
                    return
                name = name if name in options else matches[0]
                if "=" not in word and name in takes_value:
                    i += 1  # its value
                yield "option", name
            elif word.startswith("-") and len(word) > 1 and not self._negative_number_matcher.match(word):
                for j, char in enumerate(word[1:], 1):
                    if f"-{char}" not in options:
                        yield "error", f"invalid option -- '{char}'"
                        return
                    yield "option", f"-{char}"
                    if f"-{char}" in takes_value:
                        i += j == len(word) - 1  # the value is the next word, or the rest of this one
                        break


def add_document_options(parser: ArgumentParser) -> None:
    """``--json`` and ``--yaml``, as the command's help lists them.  The documents are built by
    :mod:`minislurm.cli.fmt.json_out`, which a command imports only when one is asked for (it
    imports every other format; a plain ``squeue`` needs none of them)."""
    parser.add_argument("--json", action="store_true", help="print the records as JSON (slurmrestd's form)")
    parser.add_argument("--yaml", action="store_true", help="print the records as YAML (slurmrestd's form)")
