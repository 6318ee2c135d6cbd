"""The quick check of a request (minislurm.ctld.precheck) answers as jsonschema does, with the
controller's meaning of integers and patterns, on values made from every route's schema: valid
ones, and ones a little off (a bound crossed, a type changed, a field missing or unknown)."""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minislurm.ctld import precheck, validate
from minislurm.ctld.schema import PATH_PARAMS, ROUTES

ODD = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([2.0, 0.5, -1.5, math.nan, math.inf]),
                st.text(max_size=3), st.just([]), st.just({}), st.just([1, True]), st.just({"x": 1}))


def near(schema, depth: int = 0) -> st.SearchStrategy:
    """Values shaped by ``schema``: mostly valid, sometimes just off, now and then anything."""
    if not isinstance(schema, dict) or depth > 6:
        return ODD
    options: list[st.SearchStrategy] = [ODD]
    for sub in schema.get("anyOf", []):
        options.append(near(sub, depth + 1))
    if "enum" in schema:
        options.append(st.sampled_from(schema["enum"]))
    if "const" in schema:
        options.append(st.just(schema["const"]))
    types = schema.get("type", [])
    for kind in types if isinstance(types, list) else [types]:
        options.append(_of_type(kind, schema, depth))
    return st.one_of(*options)


def _edges(low, high, integers: bool) -> st.SearchStrategy:
    low = -10 if low is None else low
    high = low + 10 if high is None else high
    points = [low - 1, low, high, high + 1, (low + high) // 2]
    numbers = st.sampled_from(points) | st.integers(low - 2, min(high + 2, low + 1000))
    return numbers if integers else numbers | numbers.map(float) | numbers.map(lambda x: x + 0.5)


def _of_type(kind: str, schema: dict, depth: int) -> st.SearchStrategy:
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        return _edges(low, schema.get("maximum"), kind == "integer")
    if kind == "string":
        longest = schema.get("maxLength", 8)
        texts = st.text(max_size=min(longest + 2, 12)) | st.sampled_from(["", "a" * longest, "a" * (longest + 1)])
        if "pattern" in schema:
            texts |= st.from_regex(validate._regex(schema["pattern"]), fullmatch=True).filter(
                lambda t: len(t) <= longest + 1)
            texts |= st.from_regex(validate._regex(schema["pattern"]), fullmatch=True).map(lambda t: t + "\n")
        return texts
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        prefix = [near(s, depth + 1) for s in schema.get("prefixItems", [])]
        rest = near(schema["items"], depth + 1) if isinstance(schema.get("items"), dict) else ODD
        most = min(schema.get("maxItems", 4), 4) + 1
        return st.tuples(st.tuples(*prefix), st.lists(rest, max_size=most)).map(
            lambda t: list(t[0]) + t[1]) | st.lists(rest, max_size=most)
    if kind == "object":
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        names = near(schema["propertyNames"], depth + 1) if "propertyNames" in schema else st.text(max_size=4)
        extra_values = near(extra, depth + 1) if isinstance(extra, dict) else ODD
        return st.tuples(
            st.fixed_dictionaries({}, optional={k: near(v, depth + 1) for k, v in props.items()}),
            st.dictionaries(names.filter(lambda n: isinstance(n, str)), extra_values, max_size=3),
        ).map(lambda t: {**t[1], **t[0]})
    return ODD


def _every_schema() -> list[tuple[str, dict]]:
    out = [(f"path {name}", schema) for name, schema in PATH_PARAMS.items()]
    for (method, path), spec in ROUTES.items():
        if spec.get("body") is not None:
            out.append((f"{method} {path} body", spec["body"]))
        out += [(f"{method} {path} ?{q}", schema) for q, schema in spec.get("query", {}).items()]
    return out


SCHEMAS = _every_schema()


def test_every_schema_of_the_api_has_a_quick_check():
    assert [name for name, schema in SCHEMAS if precheck.compile_schema(schema, validate._regex) is None] == []


@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_the_quick_check_answers_as_jsonschema_does(data):
    name, schema = data.draw(st.sampled_from(SCHEMAS))
    value = data.draw(near(schema), label=name)
    quick = precheck.compile_schema(schema, validate._regex)
    assert quick(value) == validate._Validator(schema).is_valid(value), (name, value)
