"""The API's one validation layer: a request's path, query and body against its route's schema.

Runs before any handler (:mod:`minislurm.ctld.edge`), so handlers see only typed,
bounded values and a refused request has changed nothing.  A failure is a
:class:`RequestError` (HTTP 400, or 404 for a job id that cannot exist) whose text is Slurm's
message when Slurm has one for the field (``Node count specification invalid``, ``Invalid job
id specified``, ...) followed by the field and what was wrong with it; otherwise
``Invalid value for <field>: <why>``.

Query and path values are strings on the wire: each is converted by its schema's type first
(an ``array`` is a comma-separated list, OpenAPI's ``style: form, explode: false``).
"""

from __future__ import annotations

import functools
import json
import math
import re

from jsonschema import Draft202012Validator, ValidationError
from jsonschema.validators import extend

from minislurm.core import errors
from minislurm.core.errors import SlurmError
from minislurm.ctld import precheck
from minislurm.ctld.schema import MAX_DEPTH, PATH_PARAMS, ROUTES

_WORDS = {"integer": "an integer", "number": "a number", "string": "a string", "boolean": "true or false",
          "array": "a list", "object": "an object", "null": "null"}
_INT = re.compile(r"-?[0-9]{1,40}")
_NUM = re.compile(r"-?[0-9]{1,40}(\.[0-9]{0,40})?([eE][-+]?[0-9]{1,3})?")


@functools.cache
def _regex(pattern: str) -> re.Pattern:
    """A schema pattern with ECMA-262's meaning, which JSON Schema uses: a final ``$`` is the end
    of the text (Python's ``$`` also matches before a final newline: "gpu01\\n" would pass)."""
    return re.compile(pattern[:-1] + r"\Z" if pattern.endswith("$") and not pattern.endswith("\\$") else pattern)


def _pattern(validator, pattern: str, instance, schema):
    if validator.is_type(instance, "string") and not _regex(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


# JSON's integers only: 2.0 is a number, never a count (a float would reach range() and lists).
_Validator = extend(Draft202012Validator, validators={"pattern": _pattern},
                    type_checker=Draft202012Validator.TYPE_CHECKER.redefine(
                        "integer", lambda _, x: isinstance(x, int) and not isinstance(x, bool)))


class RequestError(SlurmError):
    """A request the schema refuses: a client error, answered 400 (404 for a job id in the path)."""

    def __init__(self, message: str, detail: str | None = None, status: int = 400):
        super().__init__(message, detail)
        self.status = status


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def parse_json(raw: bytes) -> object:
    """The body as JSON: UTF-8, no NaN/Infinity, at most MAX_DEPTH levels deep."""
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)
    except UnicodeDecodeError:
        raise RequestError("Malformed request", "the body is not UTF-8 text") from None
    except RecursionError:
        raise RequestError("Malformed request", f"JSON nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:
        raise RequestError("Malformed request", f"invalid JSON ({str(exc)[:80]})") from None
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise RequestError("Malformed request", f"JSON nested deeper than {MAX_DEPTH} levels")
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)
    return data


# by id() of the schema dicts of minislurm.ctld.schema, which live for good: the quick check
# (minislurm.ctld.precheck; None for a schema it does not know) and jsonschema's validator
_COMPILED: dict[int, tuple[precheck.Check | None, _Validator]] = {}


def _check(schema: dict, value, where: list) -> None:
    compiled = _COMPILED.get(id(schema))
    if compiled is None:
        compiled = _COMPILED[id(schema)] = (precheck.compile_schema(schema, _regex), _Validator(schema))
    quick, validator = compiled
    if quick is not None and quick(value):
        return
    error = next(validator.iter_errors(value), None)
    if error is not None:
        raise _explain(error, schema, where)


def _slurm_text(schema: dict, path) -> str | None:
    """The ``x-slurm-error`` nearest above the faulty value, following its path down the schema."""
    found = schema.get("x-slurm-error")
    for part in path:
        if isinstance(part, int):
            tuple_items = schema.get("prefixItems", [])
            schema = tuple_items[part] if part < len(tuple_items) else schema.get("items")
        else:
            schema = schema.get("properties", {}).get(part, schema.get("additionalProperties"))
        if not isinstance(schema, dict):
            break
        found = schema.get("x-slurm-error", found)
    return found


