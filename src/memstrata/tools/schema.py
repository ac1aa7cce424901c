"""The JSON Schema pieces the tool definitions are written in, and the one
argument check every interface runs (Python, OpenAI, Anthropic, MCP).

* The builders (``string``, ``integer``, ``boolean``, ``array``, ``obj``,
  ``nullable``) return plain JSON Schema dicts: what a model reads, and
  what ``check`` enforces. No pydantic: the core library does not depend on it.
* ``check(schema, arguments)`` returns the arguments with defaults filled in,
  or raises ``InvalidInput`` naming the argument and what it must be: an
  unknown argument (``from`` for ``from_line``) is refused, never ignored;
  a string is made valid text (``model.valid_text``: a model may send lone
  surrogates); an array or object sent as a JSON string (some clients do)
  is parsed first.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..errors import InvalidInput
from ..model import valid_text

__all__ = ["array", "boolean", "check", "count", "integer", "nullable", "obj", "string"]

Schema = dict[str, Any]


def string(
    description: str,
    *,
    enum: tuple[str, ...] | None = None,
    min_length: int | None = None,
    max_length: int | None = None,
    default: str | None = None,
) -> Schema:
    schema: Schema = {"type": "string", "description": description}
    if enum is not None:
        schema["enum"] = list(enum)
    if min_length is not None:
        schema["minLength"] = min_length
    if max_length is not None:
        schema["maxLength"] = max_length
    if default is not None:
        schema["default"] = default
    return schema


def integer(description: str, low: int, high: int, default: int | None = None) -> Schema:
    schema: Schema = {"type": "integer", "description": description, "minimum": low}
    schema["maximum"] = high
    if default is not None:
        schema["default"] = default
    return schema


def count(description: str) -> Schema:
    """A whole number >= 0 (output schemas: a count, a line, a size)."""
    return {"type": "integer", "description": description, "minimum": 0}


def boolean(description: str, default: bool = False) -> Schema:
    return {"type": "boolean", "description": description, "default": default}


def array(description: str, items: Schema, max_items: int | None = None) -> Schema:
    schema: Schema = {"type": "array", "description": description, "items": items}
    if max_items is not None:
        schema["maxItems"] = max_items
    return schema


def obj(
    properties: Mapping[str, Schema],
    required: tuple[str, ...] = (),
    *,
    description: str | None = None,
    closed: bool = True,
) -> Schema:
    """An object schema; ``closed``: no property beyond ``properties``."""
    schema: Schema = {"type": "object"}
    if description is not None:
        schema["description"] = description
    schema["properties"] = dict(properties)
    if required:
        schema["required"] = list(required)
    if closed:
        schema["additionalProperties"] = False
    return schema


def nullable(schema: Schema) -> Schema:
    """``schema`` that may also be null (output schemas: a value not always there)."""
    return {**schema, "type": [schema["type"], "null"]}


# -- the check -----------------------------------------------------------------------------

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict,),
}
_WHAT = {
    "string": "a string",
    "integer": "a whole number",
    "boolean": "true or false",
    "array": "an array",
    "object": "an object",
}


def check(schema: Schema, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """``arguments`` checked against the object ``schema`` (see the module)."""
    properties: Mapping[str, Schema] = schema.get("properties", {})
    unknown = [key for key in arguments if key not in properties]
    if unknown:
        known = ", ".join(properties) or "none"
        raise InvalidInput(f"unknown argument {unknown[0]!r}; this tool takes: {known}")
    for key in schema.get("required", ()):
        if arguments.get(key) is None:
            raise InvalidInput(f"{key} is required")
    checked: dict[str, Any] = {}
    for key, spec in properties.items():
        value = arguments.get(key)
        if value is None:
            checked[key] = spec.get("default")
        else:
            checked[key] = _value(key, spec, value)
    return checked


def _value(name: str, spec: Schema, value: Any) -> Any:
    kind = spec["type"]
    if kind in ("array", "object") and isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise InvalidInput(f"{name} must be {_WHAT[kind]}") from None
    if not isinstance(value, _TYPES[kind]) or (kind == "integer" and isinstance(value, bool)):
        raise InvalidInput(f"{name} must be {_WHAT[kind]}")
    if isinstance(value, str):
        return _string(name, spec, valid_text(value))
    if isinstance(value, int):
        low, high = spec.get("minimum"), spec.get("maximum")
        if (low is not None and value < low) or (high is not None and value > high):
            raise InvalidInput(f"{name} must be a whole number from {low} to {high}")
    if isinstance(value, list | tuple):
        if "maxItems" in spec and len(value) > spec["maxItems"]:
            raise InvalidInput(f"{name} holds at most {spec['maxItems']} entries")
        return [_value(f"{name}[{n}]", spec["items"], item) for n, item in enumerate(value)]
    return value


def _string(name: str, spec: Schema, value: str) -> str:
    if "enum" in spec and value not in spec["enum"]:
        raise InvalidInput(f"{name} must be one of {', '.join(spec['enum'])}")
    if len(value.strip()) < spec.get("minLength", 0):
        raise InvalidInput(f"{name} must not be empty")
    if "maxLength" in spec and len(value) > spec["maxLength"]:
        raise InvalidInput(f"{name} is longer than {spec['maxLength']} characters")
    return value
