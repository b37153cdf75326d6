"""What the allocator refuses before it asks anything of an outer scheduler: a shared cluster's
controller that is not root (its nodes could run no user's jobs), and parameters that make no
allocation."""

from __future__ import annotations

import os
from typing import Any

import pytest

from drover.controller.allocations.allocator import Allocator
from drover.core.errors import BadRequest, Conflict
from drover.protocol import api


class NoRows:
    def alloc_queues(self) -> list[Any]:
        return []

    def allocations(self, queue_id: int | None = None) -> list[Any]:
        return []


def allocator(shared: bool) -> Allocator:
    return Allocator(None, NoRows(), None, "https://h:1", "/nonexistent", "tag", shared=shared)  # type: ignore[arg-type]


def test_a_shared_cluster_whose_controller_is_not_root_refuses_allocation_queues(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 998)
    with pytest.raises(Conflict, match="runs as its service user"):
        allocator(shared=True).add(api.AllocQueueRequest(), "operator")


def test_bad_parameters_are_refused_with_every_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 998)
    with pytest.raises(BadRequest, match=r"unknown outer scheduler .cron.*--backlog is from 1 to 1000"):
        allocator(shared=False).add(api.AllocQueueRequest(manager="cron", backlog=0), "alice")
