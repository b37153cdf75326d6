"""The controller's samples of running attempts: kept per node's round, bounded, and forgotten
when an attempt leaves its node's round, reports its exit, or its node's channel closes."""

from __future__ import annotations

from drover.controller.nodes.samples import HISTORY, LiveSamples
from drover.protocol.node_channel import Exiting, Sample, Samples


def sample(attempt: str, at: float, memory: int = 1, cpu: float = 0.5) -> Sample:
    return Sample(attempt=attempt, at=at, memory_bytes=memory, rss_bytes=memory, peak_bytes=memory, cpu=cpu,
                  cpu_average=cpu, memory_average_bytes=memory, processes=1, threads=1)


def test_rounds_keep_a_bounded_history_per_attempt() -> None:
    samples = LiveSamples()
    for n in range(HISTORY + 5):
        samples.take("n1", [Samples([sample("1.0.1", n, memory=n), sample("2.3.1", n)])])
    [(name, entry)] = samples.of_job(1)
    assert name == "1.0.1" and entry.node == "n1" and len(entry.history) == HISTORY
    assert entry.latest.at == HISTORY + 4 and entry.history[0].at == 5
    assert [name for name, _ in samples.of_job(2)] == ["2.3.1"] and len(samples) == 2


def test_attempts_are_forgotten_when_they_end() -> None:
    samples = LiveSamples()
    samples.take("n1", [Samples([sample("1.0.1", 1), sample("2.0.1", 1), sample("3.0.1", 1)])])
    samples.take("n2", [Samples([sample("4.0.1", 1)])])
    samples.take("n1", [Samples([sample("1.0.1", 2), sample("2.0.1", 2)])])  # 3 is no longer in n1's round
    assert samples.of_job(3) == []
    samples.take("n1", [Exiting("2.0.1", {"exit_code": 0, "signal": None, "failure": None, "timed_out": False,
                                          "terminated": False, "out_of_memory": False})])
    assert samples.of_job(2) == []
    samples.node_gone("n1")
    assert [name for name, _ in samples] == ["4.0.1"]
    samples.take("n2", [Samples([])])
    assert len(samples) == 0 and samples.of_job(4) == []


def test_a_node_speaks_only_for_the_attempts_sent_to_it() -> None:
    """Another node's samples of an attempt, or its exit report, change nothing of what `drover
    top` and `drover show` say of it."""
    sent = {"1.0.1": "n1", "2.0.1": "n2"}
    samples = LiveSamples(sent.get)
    samples.take("n1", [Samples([sample("1.0.1", 1, memory=10)])])
    samples.take("n2", [Samples([sample("1.0.1", 2, memory=10**12), sample("2.0.1", 2), sample("9.0.1", 2)])])
    [(_, entry)] = samples.of_job(1)
    assert (entry.node, entry.latest.memory_bytes, len(entry.history)) == ("n1", 10, 1)
    assert samples.of_job(9) == [] and [name for name, _ in samples.of_job(2)] == ["2.0.1"]
    samples.take("n2", [Exiting("1.0.1", {"exit_code": 0, "signal": None, "failure": None, "timed_out": False,
                                          "terminated": False, "out_of_memory": False})])
    assert [name for name, _ in samples.of_job(1)] == ["1.0.1"]
