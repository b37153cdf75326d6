"""Slurm's hostlist expressions, on plain data."""

from __future__ import annotations

import pytest

from drover.core.errors import BadRequest


def test_hostlists_expand_as_slurm_does() -> None:
    from drover.compat.slurm.hostlist import expand

    assert expand("node[1-3,5],gpu07") == ["node1", "node2", "node3", "node5", "gpu07"]
    assert expand("n[08-10]") == ["n08", "n09", "n10"]
    with pytest.raises(BadRequest, match="unbalanced"):
        expand("node[1-3")
