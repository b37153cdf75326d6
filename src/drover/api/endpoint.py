"""An endpoint of the HTTP API: the operation it serves (its entry in the OpenAPI document),
the `Access` it needs, and the handler that runs once that access is checked. Each resource
module lists its endpoints in a table; `route` makes one a Starlette route.

The access check is the only one at this level: controller/security/auth.py decides what each `Access`
means, and finer decisions (each job of an action, whose jobs a listing shows) are asked of the
same policy by the handlers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from drover.api.http import Model, decode, error_response, job_id_of
from drover.api.openapi import Operation
from drover.api.remote_users import remote_peer
from drover.controller.reads.queries import Reads
from drover.controller.security.auth import Access, Caller, Policy, TlsPeer
from drover.controller.security.membership import Membership
from drover.controller.service import ControllerService
from drover.core.errors import BadRequest, DroverError
from drover.protocol import api


@dataclass(frozen=True, slots=True)
class Controller:
    """What the handlers talk to: the controller's commands, its read models, who may do what,
    and how to stop it."""

    service: ControllerService
    reads: Reads
    policy: Policy
    shutdown: Callable[[], None]
    membership: Membership | None = None  # joining and leaving: only with the cluster's TLS set up
    address: str = ""  # where clients and nodes reach this controller (/v1/health says it)


@dataclass(frozen=True, slots=True)
class Call:
    """A request that passed its endpoint's access check: who made it, and the job its path
    names (for Access.JOB endpoints), already checked to be theirs to see."""

    request: Request
    controller: Controller
    caller: Caller | None  # None only for an Access.ANYONE or NODE endpoint reached over TCP
    job: api.JobInfo | None = None
    node: str | None = None  # Access.NODE: the node the client certificate names

    @property
    def peer_address(self) -> str:
        """Where the request came from, for the log: the TLS client's address, or the local socket."""
        tls = self.request.scope.get("state", {}).get("tls")
        return tls.address if isinstance(tls, TlsPeer) else "the local socket"

    @property
    def user(self) -> Caller:
        assert self.caller is not None, "an endpoint that needs a user is declared Access.USER or stricter"
        return self.caller

    async def body(self, model: type[Model]) -> Model:
        """The request's JSON body as `model`, within the cluster's request size limit."""
        return await decode(self.request, model, self.controller.service.settings.limits.max_request_bytes)

    async def job_of(self, job_id: int) -> api.JobInfo:
        """A job the caller may see (its owner or an admin), with its tasks and attempts."""
        return await visible_job(self.controller, self.user, job_id)


Handler = Callable[[Call], Awaitable[Response]]


@dataclass(frozen=True, slots=True)
class Endpoint:
    operation: Operation
    access: Access
    handler: Handler
    admin_action: str = ""  # Access.ADMIN: what only admins do, as a refusal says it


async def visible_job(controller: Controller, caller: Caller, job_id: int) -> api.JobInfo:
    return await controller.reads.job(job_id, lambda owner, job: controller.policy.may_touch(caller, owner, job))


def route(endpoint: Endpoint, controller: Controller) -> Route:
    """The endpoint behind its access check; every refusal and bad request becomes an error
    reply (`{"error", "kind"}` with the error's HTTP status)."""
    access, policy = endpoint.access, controller.policy

    async def checked(request: Request) -> Response:
        try:
            # Nothing is answered from a working set that is not whole; while the store is away,
            # reads are answered from memory if it is whole but for the jobs in doubt.
            if request.method == "GET":
                controller.service.ready_to_read()
            else:
                controller.service.ready()
            state = request.scope.get("state", {})
            peer = state.get("peer")
            if access is Access.ANYONE and peer is None:
                return await endpoint.handler(Call(request, controller, None))
            if access is Access.NODE:
                return await endpoint.handler(Call(request, controller, None, node=policy.node_of(state.get("tls"))))
            if peer is None:  # over TCP: a user of another host, by the MUNGE credential sent along
                limit = controller.service.settings.limits.max_request_bytes
                caller = policy.caller(await remote_peer(request, policy.munge_socket, limit), remote=True)
            else:
                caller = policy.caller(peer)
            if access is Access.ADMIN:
                policy.may_administer(caller, endpoint.admin_action)
            job = await visible_job(controller, caller, job_id_of(request)) if access is Access.JOB else None
            return await endpoint.handler(Call(request, controller, caller, job))
        except DroverError as error:
            return error_response(error)
        except msgspec.ValidationError as error:
            return error_response(BadRequest(f"bad request: {error}"))
        except msgspec.DecodeError as error:
            return error_response(BadRequest(f"bad request: not valid JSON ({error})"))

    return Route(endpoint.operation.path, checked, methods=[endpoint.operation.method])
