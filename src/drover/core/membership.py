"""Who may join the cluster: a join token as the store keeps it, and the one decision of whether
it lets a host join now. Pure: the caller gives the time."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from drover.core.errors import Forbidden


@dataclass(frozen=True, slots=True)
class TokenRecord:
    """A join token as the store keeps it: never its secret, only the secret's SHA-256."""

    id: str
    secret_hash: str
    created_at: float
    created_by: str
    expires_at: float
    uses_left: int
    revoked_at: float | None = None


def secret_hash(secret: str) -> str:
    """A token's secret is 256 random bits: a plain SHA-256 keeps it safe (no slow hash needed)."""
    return hashlib.sha256(secret.encode()).hexdigest()


def token_refusal(record: TokenRecord | None, secret: str, now: float) -> str | None:
    """Why the token may not join a host now, or None if it may. The secret is compared in
    constant time."""
    if record is None or not hmac.compare_digest(record.secret_hash, secret_hash(secret)):
        return "the join token is not valid (unknown or forged)"
    if record.revoked_at is not None:
        return f"the join token {record.id} was revoked"
    if now >= record.expires_at:
        return f"the join token {record.id} has expired"
    if record.uses_left <= 0:
        return f"the join token {record.id} is used up"
    return None


def check_token(record: TokenRecord | None, secret: str, now: float) -> None:
    why = token_refusal(record, secret, now)
    if why is not None:
        raise Forbidden(why)
