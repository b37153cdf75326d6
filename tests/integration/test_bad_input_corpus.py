"""Every bad input gets a clear answer: each case of tests/data/bad_inputs.tsv (the `drover`
commands, the three kinds of directives, every Slurm and Grid Engine front end, raw API requests)
runs as a real process against one real cluster, and must be refused with the status and the
message the corpus expects, never a traceback or a server error, and must change nothing: the
cluster's jobs and its event log are the same afterwards.

To add a case, add a line to the corpus (its header says how); tests/helpers/bad_inputs.py reads
and runs it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from tests.helpers import bad_inputs
from tests.helpers.bad_inputs import Case
from tests.helpers.cluster import LocalCluster
from tests.helpers.leftovers import kill_all, left_behind

CORPUS = Path(__file__).parents[1] / "data" / "bad_inputs.tsv"
CASES = bad_inputs.load_cases(CORPUS)


class Corpus:
    """The cluster the corpus runs against, its front ends, and the jobs the cases may name."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster
        self.bin_dir = cluster.root / "bin"
        cluster.drover("compat", "install", str(self.bin_dir))
        ended = cluster.submit("-J", "ended", "--", "true")
        cluster.drover("wait", str(ended))
        held = cluster.submit("--hold", "-J", "held", "--", "true")
        self.values = {"ended": str(ended), "held": str(held)}
        # The front ends find `drover` and each other on PATH, as a user's shell would.
        self.env = {**cluster.env, "PATH": f"{self.bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}"}

    def snapshot(self) -> bytes:
        """The cluster's jobs (all of them, with tasks and attempts) and its whole event log."""
        with self.cluster.client() as client:
            jobs = [client.job(job.id) for job in client.jobs(include_ended=True)]
            return msgspec.json.encode((jobs, client.events()))

    def run(self, case: Case) -> bad_inputs.Outcome:
        if case.is_api:
            return bad_inputs.call_api(case, self.cluster.socket, self.values)
        words = bad_inputs.substitute(case.words, self.values)
        program = words[0]
        if program == "drover":
            import sys

            argv = [sys.executable, "-m", "drover", *words[1:]]
        else:
            assert (self.bin_dir / program).exists(), f"no front end {program} is installed"
            argv = [str(self.bin_dir / program), *words[1:]]
        return bad_inputs.run_command(case, argv, self.env, self.cluster.workdir)


@pytest.fixture(scope="module")
def corpus() -> Iterator[Corpus]:
    local = LocalCluster()
    try:
        local.start()
        yield Corpus(local)
    except BaseException:
        print(local.logs())
        raise
    finally:
        problems = local.stop()
    assert not problems, "; ".join(problems)


@pytest.fixture(autouse=True)
def no_leftover_processes(request: pytest.FixtureRequest) -> Iterator[None]:
    """As the global guard, but the module's own cluster lives on between its cases: no
    process may be left but its daemons and what they run."""
    yield
    if "corpus" not in request.fixturenames:
        return
    cluster = request.getfixturevalue("corpus").cluster
    found = left_behind(p.pid for p in (cluster.controller, cluster.execd) if p is not None)
    if found:
        pytest.fail(f"the case left processes behind: {kill_all(found)}")


def test_the_corpus_is_large_and_covers_every_command() -> None:
    from drover.cli.commands.compat import COMMANDS as FRONT_ENDS

    programs = {case.words[0] for case in CASES}
    assert len(CASES) >= 150
    assert set(FRONT_ENDS) - {"qrsh"} <= programs, sorted(set(FRONT_ENDS) - programs)
    drover_commands = {case.words[1] for case in CASES if case.words[0] == "drover" and len(case.words) > 1}
    assert {"submit", "run", "show", "cancel", "hold", "release", "signal", "wait", "logs", "fetch", "events",
            "history", "nodes", "config", "up", "down"} <= drover_commands


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bad_input_is_refused_clearly_and_changes_nothing(corpus: Corpus, case: Case) -> None:
    before = corpus.snapshot()
    outcome = corpus.run(case)
    detail = bad_inputs.describe(case, outcome)
    fragment = bad_inputs.substitute([case.fragment], corpus.values)[0]
    assert "Traceback" not in outcome.message, detail
    if case.is_api:
        assert outcome.status < 500, detail
        reply = json.loads(outcome.message)
        assert set(reply) == {"error", "kind"}, detail
        assert fragment in reply["error"], detail
    else:
        assert fragment in outcome.message, detail
        if case.words[0] == "drover":  # one line, the error, and nothing else
            assert len(outcome.message.strip().splitlines()) == 1, detail
            assert outcome.stdout == "", detail
    assert outcome.status == case.status, detail
    assert corpus.snapshot() == before, f"the cluster changed\n{detail}"
