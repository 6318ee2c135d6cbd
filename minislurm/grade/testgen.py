"""Turn a cell of plain asserts into an otter exception-based test case.

Why exception-based and not otter's default OK format: an OK-format case is a doctest whose
expected output is the cell's recorded output, so the master would have to be executed before
``otter assign`` and any ``print`` in a check would become part of the answer.  An
exception-based case is a function that passes unless it raises, which is exactly what a check
cell of asserts means.  Each case carries its own points, so a question whose public check passes
and whose hidden check fails earns partial credit.

otter calls a case's function with the notebook's variables as arguments, by parameter name
(``None`` when the student never defined one).  So the function's parameters are the cell's free
names, and a check that reads ``rank`` and ``ablation_priority`` becomes
``def test_...(ablation_priority, rank): <the cell>``.  Helpers that an *earlier* check cell
defined (``def queued(...)`` in lab 6) are copied into the function instead of taken from the
student's namespace: the autograder does not trust what a submission may have redefined.
"""

from __future__ import annotations

import ast
import builtins
import symtable

_BUILTINS = frozenset(vars(builtins))


def _probe(body: list[ast.stmt]) -> symtable.SymbolTable:
    fn = ast.parse("def _probe():\n    pass").body[0]
    fn.body = body or [ast.Pass()]
    src = ast.unparse(ast.fix_missing_locations(ast.Module(body=[fn], type_ignores=[])))
    return symtable.symtable(src, "<check>", "exec").get_children()[0]


def free_names(body: list[ast.stmt]) -> set[str]:
    """Names ``body`` reads from outside (globals of it and of its nested scopes), no builtins."""
    names: set[str] = set()
    stack = [_probe(body)]
    while stack:
        table = stack.pop()
        names.update(s.get_name() for s in table.get_symbols() if s.is_global())
        stack.extend(table.get_children())
    return {n for n in names if n not in _BUILTINS}


def defined_names(stmt: ast.stmt) -> set[str]:
    """Names a top-level statement binds (also inside ``with``/``if``/``for``/``try`` blocks), for the
    definitions a later cell may use."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names}
    targets: list[ast.AST] = []
    if isinstance(stmt, ast.Assign):
        targets = list(stmt.targets)
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        targets = [stmt.target]
    elif isinstance(stmt, (ast.For, ast.AsyncFor)):
        targets = [stmt.target]
    elif isinstance(stmt, (ast.With, ast.AsyncWith)):
        targets = [item.optional_vars for item in stmt.items if item.optional_vars is not None]
    names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    for block in ("body", "orelse", "finalbody"):
        for inner in getattr(stmt, block, []) if not isinstance(stmt, ast.Assign) else []:
            names |= defined_names(inner)
    for handler in getattr(stmt, "handlers", []):
        names |= {handler.name} if handler.name else set()
        for inner in handler.body:
            names |= defined_names(inner)
    return names


class Definitions:
    """Top-level definitions collected from cells in notebook order (a later one wins)."""

    def __init__(self):
        self._by_name: dict[str, tuple[int, ast.stmt]] = {}
        self._text: dict[int, str] = {}  # the statement as written, comments and all
        self._count = 0

    def add_cell(self, source: str) -> None:
        lines = source.splitlines()
        for stmt in ast.parse(source).body:
            names = defined_names(stmt)
            if names:
                self._count += 1
                first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
                self._text[self._count] = "\n".join(lines[first - 1:stmt.end_lineno])
                for n in names:
                    self._by_name[n] = (self._count, stmt)

    def __contains__(self, name: str) -> bool:
        return name in self._by_name

    def closure(self, needed: set[str]) -> list[ast.stmt]:
        """The definitions ``needed`` names come from, with theirs, in their original order."""
        return [stmt for _, stmt in self._closure(needed)]

    def closure_source(self, needed: set[str]) -> str:
        """:meth:`closure` as the cells' own text."""
        return "\n\n".join(self._text[k] for k, _ in self._closure(needed))

    def _closure(self, needed: set[str]) -> list[tuple[int, ast.stmt]]:
        chosen: dict[int, ast.stmt] = {}
        todo = [n for n in needed if n in self._by_name]
        while todo:
            order, stmt = self._by_name[todo.pop()]
            if order in chosen:
                continue
            chosen[order] = stmt
            todo.extend(n for n in free_names([stmt]) if n in self._by_name)
        return [(k, chosen[k]) for k in sorted(chosen)]


def case_function(name: str, source: str, helpers: Definitions | None = None) -> str:
    """The source of ``def <name>(<free names>): <helpers> <source>`` (comments are dropped)."""
    body = ast.parse(source).body
    if helpers is not None:
        body = helpers.closure(free_names(body)) + body
    params = sorted(free_names(body) - {"env"})
    fn = ast.parse(f"def {name}({', '.join(params)}):\n    pass").body[0]
    fn.body = body or [ast.Pass()]
    return ast.unparse(ast.fix_missing_locations(fn))


def case_cell_source(function_source: str, *, points: float, hidden: bool) -> str:
    """A master-notebook test cell: otter's TEST CONFIG header, then the test function."""
    pts = int(points) if float(points).is_integer() else points
    return (f'""" # BEGIN TEST CONFIG\npoints: {pts}\nhidden: {str(hidden).lower()}\n'
            f'""" # END TEST CONFIG\n{function_source}')
