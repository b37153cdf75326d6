"""What a job asks of its nodes beyond CPUs and memory: generic resources (GPUs), licences,
node features and a node to itself. Checked once at submission, against what the cluster has;
parsed again for the planner from the job's stored spec, once per distinct request.

Grid Engine's `-l NAME=VALUE` has no fixed vocabulary: its complexes are the site's. Drover reads
each such request by what the cluster has of that name, in this order: a licence ([licenses]),
a generic resource of some node (`-l gpu=2`), a node feature (`-l bigmem=true` for a feature
"bigmem", `-l arch=lx-amd64` for "arch=lx-amd64"). Anything else is refused as Grid Engine
refuses it: unknown resource.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from functools import lru_cache

from drover.core.constraints import Constraint, parse_constraint
from drover.core.errors import BadRequest
from drover.core.gres import GresNeed, describe, parse_requests
from drover.core.job import Job
from drover.core.node import Node
from drover.protocol.api import JobSubmission

TRUE = frozenset({"true", "yes", "y", "1"})


@dataclass(frozen=True, slots=True)
class Requests:
    """A job's requests, checked and in their canonical spelling (as stored in its spec)."""

    gres: tuple[GresNeed, ...] = ()
    licenses: tuple[tuple[str, int], ...] = ()
    constraint: Constraint | None = None
    exclusive: bool = False


def checked(spec: JobSubmission, licenses: Mapping[str, int], nodes: Collection[Node], where: str = "") -> Requests:
    """The submission's requests, or BadRequest naming what is wrong: a malformed request, a
    licence the cluster does not have (or not that many of), a Grid Engine resource it does not
    know. `nodes` is read only for a `-l` request that names no licence: a bulk submission to a
    thousand nodes does not list them once a job."""
    try:
        gres = list(parse_requests(spec.gres))
        constraint = parse_constraint(spec.constraint) if spec.constraint else None
    except ValueError as error:
        raise BadRequest(f"{where}{error}") from None
    wanted = dict(spec.licenses)
    features: list[str] = []
    for name, value in sorted(spec.resource_requests.items()):
        kind = _resolve(name, value, licenses, nodes)
        if kind == "licence":
            wanted[name] = wanted.get(name, 0) + _count(name, value, where)
        elif kind == "gres":
            gres.append(GresNeed(name, None, _count(name, value, where)))
        elif kind == "feature":
            features.append(name)
        elif kind == "feature=value":
            features.append(f"{name}={value}")
        else:
            raise BadRequest(f'{where}unknown resource "{name}" (-l {name}={value}): this cluster has no licence, '
                             "generic resource or node feature of that name")
    if features:
        text = "&".join(features) + (f"&({constraint.text})" if constraint is not None else "")
        constraint = parse_constraint(text)
    for name, count in wanted.items():
        if name not in licenses:
            have = ", ".join(sorted(licenses)) or "none ([licenses] in drover.toml)"
            raise BadRequest(f"{where}unknown licence {name!r}; this cluster has {have}")
        if not 1 <= count <= licenses[name]:
            raise BadRequest(f"{where}--licenses {name}:{count}: the cluster has {licenses[name]} {name} in all")
    return Requests(parse_requests([describe(gres)]) if gres else (), tuple(sorted(wanted.items())), constraint,
                    spec.exclusive)


def _resolve(name: str, value: str, licenses: Mapping[str, int], nodes: Collection[Node]) -> str | None:
    if name in licenses:
        return "licence"
    if any(device.name == name for node in nodes for device in node.devices):
        return "gres"
    if value.lower() in TRUE and any(name in node.features for node in nodes):
        return "feature"
    if any(f"{name}={value}" in node.features for node in nodes):
        return "feature=value"
    return None


def _count(name: str, value: str, where: str) -> int:
    if not value.isascii() or not value.isdigit() or int(value) < 1:
        raise BadRequest(f"{where}-l {name}={value}: {name} takes a count, a whole number of 1 or more")
    return int(value)


def of_job(job: Job) -> Requests:
    """A stored job's requests, for the planner (parsed once per distinct request)."""
    spec = job.spec
    if not spec.gres and not spec.licenses and not spec.constraint and not spec.exclusive:
        return NONE
    return _parsed(tuple(spec.gres), tuple(sorted(spec.licenses.items())), spec.constraint, spec.exclusive)


NONE = Requests()


@lru_cache(maxsize=4096)
def _parsed(gres: tuple[str, ...], licenses: tuple[tuple[str, int], ...], constraint: str | None,
            exclusive: bool) -> Requests:
    return Requests(parse_requests(gres), licenses, parse_constraint(constraint) if constraint else None, exclusive)
