"""drover submit --pe NAME SLOTS (qsub's -pe): the request carries the PE and its slots as given,
a #DROVER line may give it, and a bad slot count or --cpus beside it is refused before anything
is sent."""

from __future__ import annotations

import pathlib

import pytest

from drover.cli.commands.submit import _with_directives, build_parser, jobs_from_arguments
from drover.core.errors import BadRequest
from drover.protocol.plain import JobRequest


def _job(*argv: str) -> JobRequest:
    args = build_parser("submit").parse_args(list(argv))
    (job,) = jobs_from_arguments(args, ["true"])
    return job


def test_pe_and_slots_go_into_the_request() -> None:
    job = _job("--pe", "mpi", "2-8")
    assert (job["pe"], job["pe_slots"], job["cpus"]) == ("mpi", "2-8", 1)
    assert not {"pe", "pe_slots"} & set(_job())
    job = _job("--pe", "mpi", "8", "--pe-per-node", "4")  # 4 on each of 2 nodes, in place of mpi's rule
    assert (job["pe"], job["pe_slots"], job["pe_per_node"]) == ("mpi", "8", 4)


def test_a_directive_gives_the_pe(tmp_path: pathlib.Path) -> None:
    parser = build_parser("submit")
    script = "#!/bin/bash\n#DROVER --pe mpi 4\nmpirun ./solver\n"
    path = tmp_path / "job.sh"
    path.write_text(script)
    (job,) = jobs_from_arguments(_with_directives(parser, parser.parse_args([str(path)]), [str(path)], script),
                                 [], script)
    assert (job["pe"], job["pe_slots"]) == ("mpi", "4")


@pytest.mark.parametrize(("argv", "message"), [
    (("--pe", "mpi", "four"), "--pe mpi four: the slots of a parallel environment are a number or a range n-m"),
    (("--pe", "mpi", "8-2"), "--pe mpi 8-2: the slot range '8-2' must run from 1 or more upwards"),
    (("--pe", "mpi", "4", "-c", "4"), "--pe gives the job its CPUs, one a slot: leave out --cpus"),
    (("--pe-per-node", "2",), "--pe-per-node is the slots on each node of a job of a parallel environment: give "
                              "--pe NAME SLOTS"),
])
def test_a_bad_pe_request_is_refused_before_anything_is_sent(argv: tuple[str, ...], message: str) -> None:
    with pytest.raises(BadRequest, match="^" + message.replace("-", r"\-").replace(".", r"\.")):
        _job(*argv)
