"""A quick yes or no: does a value satisfy one of the API's schemas?

jsonschema walks a schema afresh for every value, a validator object for each level it goes
down: the end of a step on 2,048 nodes (srun reports each node's usage) cost it over a second.
This compiles a schema once into plain Python checks, for the keywords
:mod:`minislurm.ctld.schema` uses and with :mod:`minislurm.ctld.validate`'s meaning of them
(an integer is JSON's integer, never 2.0 or true; a pattern's ``$`` is the end of the text).
A yes is final; a no is left to jsonschema, which finds and words the error.  A schema that
uses any other keyword compiles to None, and jsonschema alone decides.
``tests/ctld/test_precheck.py`` holds the two to the same answers on values made from every
route's schema.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable

from jsonschema._utils import equal, uniq  # jsonschema's own equality (true is not 1), pinned

Check = Callable[[object], bool]

_ANNOTATIONS = {"description", "x-slurm-error", "examples", "default", "title"}
_TYPES: dict[str, Check] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, numbers.Number) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}
_is_object, _is_array, _is_string, _is_number = (_TYPES[t] for t in ("object", "array", "string", "number"))


class _Unknown(Exception):
    """A keyword this module does not check."""


def compile_schema(schema: dict | bool, regex: Callable) -> Check | None:
    """The check of ``schema`` (``regex(pattern)``: the compiled pattern, as validate.py reads
    it), or None if the schema uses a keyword not checked here."""
    try:
        return _compile(schema, regex)
    except _Unknown:
        return None


def _compile(schema: dict | bool, regex: Callable) -> Check:
    if schema is True or schema == {}:
        return lambda v: True
    if schema is False:
        return lambda v: False
    checks: list[Check] = []
    for key, arg in schema.items():
        if key in _ANNOTATIONS or key in ("additionalProperties", "items"):  # these read their neighbours
            continue
        maker = _KEYWORDS.get(key)
        if maker is None:
            raise _Unknown(key)
        checks.append(maker(arg, schema, regex))
    if "additionalProperties" in schema:
        checks.append(_additional(schema["additionalProperties"], schema, regex))
    if "items" in schema:
        checks.append(_items(schema["items"], schema, regex))
    if len(checks) == 1:
        return checks[0]
    return lambda v: all(check(v) for check in checks)


def _type(arg, schema, regex) -> Check:
    tests = [_TYPES[t] for t in (arg if isinstance(arg, list) else [arg])]
    return tests[0] if len(tests) == 1 else (lambda v: any(test(v) for test in tests))


def _properties(arg, schema, regex) -> Check:
    props = {name: _compile(sub, regex) for name, sub in arg.items()}
    return lambda v: not _is_object(v) or all(check(v[k]) for k, check in props.items() if k in v)


def _additional(arg, schema, regex) -> Check:
    if "patternProperties" in schema:
        raise _Unknown("patternProperties")
    known = set(schema.get("properties", {}))
    if arg is True or arg == {}:
        return lambda v: True
    if arg is False:
        return lambda v: not _is_object(v) or all(k in known for k in v)
    check = _compile(arg, regex)
    return lambda v: not _is_object(v) or all(check(x) for k, x in v.items() if k not in known)


def _required(arg, schema, regex) -> Check:
    return lambda v: not _is_object(v) or all(k in v for k in arg)


def _property_names(arg, schema, regex) -> Check:
    check = _compile(arg, regex)
    return lambda v: not _is_object(v) or all(check(k) for k in v)


def _items(arg, schema, regex) -> Check:
    prefix = len(schema.get("prefixItems", []))
    if arg is False:
        return lambda v: not _is_array(v) or len(v) <= prefix
    check = _compile(arg, regex)
    return lambda v: not _is_array(v) or all(check(x) for x in v[prefix:])


def _prefix_items(arg, schema, regex) -> Check:
    checks = [_compile(sub, regex) for sub in arg]
    return lambda v: not _is_array(v) or all(check(x) for check, x in zip(checks, v))


def _any_of(arg, schema, regex) -> Check:
    checks = [_compile(sub, regex) for sub in arg]
    return lambda v: any(check(v) for check in checks)


def _pattern(arg, schema, regex) -> Check:
    search = regex(arg).search
    return lambda v: not _is_string(v) or search(v) is not None


def _bound(test: Callable[[object, object], bool], applies: Check) -> Callable:
    return lambda arg, schema, regex: (lambda v: not applies(v) or test(v, arg))


_KEYWORDS: dict[str, Callable] = {
    "type": _type,
    "properties": _properties,
    "required": _required,
    "propertyNames": _property_names,
    "prefixItems": _prefix_items,
    "anyOf": _any_of,
    "pattern": _pattern,
    "enum": lambda arg, schema, regex: (lambda v: any(equal(each, v) for each in arg)),
    "const": lambda arg, schema, regex: (lambda v: equal(v, arg)),
    "uniqueItems": lambda arg, schema, regex: (lambda v: not arg or not _is_array(v) or uniq(v)),
    "minimum": _bound(lambda v, m: not v < m, _is_number),
    "maximum": _bound(lambda v, m: not v > m, _is_number),
    "exclusiveMinimum": _bound(lambda v, m: not v <= m, _is_number),
    "minLength": _bound(lambda v, m: not len(v) < m, _is_string),
    "maxLength": _bound(lambda v, m: not len(v) > m, _is_string),
    "minItems": _bound(lambda v, m: not len(v) < m, _is_array),
    "maxItems": _bound(lambda v, m: not len(v) > m, _is_array),
    "maxProperties": _bound(lambda v, m: not len(v) > m, _is_object),
}
