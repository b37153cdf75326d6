"""Checkpoint environments (/v1/checkpoints): the cluster's [checkpoints.NAME], for users to
choose from (`drover submit --checkpoint NAME`, qsub -ckpt) and for `qconf -sckpt`. Read only:
they are changed in drover.toml."""

from __future__ import annotations

from starlette.responses import Response

from drover.api.endpoint import Call, Endpoint
from drover.api.http import json_response
from drover.api.openapi import Operation
from drover.controller.security.auth import Access
from drover.protocol import api


async def list_checkpoints(call: Call) -> Response:
    return json_response(api.CheckpointList(checkpoints=call.controller.reads.checkpoints()))


ENDPOINTS = [
    Endpoint(Operation("GET", "/v1/checkpoints", "Checkpoint environments jobs may name ([checkpoints.NAME])",
                       response=api.CheckpointList), Access.USER, list_checkpoints),
]
