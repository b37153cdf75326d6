"""`drover web`'s command line: its listening address, and that no other command loads it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from drover.cli.commands.web import listen_address
from drover.core.errors import BadRequest
from drover.web.server import _filters


def test_listen_address_takes_host_and_port_and_refuses_the_rest() -> None:
    assert listen_address("127.0.0.1:8765") == ("127.0.0.1", 8765)
    assert listen_address("[::1]:0") == ("::1", 0)
    for bad in ("8765", ":8765", "127.0.0.1:", "127.0.0.1:http", "127.0.0.1:70000", "127.0.0.1:٣"):
        with pytest.raises(BadRequest, match="HOST:PORT"):
            listen_address(bad)


def test_other_commands_never_import_the_dashboard() -> None:
    code = ("import sys\nfrom drover.cli.main import main\nmain(['--help'])\n"
            "print('LOADED' if any(m.startswith('drover.web') for m in sys.modules) else 'NOT LOADED')")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "web" in result.stdout and result.stdout.strip().endswith("NOT LOADED")


def test_filters_read_from_the_query_keep_only_what_they_know() -> None:
    chosen = _filters({"state": "held", "all": "1", "since_days": "2.5", "by": "day"})
    assert (chosen.state, chosen.include_ended, chosen.since_days, chosen.by) == ("held", True, 2.5, "day")
    odd = _filters({"since_days": "soon", "by": "anything"})
    assert odd.since_days is None and odd.by == "user"
