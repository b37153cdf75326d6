"""Hosts joining and leaving the cluster: join tokens, node certificates issued for a signing
request, and forgetting a node that left. Each refusal is logged with the peer's address.

The token's secret is checked (core/membership.py) before anything else is looked at; a node
certificate is issued only for a key whose signing request it proves, and only under the name
the node joins as; the token's use, the new certificate and the revocation of the node's older
ones are one transaction.
"""

from __future__ import annotations

import logging
from typing import Protocol

from drover.cluster.ca import Authority, cert_pem, certificate_facts
from drover.cluster.files import check_node_name, read
from drover.cluster.setup import ControllerTls
from drover.cluster.tokens import JoinToken, new_token, parse_token
from drover.controller.service import ControllerService
from drover.core.errors import BadRequest, Conflict, DroverError, Forbidden, NotFound
from drover.core.membership import TokenRecord, check_token, secret_hash
from drover.protocol import api

log = logging.getLogger("drover.controller")
MAX_USES = 10_000


class MembershipStore(Protocol):
    def add_join_token(self, token: TokenRecord) -> None: ...

    def join_tokens(self) -> list[TokenRecord]: ...

    def join_token(self, token_id: str) -> TokenRecord | None: ...

    def revoke_join_token(self, token_id: str, now: float) -> bool: ...

    def node_joined(self, token_id: str, node: str, serial: str, issued_at: float, expires_at: float) -> bool: ...

    def node_certificate_revoked(self, serial: str) -> bool: ...

    def node_left(self, node: str, now: float) -> None: ...


class Membership:
    def __init__(self, service: ControllerService, store: MembershipStore, tls: ControllerTls) -> None:
        self.service = service
        self.store = store
        self.tls = tls
        self._authority: Authority | None = None

    def _now(self) -> float:
        return self.service.clock()

    def ca_certificate(self) -> api.CaCertificate:
        pem = self._ca_pem()
        from drover.cluster.ca import fingerprint

        return api.CaCertificate(certificate=pem.decode("ascii"), fingerprint=fingerprint(pem))

    def _ca_pem(self) -> bytes:
        try:
            return read(self.tls.ca)
        except OSError as error:
            raise Conflict(f"this cluster has no CA yet ({self.tls.ca}: {error.strerror}); "
                              "run `drover cluster init` on the controller's host") from None

    def _authority_or_refuse(self) -> Authority:
        if self._authority is None:
            if self.tls.ca_key is None:
                raise Conflict("this cluster's CA is the admin's own (tls_ca in drover.toml) and its key is not "
                               "given (tls_ca_key): nodes get their certificates from the admin, not by token")
            self._authority = Authority.load(self._ca_pem(), read(self.tls.ca_key))
        return self._authority

    # -- tokens (admins, on the local socket) -----------------------------------------------------

    def create_token(self, request: api.TokenRequest, by: str) -> api.TokenCreated:
        if not 1 <= request.ttl_s <= 365 * 86400:
            raise BadRequest(f"a token lives from 1 second to 365 days, not {request.ttl_s:g} seconds")
        if not 1 <= request.uses <= MAX_USES:
            raise BadRequest(f"a token allows 1 to {MAX_USES} joins, not {request.uses}")
        from drover.cluster.ca import fingerprint

        token = new_token(fingerprint(self._ca_pem()))
        now = self._now()
        record = TokenRecord(token.id, secret_hash(token.secret), now, by, now + request.ttl_s, request.uses)
        self.store.add_join_token(record)
        log.info("%s made join token %s (%d uses, until %.0f)", by, token.id, request.uses, record.expires_at)
        return api.TokenCreated(token=str(token), info=self._info(record))

    def tokens(self) -> list[api.TokenInfo]:
        return [self._info(record) for record in self.store.join_tokens()]

    def revoke_token(self, token_id: str, by: str) -> api.TokenInfo:
        if not self.store.revoke_join_token(token_id, self._now()):
            raise NotFound(f"no join token {token_id!r} (`drover token list` shows them)")
        log.info("%s revoked join token %s", by, token_id)
        record = self.store.join_token(token_id)
        assert record is not None
        return self._info(record)

    def _info(self, record: TokenRecord) -> api.TokenInfo:
        now = self._now()
        if record.revoked_at is not None:
            state = "revoked"
        elif now >= record.expires_at:
            state = "expired"
        elif record.uses_left <= 0:
            state = "used up"
        else:
            state = "valid"
        return api.TokenInfo(id=record.id, created_at=record.created_at, created_by=record.created_by,
                             expires_at=record.expires_at, uses_left=record.uses_left,
                             revoked_at=record.revoked_at, state=state)

    # -- joining and leaving (over TLS) -----------------------------------------------------------

    def join(self, request: api.JoinRequest, peer: str) -> api.JoinReply:
        try:
            return self._join(request, peer)
        except DroverError as error:
            log.warning("refused a join from %s as node %r: %s", peer, request.node[:100], error)
            raise

    def _join(self, request: api.JoinRequest, peer: str) -> api.JoinReply:
        token = parse_token(request.token)
        self._check_token(token)
        node = check_node_name(request.node)
        if node in self.service.channels.connected():
            raise Conflict(f"a node named {node} is connected now; run `drover leave` on it first, "
                           "or join under another --name")
        certificate = self._authority_or_refuse().node_certificate(node, request.csr.encode())
        pem = cert_pem(certificate)
        _, serial, expires_at = certificate_facts(pem)
        if not self.store.node_joined(token.id, node, serial, self._now(), expires_at):
            raise Forbidden(f"the join token {token.id} is used up")  # another host took its last use
        log.info("node %s joined from %s with token %s (certificate %s)", node, peer, token.id, serial)
        return api.JoinReply(node=node, certificate=pem.decode("ascii"), ca=self._ca_pem().decode("ascii"))

    def _check_token(self, token: JoinToken) -> None:
        from drover.cluster.ca import fingerprint

        if token.fingerprint != fingerprint(self._ca_pem()):
            raise Forbidden("the join token is for another cluster (it pins another CA)")
        check_token(self.store.join_token(token.id), token.secret, self._now())

    def leave(self, node: str, peer: str) -> api.LeaveReply:
        """The node is forgotten: refused while it runs attempts; its certificates are revoked, so
        it cannot speak for itself again until it joins anew."""
        try:
            self.service.forget_node(node, lambda: self.store.node_left(node, self._now()))
        except DroverError as error:
            log.warning("refused %s leaving, from %s: %s", node, peer, error)
            raise
        log.info("node %s left, from %s; its certificates are revoked", node, peer)
        return api.LeaveReply(node=node)

    def certificate_revoked(self, serial: str | None) -> bool:
        return serial is not None and self.store.node_certificate_revoked(serial)
