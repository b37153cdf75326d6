"""What a node runs as root, or as a job's owner without the owner's signature, is its own
drover.toml's: the controller's order names a queue, a parallel environment, named and
checkpoint environments, and the node resolves the names in its own configuration
(execd/site_methods.py). An order that carries a command, or names a method the node does not
define, is refused. Orders are made by the controller's real start_order from its drover.toml
and read by the node from another, as on a joined node."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from tests.helpers.controller_world import World

from drover.config_schema import (
    DroverConfig,
    EnvironmentSection,
    ParallelEnvironmentSection,
    QueueSection,
)
from drover.controller.handlers.dispatch import OrderOptions, start_order
from drover.core.queues import QueueRecord, effective
from drover.execd.site_methods import SiteMethods
from drover.records import AttemptOrder

NODE = Path("/var/lib/drover/drover.toml")


def order(tmp_path: Path, options: OrderOptions, **spec: object) -> AttemptOrder:
    """The controller's order for a job of `spec`, as `start_order` makes it from `options`."""
    world = World(tmp_path / "drover.db")
    world.connect()
    (job_id,) = world.submit()
    (sent,) = world.schedule()
    record = spec.pop("_record", None)  # the queue's changes by `drover queue set`, if any
    job = world.state.jobs[job_id]
    job.spec = msgspec.structs.replace(job.spec, **spec)  # the fields a test sets
    attempt = world.state.attempt_by_name(sent.attempt)
    assert attempt is not None
    assert record is None or isinstance(record, QueueRecord)
    in_effect = effective("default", options.queues.get("default"), record) if record is not None else None
    made = start_order(job, world.store.job_payloads([job_id])[job_id], attempt, options, in_effect=in_effect).config
    world.store.close()
    return made


IMPOSTOR = OrderOptions(1.0, queues={"default": QueueSection(
    prolog="id > /tmp/owned", epilog="id > /tmp/owned", starter_method="/tmp/starter",
    terminate_method="/bin/sh -c 'id > /tmp/owned'")})


def test_an_order_carries_no_command_of_the_controllers_drover_toml(tmp_path: Path) -> None:
    made = order(tmp_path, IMPOSTOR)
    assert not {"queue_prolog", "queue_epilog", "queue_starter_method", "queue_terminate_method"} & set(made)
    assert sorted(made["site_methods"]) == ["queue_epilog", "queue_prolog", "queue_starter_method",
                                            "queue_terminate_method"]
    assert "id > /tmp/owned" not in repr(made)


def test_a_node_that_defines_none_of_the_named_methods_refuses_and_names_them(tmp_path: Path) -> None:
    why = SiteMethods(str(NODE)).refusal(order(tmp_path, IMPOSTOR))
    assert why is not None
    assert "[queues.default] prolog" in why and "[queues.default] starter_method" in why and str(NODE) in why


def test_the_node_runs_its_own_commands_whatever_the_controllers_say(tmp_path: Path) -> None:
    node = SiteMethods(str(NODE), queues={"default": QueueSection(
        prolog="/opt/site/prolog", epilog="/opt/site/epilog", starter_method="/opt/site/starter",
        terminate_method="SIGUSR1")})
    made = order(tmp_path, IMPOSTOR)
    assert node.refusal(made) is None
    filled = node.filled(made)
    assert filled["queue_prolog"] == "/opt/site/prolog" and filled["queue_epilog"] == "/opt/site/epilog"
    assert filled["queue_starter_method"] == "/opt/site/starter" and filled["queue_terminate_method"] == "SIGUSR1"


@pytest.mark.parametrize("key, value", [
    ("queue_prolog", "id > /tmp/owned"), ("queue_epilog", "id"), ("queue_starter_method", "/tmp/starter"),
    ("pe_start", "/tmp/start"), ("pe_stop", "root@/tmp/stop"), ("pe_start_as_site", True),
    ("environments", [{"name": "x", "setup": "/tmp/setup", "post": None}]),
    ("queue_suspend_method", "/bin/sh -c id"), ("queue_resume_method", "/bin/true"),
    ("queue_terminate_method", "/tmp/kill $job_pid"),
])
def test_an_order_that_carries_a_command_is_refused(tmp_path: Path, key: str, value: object) -> None:
    made = order(tmp_path, OrderOptions(1.0))
    made[key] = value  # type: ignore[literal-required]  # each key the node fills in itself
    node = SiteMethods(str(NODE), queues={"default": QueueSection(prolog="/opt/site/prolog")})
    why = node.refusal(made)
    assert why is not None and f"carries commands ({key})" in why and str(NODE) in why


def test_a_checkpoint_command_in_the_order_is_refused(tmp_path: Path) -> None:
    made = order(tmp_path, OrderOptions(1.0))
    made["checkpoint"] = {"name": "c", "interface": "application-level", "ckpt_command": ["/tmp/x"],
                          "migr_command": None, "clean_command": None, "ckpt_dir": None, "signal": None,
                          "when": "x", "interval_s": None, "restarted": False}
    why = SiteMethods(str(NODE)).refusal(made)
    assert why is not None and "carries commands (ckpt_command)" in why


