"""The OpenAPI document, generated from the same msgspec models that validate requests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from drover import __version__


@dataclass(frozen=True, slots=True)
class Operation:
    method: str
    path: str
    summary: str
    request: type | None = None
    response: type | None = None
    query: tuple[tuple[str, str, str], ...] = ()  # (name, JSON type, description)


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
        parameters = [
            {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
            for name in _path_parameters(op.path)
        ] + [
            {"name": name, "in": "query", "required": False, "schema": {"type": kind}, "description": text}
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
        "components": {"schemas": components},
    }


def _path_parameters(path: str) -> list[str]:
    return [part[1:-1].split(":")[0] for part in path.split("/") if part.startswith("{")]
