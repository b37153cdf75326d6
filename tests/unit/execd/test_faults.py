"""The fault-injection seam: off unless the environment asks, and a pause that holds until its
marker file goes."""

from __future__ import annotations

import asyncio
from pathlib import Path

from drover.execd.faults import NO_FAULTS, PAUSE_BEFORE, Faults, pause_marker
from drover.spool.layout import SpoolDir


def test_off_unless_the_environment_names_a_step() -> None:
    assert not Faults.from_environment({}) and not Faults.from_environment({PAUSE_BEFORE: ""})
    assert Faults.from_environment({PAUSE_BEFORE: "mail"}) == Faults(pause_before="mail")


def test_other_steps_and_no_faults_pass_straight_through(tmp_path: Path) -> None:
    spool = SpoolDir(str(tmp_path), "1.0.1")
    Path(spool.path).mkdir()

    async def through() -> None:
        await asyncio.wait_for(Faults(pause_before="mail").before_cleanup_step(spool, "report"), 1)
        await asyncio.wait_for(NO_FAULTS.before_cleanup_step(spool, "mail"), 1)

    asyncio.run(through())
    assert list(Path(spool.path).iterdir()) == []


def test_the_pause_holds_until_its_marker_is_removed(tmp_path: Path) -> None:
    spool = SpoolDir(str(tmp_path), "1.0.1")
    Path(spool.path).mkdir()
    marker = Path(spool.record(pause_marker("mail")))

    async def paused() -> None:
        pause = asyncio.create_task(Faults(pause_before="mail").before_cleanup_step(spool, "mail"))
        while not marker.exists():
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)
        assert not pause.done()
        marker.unlink()
        await asyncio.wait_for(pause, 1)

    asyncio.run(paused())