def test_an_operators_signal_and_none_pass_a_command_from_the_store_does_not(tmp_path: Path) -> None:
    toml = OrderOptions(1.0, queues={"default": QueueSection(suspend_method="/opt/site/ckpt-stop",
                                                              resume_method="/opt/site/restart")})
    node = SiteMethods(str(NODE), queues={"default": QueueSection(suspend_method="/opt/site/ckpt-stop",
                                                                  resume_method="/opt/site/restart",
                                                                  terminate_method="/opt/site/stop")})
    changed = QueueRecord("default", settings={"suspend_method": "SIGUSR1", "resume_method": "NONE",
                                               "terminate_method": "/tmp/evil"})
    made = order(tmp_path, toml, _record=changed)
    assert made.get("queue_suspend_method") == "SIGUSR1" and made.get("queue_resume_method") == "NONE"
    assert "queue_terminate_method" not in made  # a command kept from before is not sent
    assert node.refusal(made) is None
    filled = node.filled(made)
    assert filled["queue_suspend_method"] == "SIGUSR1"
    assert filled["queue_resume_method"] is None  # NONE: the node's [execd] one, else the default
    assert filled["queue_terminate_method"] == "/opt/site/stop"  # the node's own


def test_parallel_environment_procedures_are_the_nodes(tmp_path: Path) -> None:
    controller = OrderOptions(1.0, parallel_environments={"mpi": ParallelEnvironmentSection(
        slots=8, start_proc_args="root@/tmp/id-as-root", stop_proc_args="/tmp/id-as-owner")})
    made = order(tmp_path, controller, pe="mpi", pe_slots=2)
    assert "pe_start" not in made and "pe_stop" not in made and set(made["site_methods"]) == {"pe_start", "pe_stop"}
    assert "[parallel_environments.mpi] start_proc_args" in (SiteMethods(str(NODE)).refusal(made) or "")
    node = SiteMethods(str(NODE), parallel_environments={"mpi": ParallelEnvironmentSection(
        slots=8, start_proc_args="/opt/mpi/start $pe_hostfile", stop_proc_args="root@/opt/mpi/stop")})
    assert node.refusal(made) is None
    filled = node.filled(made)
    assert (filled["pe_start"], filled["pe_start_as_site"]) == ("/opt/mpi/start $pe_hostfile", False)
    assert (filled["pe_stop"], filled["pe_stop_as_site"]) == ("/opt/mpi/stop", True)


def test_named_environments_are_the_nodes_and_an_unknown_one_is_refused(tmp_path: Path) -> None:
    controller = OrderOptions(1.0, environments={"gcc13": EnvironmentSection(setup="/tmp/evil.sh")})
    made = order(tmp_path, controller, environments=["gcc13"])
    assert made["job"]["environments"] == ["gcc13"] and "environments" not in made
    why = SiteMethods(str(NODE)).refusal(made)
    assert why is not None and "no named environment 'gcc13'" in why
    node = SiteMethods(str(NODE), environments={"gcc13": EnvironmentSection(setup="/opt/env/gcc13.sh")})
    assert node.refusal(made) is None
    assert node.filled(made)["environments"] == [{"name": "gcc13", "setup": "/opt/env/gcc13.sh", "post": None}]


def test_on_one_host_the_same_drover_toml_runs_as_before(tmp_path: Path) -> None:
    """A personal cluster, or a shared one on one host: the controller and the node read one
    drover.toml, so nothing is to be configured twice."""
    config = DroverConfig(queues={"default": QueueSection(prolog="/opt/site/prolog", starter_method="/opt/s")},
                          parallel_environments={"mpi": ParallelEnvironmentSection(slots=4, start_proc_args="/p")})
    made = order(tmp_path, OrderOptions(1.0, queues=config.queues, parallel_environments=config.parallel_environments),
                 pe="mpi", pe_slots=1)
    node = SiteMethods.of(config, str(NODE))
    assert node.refusal(made) is None
    filled = node.filled(made)
    assert filled["queue_prolog"] == "/opt/site/prolog" and filled["pe_start"] == "/p"


def test_the_filled_config_reads_back_as_the_shepherds_record(tmp_path: Path) -> None:
    """What the node writes is read back typed (execd/attempt_records.py): a method the node
    does not have is left out, never written as null; NONE is taken out."""
    import msgspec

    toml = OrderOptions(1.0, queues={"default": QueueSection(prolog="/p", suspend_method="SIGUSR1")})
    made = order(tmp_path, toml, _record=QueueRecord("default", settings={"resume_method": "NONE"}))
    config: dict[str, object] = dict(made)
    SiteMethods(str(NODE), queues=toml.queues).fill(config)
    back = msgspec.json.decode(msgspec.json.encode(config), type=AttemptOrder)
    assert back.get("queue_prolog") == "/p" and back.get("queue_suspend_method") == "SIGUSR1"
    assert "queue_resume_method" not in back and "queue_terminate_method" not in back
    assert "queue_starter_method" not in back and "pe_start" not in back