def _name(part) -> str:
    text = str(part)
    if len(text) > 40 or not text.isprintable():
        text = repr(text[:40])
    return text


def _explain(error, root: dict, where: list) -> RequestError:
    """Slurm's text (or ours) for the first thing wrong with a value."""
    if where == ["job_id"]:  # no such job can exist: Slurm's plain answer, as for an unknown id
        return RequestError(errors.INVALID_JOB_ID, status=404)
    path = [*where, *error.absolute_path]
    kind, schema, why = error.validator, error.schema, error.schema.get("description")
    if kind == "additionalProperties":
        extra = sorted(set(error.instance) - set(schema.get("properties", {})))
        return RequestError("Unknown field", ".".join(_name(p) for p in [*path, extra[0] if extra else "?"]))
    if kind == "required":
        missing = next(r for r in schema["required"] if r not in error.instance)
        return RequestError("Missing field", ".".join(_name(p) for p in [*path, missing]))
    if kind == "type":
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        reason = "expected " + " or ".join(_WORDS[t] for t in types)
    elif kind in ("minimum", "maximum", "exclusiveMinimum"):
        bound = schema[kind]
        reason = {"minimum": f"must be at least {bound}", "maximum": f"must be at most {bound}",
                  "exclusiveMinimum": f"must be above {bound}"}[kind]
    elif kind == "maxLength":
        reason = f"too long (at most {schema['maxLength']} characters)"
    elif kind == "minLength":
        reason = "must not be empty"
    elif kind in ("maxItems", "maxProperties"):
        reason = f"too many items (at most {schema[kind]})"
    elif kind == "minItems":
        reason = why and f"expected {why}" or f"needs at least {schema['minItems']} item(s)"
    elif kind == "uniqueItems":
        reason = "has repeated items"
    elif "propertyNames" in error.relative_schema_path:  # a key of a map (environment, extra)
        reason = f"invalid name {str(error.instance)[:40]!r}" + (f" (expected {why})" if why else "")
    else:  # pattern, enum, const, anyOf, items (a tuple too long) ...
        reason = f"expected {why}" if why else "is invalid"
    field = ".".join(_name(p) for p in path) or "body"
    slurm = _slurm_text(root, error.absolute_path)
    if slurm:
        return RequestError(slurm, f"{field} {reason}")
    if kind == "maxLength":
        return RequestError(errors.PATHNAME_TOO_LONG, f"{field} {reason}")
    return RequestError(f"Invalid value for {field}", reason)


def _convert(text: str, schema: dict):
    """A query or path string as the type its schema names (left as text when it does not parse)."""
    types = schema.get("type", "string")
    types = types if isinstance(types, list) else [types]
    if "array" in types:
        return [_convert(t, schema["items"]) for t in text.split(",") if t]
    if "integer" in types and _INT.fullmatch(text):
        return int(text)
    if "number" in types and _NUM.fullmatch(text) and math.isfinite(float(text)):
        return float(text)
    return text


def params(route: tuple[str, str], match_info, query) -> tuple[dict, dict]:
    """The path and query parameters, converted and checked."""
    path = {}
    for name, text in match_info.items():
        schema = PATH_PARAMS[name]
        path[name] = _convert(text, schema)
        _check(schema, path[name], [name])
    allowed = ROUTES[route].get("query", {})
    out = {}
    for name in query.keys():
        if name not in allowed:
            raise RequestError("Unknown query parameter", _name(name))
        values = query.getall(name)
        if len(values) > 1:
            raise RequestError(f"Invalid value for {_name(name)}", "given more than once")
        out[name] = _convert(values[0], allowed[name])
        _check(allowed[name], out[name], [name])
    return path, out


def body(route: tuple[str, str], data) -> dict:
    """The body, checked; a route without a body schema takes none (or ``{}``)."""
    schema = ROUTES[route].get("body")
    if schema is None:
        if data not in (None, {}):
            raise RequestError("Malformed request", "this request takes no body")
        return {}
    if data is None:
        data = {}
    _check(schema, data, [])
    return data
