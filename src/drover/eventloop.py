"""Run a daemon's event loop: uvloop where it is installed (it halves the loop's own cost),
the standard asyncio loop otherwise."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any


def run(main: Coroutine[Any, Any, None]) -> None:
    try:
        import uvloop
    except ImportError:
        asyncio.run(main)
    else:
        uvloop.run(main)
