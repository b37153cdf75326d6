"""The OpenAPI document, generated from the same msgspec models that validate requests."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import msgspec

from drover import __version__
from drover.core.limits import MAX_ID, MAX_INDEX

Schema = dict[str, Any]


def whole(minimum: int, maximum: int = MAX_ID) -> Schema:
    """A whole number as the API reads one (core/limits.py's ascii_int: ASCII digits, bounded)."""
    return {"type": "integer", "minimum": minimum, "maximum": maximum}


# Path parameters that mean the same on every path; any other is a string unless its operation
# says otherwise.
PATH_PARAMETERS: dict[str, Schema] = {"job_id": whole(1), "task": whole(0, MAX_INDEX), "attempt": whole(0)}


@dataclass(frozen=True, slots=True)
class Operation:
    method: str
    path: str
    summary: str
    request: type | None = None
    response: type | None = None
    query: tuple[tuple[str, str | Schema, str], ...] = ()  # (name, JSON type or schema, description)
    path_parameters: tuple[tuple[str, Schema], ...] = ()  # those not in PATH_PARAMETERS, if not strings


def openapi_document(operations: list[Operation]) -> dict[str, Any]:
    models = sorted(
        {model for op in operations for model in (op.request, op.response) if model is not None},
        key=lambda model: model.__name__,
    )
    schemas, components = msgspec.json.schema_components(
        models, ref_template="#/components/schemas/{name}"
    )
    refs = dict(zip(models, schemas))
    paths: dict[str, dict[str, Any]] = {}
    for op in operations:
        entry: dict[str, Any] = {"summary": op.summary, "responses": {}}
        given = {**PATH_PARAMETERS, **dict(op.path_parameters)}
        parameters = [
            {"name": name, "in": "path", "required": True, "schema": given.get(name, {"type": "string"})}
            for name in _path_parameters(op.path)
        ] + [
            {"name": name, "in": "query", "required": False,
             "schema": {"type": kind} if isinstance(kind, str) else kind, "description": text}
            for name, kind, text in op.query
        ]
        if parameters:
            entry["parameters"] = parameters
        if op.request is not None:
            entry["requestBody"] = {
                "required": True,
                "content": {"application/json": {"schema": refs[op.request]}},
            }
        ok: dict[str, Any] = {"description": "OK"}
        if op.response is not None:
            ok["content"] = {"application/json": {"schema": refs[op.response]}}
        entry["responses"]["200"] = ok
        entry["responses"]["default"] = {
            "description": "An error, explained in one line",
            "content": {"application/json": {"schema": {
                "type": "object",
                "properties": {"error": {"type": "string"}, "kind": {"type": "string"}},
                "required": ["error", "kind"],
            }}},
        }
        path = "/".join("{" + part[1:-1].split(":")[0] + "}" if part.startswith("{") else part
                        for part in op.path.split("/"))
        paths.setdefault(path, {})[op.method.lower()] = entry
    return {
        "openapi": "3.1.0",
        "info": {"title": "Drover controller API", "version": __version__},
        "paths": paths,
        "components": {"schemas": {name: _dedented(schema) for name, schema in components.items()}},
    }


def _dedented(schema: Schema) -> Schema:
    """A model's description is its docstring; dedented here, since msgspec before 0.23 kept the
    docstring's indent and later releases remove it, and the document should not depend on which."""
    if isinstance(schema.get("description"), str):
        return {**schema, "description": inspect.cleandoc(schema["description"])}
    return schema


def _path_parameters(path: str) -> list[str]:
    return [part[1:-1].split(":")[0] for part in path.split("/") if part.startswith("{")]
