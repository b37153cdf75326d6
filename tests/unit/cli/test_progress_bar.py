"""The progress bar of `drover wait --progress` and `drover status --watch` (cli/progress.py):
its counts, its width, its rate and ETA, on plain task counts and a clock the test moves."""

from __future__ import annotations

import io

from drover.cli.progress import Bar, Tally, line, tally


def test_task_states_count_as_done_running_pending_or_failed() -> None:
    counts = [{"completed": 3, "running": 2, "pending": 4}, {"held": 1, "failed": 1, "timeout": 1, "dispatched": 1}]
    assert tally(counts) == Tally(done=3, running=3, pending=5, failed=2)


def test_the_line_fits_the_width_the_bar_filled_as_the_share_ended() -> None:
    text = line(Tally(done=40, running=10, pending=45, failed=5), rate=2.0, columns=100)
    assert len(text) == 99 and text.endswith("] 45/100 | 40 done, 10 running, 45 pending, 5 failed | "
                                             "2.0 tasks/s, ETA 0:28")
    bar = text[1:text.index("]")]
    assert bar.count("#") == len(bar) * 45 // 100 and set(bar) == {"#", "."}
    narrow = line(Tally(done=1, pending=1), rate=None, columns=30)
    assert len(narrow) <= 29 and "[" not in narrow and narrow.startswith("1/2 | 1 done")


def test_the_rate_counts_tasks_ended_since_the_first_draw() -> None:
    out, now = io.StringIO(), [10.0]
    bar = Bar(out, clock=lambda: now[0])
    bar.draw(Tally(done=10, pending=90))
    now[0] += 20
    bar.draw(Tally(done=50, failed=10, pending=40))
    bar.close()
    first, second = out.getvalue().split("\r")[1:]
    assert "ETA --" in first and "2.5 tasks/s, ETA 0:16" in second and second.endswith("\x1b[K\n")


def test_an_eta_over_an_hour_gives_hours() -> None:
    assert line(Tally(pending=7201, done=1), rate=1.0, columns=200).endswith("ETA 2:00:01")
