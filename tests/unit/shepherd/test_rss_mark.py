"""The shepherd's high-water mark, which a job's first process starts from, and what wait4's
ru_maxrss says of the job beside it (shepherd/rss_mark.py)."""

from __future__ import annotations

from drover.shepherd import rss_mark

MIB = 1024


def test_wait4s_figure_is_the_jobs_only_above_the_mark_it_started_from() -> None:
    assert rss_mark.job_max_rss_kib(104_000, 17_000) == 104_000  # the job's own pages went higher
    assert rss_mark.job_max_rss_kib(17_000, 17_000) == rss_mark.NOT_KNOWN  # the shepherd's mark, folded in at exec
    assert rss_mark.job_max_rss_kib(12_000, 17_000) == rss_mark.NOT_KNOWN  # a fork's copy started lower
    assert rss_mark.job_max_rss_kib(104_000, None) == rss_mark.NOT_KNOWN  # no mark read: nothing to tell by
    assert rss_mark.NOT_KNOWN == 0


def test_the_mark_comes_down_to_what_the_shepherd_holds_now() -> None:
    """A peak of earlier work (a shepherd serves attempt after attempt) is not what the next job
    starts from once the mark is lowered."""
    before = rss_mark.own_mark_kib()
    assert before is not None and before > 0
    held = b"x" * (64 << 20)  # 64 MiB, written: resident
    raised = rss_mark.own_mark_kib()
    assert raised is not None and raised >= before and raised >= 64 * MIB
    del held  # unmapped: the resident set falls, the mark stays
    assert (rss_mark.own_mark_kib() or 0) >= 64 * MIB
    rss_mark.lower_own_mark()
    lowered = rss_mark.own_mark_kib()
    assert lowered is not None and lowered <= raised - 48 * MIB
