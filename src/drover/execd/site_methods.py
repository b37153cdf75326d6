"""The site's commands an attempt runs, taken from this node's own drover.toml, never from the
order: what runs as root on a node, and what runs as a job's owner without the owner's signature,
is what the node's root configured.

The controller's order NAMES what the job uses (its queue, its parallel environment, its named
environments, its checkpoint environment) and lists the methods its own drover.toml has for them
(`site_methods`: key → SHA-256 of the command, for the node's log). The node looks each name up
in its own drover.toml, read by the execd from the state directory root owns (on one host the
controller's and the node's are the same file, so a personal cluster needs nothing; a joined
node has its own). As in Slurm, whose slurmd runs the Prolog and Epilog its own slurm.conf names
and never a script slurmctld sends.

An order is refused (the attempt fails with the reason, nothing of it runs) when it carries a
command in place of a name, names a method, named environment or checkpoint environment this
node does not define, or asks for a queue method other than a signal (an operator's `drover
queue set` may choose a signal or NONE, never a command).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from drover.cluster.named_methods import NONE, digest, is_signal
from drover.config_schema import (
    DroverConfig,
    EnvironmentSection,
    ParallelEnvironmentSection,
    QueueSection,
)
from drover.core.checkpoints import Environment as CheckpointEnvironment
from drover.core.checkpoints import for_attempt, values_for
from drover.core.parallel_env import parse_procedure
from drover.method_command import METHOD_NAMES
from drover.records import AttemptCheckpoint, AttemptOrder, EnvironmentRecord

log = logging.getLogger("drover.execd")

# Keys of an order that the node fills from its own drover.toml: an order carrying any of them
# (not None) is refused. The queue methods are not here: a signal (or NONE) may come with the
# order, as an operator set it; a command may not.
FILLED_BY_NODE = ("queue_prolog", "queue_epilog", "queue_starter_method", "pe_start", "pe_start_as_site",
                  "pe_stop", "pe_stop_as_site", "environments")


@dataclass(frozen=True, slots=True)
class SiteMethods:
    """This node's own queues, parallel environments, named environments and checkpoint
    environments, as its drover.toml (`source`) defines them."""

    source: str
    queues: Mapping[str, QueueSection] = field(default_factory=dict)
    parallel_environments: Mapping[str, ParallelEnvironmentSection] = field(default_factory=dict)
    environments: Mapping[str, EnvironmentSection] = field(default_factory=dict)
    checkpoints: Mapping[str, CheckpointEnvironment] = field(default_factory=dict)

    @classmethod
    def of(cls, config: DroverConfig, source: str) -> SiteMethods:
        return cls(source, config.queues, config.parallel_environments, config.environments,
                   {name: section.environment(name) for name, section in config.checkpoints.items()})

    def refusal(self, order: AttemptOrder) -> str | None:
        """Why the order asks for something this node will not run; None when it does not."""
        carried = [key for key in FILLED_BY_NODE if order.get(key) is not None]
        checkpoint = order.get("checkpoint")
        if checkpoint is not None:
            carried += [key for key in ("ckpt_command", "migr_command", "clean_command")
                        if checkpoint.get(key) is not None]
        for method in METHOD_NAMES:
            given = order.get(f"queue_{method}")
            if given is not None and given != NONE and not is_signal(method, str(given)):
                carried.append(f"queue_{method}")
        if carried:
            return (f"the order carries commands ({', '.join(carried)}): this node runs only the commands "
                    f"its own drover.toml ({self.source}) defines, and takes names from the controller")
        missing = [key for key in order.get("site_methods", {}) if self._own(order, key) is None]
        if missing:
            return (f"the controller's drover.toml sets {', '.join(_described(order, key) for key in missing)}, which "
                    f"this node's drover.toml ({self.source}) does not: a node runs only the commands its own "
                    "drover.toml defines; set them there too")
        unknown = [name for name in order["job"]["environments"] if name not in self.environments]
        if unknown:
            return (f"this node's drover.toml ({self.source}) defines no named environment "
                    f"{', '.join(repr(name) for name in unknown)} ([environments.NAME])")
        if checkpoint is not None and checkpoint["name"] not in self.checkpoints:
            return (f"this node's drover.toml ({self.source}) defines no checkpoint environment "
                    f"{checkpoint['name']!r} ([checkpoints.NAME])")
        return None

    def filled(self, order: AttemptOrder) -> dict[str, Any]:
        """The keys of the attempt's config that carry the site's commands, from this node's
        drover.toml (call after `refusal` said None); None: the key is left out. The order's
        queue method overrides are signals or NONE: a signal stays; NONE leaves the queue's
        method out."""
        queue = self.queues.get(order["job"]["queue"])
        own: dict[str, Any] = {"queue_prolog": queue.prolog if queue else None,
                               "queue_epilog": queue.epilog if queue else None}
        if queue is not None and queue.starter_method:
            own["queue_starter_method"] = queue.starter_method
        for method in METHOD_NAMES:
            key = f"queue_{method}"
            given = order.get(key)
            value = getattr(queue, method) if given is None and queue is not None else given
            own[key] = value if value is not None and value != NONE else None
        pe = self.parallel_environments.get(order["job"]["pe"] or "")
        if pe is not None:
            for key, text in (("pe_start", pe.start_proc_args), ("pe_stop", pe.stop_proc_args)):
                procedure = parse_procedure(key, text)
                if procedure is not None:
                    own[key], own[f"{key}_as_site"] = procedure.command, procedure.as_site
        names = order["job"]["environments"]
        if names:
            own["environments"] = [EnvironmentRecord(name=name, setup=self.environments[name].setup,
                                                     post=self.environments[name].post) for name in names]
        checkpoint = order.get("checkpoint")
        if checkpoint is not None:
            own["checkpoint"] = self._checkpoint(order, checkpoint)
        for digested in order.get("site_methods", {}).items():
            self._compare(order, *digested, own)
        return own

    def fill(self, config: MutableMapping[str, Any]) -> None:
        """Put this node's commands into an attempt's config made from its order (`filled`):
        a key without one is left out, as the shepherd's records want it."""
        for key, value in self.filled(config).items():  # type: ignore[arg-type]  # the order's keys are there
            if value is None:
                config.pop(key, None)
            else:
                config[key] = value

    def _own(self, order: AttemptOrder, key: str) -> str | None:
        """This node's command (or signal) for an order key of `site_methods`."""
        if key.startswith("queue_"):
            queue = self.queues.get(order["job"]["queue"])
            return getattr(queue, key.removeprefix("queue_"), None) if queue is not None else None
        pe = self.parallel_environments.get(order["job"]["pe"] or "")
        if pe is None or key not in ("pe_start", "pe_stop"):
            return None
        text = pe.start_proc_args if key == "pe_start" else pe.stop_proc_args
        return text if parse_procedure(key, text) is not None else None

    def _compare(self, order: AttemptOrder, key: str, theirs: str, own: Mapping[str, Any]) -> None:
        """The controller's and the node's drover.toml differ: the node's runs, and its log says so."""
        mine = self._own(order, key)
        if mine is not None and digest(mine) != theirs and own.get(key) is not None:
            log.warning("attempt %s: %s differs from the controller's drover.toml; this node's (%s) runs",
                        order["attempt"], _described(order, key), self.source)

    def _checkpoint(self, order: AttemptOrder, given: AttemptCheckpoint) -> AttemptCheckpoint:
        """The job's checkpoint environment as this node defines it; what is the job's (its
        occasions, its period, whether it restarts) as the order says."""
        environment = self.checkpoints[given["name"]]
        values = values_for(environment, job_id=order["job_id"], task_id=order["task_index"], job_name=order["name"],
                            owner=order["owner"], host=order["node"], queue=order["job"]["queue"])
        record = for_attempt(environment, values, given["when"], given["interval_s"], restarted=given["restarted"])
        return record  # type: ignore[return-value]  # the same keys, built by the pure core


def _described(order: AttemptOrder, key: str) -> str:
    if key.startswith("queue_"):
        return f"[queues.{order['job']['queue']}] {key.removeprefix('queue_')}"
    return f"[parallel_environments.{order['job']['pe']}] {'start' if key == 'pe_start' else 'stop'}_proc_args"
