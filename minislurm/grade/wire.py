"""Answers as data, from the student's kernel to the referee (:mod:`.referee`).

The kernel side (:func:`probe`, :func:`call`) runs in the student's kernel and turns a value into
JSON: numbers, strings, None, lists, tuples, dicts, sets and dataclasses of minislurm; a function
becomes a mark that the referee turns into a proxy; anything else an opaque mark.  A submission
may tamper with this module in its own kernel: that changes only what its own answers look like,
never a reference, because the referee decodes (:func:`decode`) in a process of its own and
builds nothing but plain values and minislurm dataclasses through their constructors.
"""

from __future__ import annotations

import dataclasses
import json
import math

MIME = "application/x-minislurm-grade+json"
MAX_BYTES = 1_000_000  # an answer bigger than this is not an answer
MAX_DEPTH = 40


class Opaque:
    """A value that did not cross over (an unsupported type, too big, too deep): equals nothing."""

    def __init__(self, why: str):
        self.why = why

    def __eq__(self, other):
        return False

    __hash__ = None

    def __repr__(self):
        return f"<{self.why}>"


# --- kernel side ------------------------------------------------------------------------------

def encode(value, depth: int = 0):
    if depth > MAX_DEPTH:
        return {"__opaque__": "a value nested too deep"}
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value if type(value) is int else {"__opaque__": f"a {type(value).__name__}"}
    if isinstance(value, float):
        return value if math.isfinite(value) else {"__float__": repr(value)}
    if type(value) is list:
        return [encode(v, depth + 1) for v in value]
    if type(value) is tuple:
        return {"__tuple__": [encode(v, depth + 1) for v in value]}
    if type(value) in (set, frozenset):
        return {"__set__": [encode(v, depth + 1) for v in value]}
    if type(value) is dict:
        return {"__dict__": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()]}
    cls = type(value)
    if dataclasses.is_dataclass(cls) and cls.__module__.startswith("minislurm."):
        fields = {f.name: encode(getattr(value, f.name), depth + 1) for f in dataclasses.fields(cls) if f.init}
        return {"__dataclass__": f"{cls.__module__}:{cls.__qualname__}", "fields": fields}
    if callable(value):
        return {"__function__": True}
    return {"__opaque__": f"a {cls.__name__}"}


def _publish(payload: dict) -> None:
    from IPython.display import display

    text = json.dumps(payload)
    if len(text) > MAX_BYTES:
        text = json.dumps({"value": {"__opaque__": "an answer of more than 1 MB"}})
    display({MIME: text}, raw=True)


def probe(namespace: dict, name: str) -> None:
    """Publish the notebook variable ``name``: its encoded value, or that it is missing."""
    if name not in namespace:
        _publish({"missing": True})
        return
    try:
        _publish({"value": encode(namespace[name])})
    except Exception as e:  # noqa: BLE001 - a student's object may raise anything
        _publish({"value": {"__opaque__": f"a value that could not be read ({type(e).__name__})"}})


def call(namespace: dict, name: str, args_json: str) -> None:
    """Call the notebook's function ``name`` with decoded arguments; publish what it returns or raises."""
    args, kwargs = decode(json.loads(args_json))
    try:
        result = namespace[name](*args, **kwargs)
    except BaseException as e:  # noqa: BLE001 - the student's function failed: that is the answer
        _publish({"raised": f"{type(e).__name__}: {str(e)[:200]}"})
        return
    try:
        _publish({"value": encode(result)})
    except Exception as e:  # noqa: BLE001
        _publish({"value": {"__opaque__": f"a value that could not be read ({type(e).__name__})"}})


# --- referee side -----------------------------------------------------------------------------

def _dataclass(qualified: str):
    module, _, qualname = qualified.partition(":")
    if not module.startswith("minislurm.") or not qualname.isidentifier():
        return None
    import importlib

    try:
        cls = getattr(importlib.import_module(module), qualname)
    except (ImportError, AttributeError):
        return None
    return cls if dataclasses.is_dataclass(cls) and isinstance(cls, type) else None


def decode(data, depth: int = 0):
    """A plain value from :func:`encode`'s JSON; never runs code other than minislurm constructors."""
    if depth > MAX_DEPTH:
        return Opaque("a value nested too deep")
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        return [decode(v, depth + 1) for v in data]
    if not isinstance(data, dict) or len(data) > 2:
        return Opaque("an unreadable value")
    if "__tuple__" in data:
        return tuple(decode(v, depth + 1) for v in data["__tuple__"])
    if "__float__" in data:
        return float(data["__float__"]) if data["__float__"] in ("nan", "inf", "-inf") else Opaque("a float")
    if "__set__" in data:
        items = [decode(v, depth + 1) for v in data["__set__"]]
        try:
            return set(items)
        except TypeError:
            return Opaque("a set of unhashable values")
    if "__dict__" in data:
        out = {}
        for pair in data["__dict__"]:
            try:
                k, v = pair
                out[decode(k, depth + 1)] = decode(v, depth + 1)
            except (TypeError, ValueError):
                return Opaque("a dict with unhashable keys")
        return out
    if "__dataclass__" in data:
        cls = _dataclass(str(data["__dataclass__"]))
        fields = data.get("fields")
        if cls is None or not isinstance(fields, dict):
            return Opaque(f"an object of {data['__dataclass__']}")
        try:
            return cls(**{str(k): decode(v, depth + 1) for k, v in fields.items()})
        except Exception as e:  # noqa: BLE001 - a bad field value
            return Opaque(f"a {cls.__name__} that could not be rebuilt ({type(e).__name__})")
    if "__opaque__" in data:
        return Opaque(str(data["__opaque__"])[:100])
    return Opaque("an unreadable value")


def encode_call(args: tuple, kwargs: dict) -> str:
    """The referee's arguments for :func:`call` (they are checks' plain data)."""
    return json.dumps({"__tuple__": [encode(list(args)), encode(kwargs)]})
