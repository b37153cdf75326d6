"""Join tokens: what an admin hands to a new host so that it can join.

A token reads `drv1.<CA fingerprint>.<id>.<secret>`. The fingerprint (SHA-256 of the CA's
certificate) lets the host verify the controller before it says anything (no trust on first
use); the id names the token in `drover token list` and `revoke`; the secret is 32 random bytes.
The controller keeps only the secret's SHA-256, with the token's expiry and the joins it has
left (core/membership.py decides whether a token lets a host join).
"""

from __future__ import annotations

import base64
import re
import secrets
from dataclasses import dataclass

from drover.core.errors import BadRequest

VERSION = "drv1"
_TOKEN = re.compile(r"drv1\.([0-9a-f]{64})\.([0-9a-f]{12})\.([A-Za-z0-9_-]{43})")


@dataclass(frozen=True, slots=True)
class JoinToken:
    fingerprint: str  # the CA's SHA-256, lowercase hex
    id: str  # 12 hex digits
    secret: str  # 43 characters of URL-safe base64

    def __str__(self) -> str:
        return f"{VERSION}.{self.fingerprint}.{self.id}.{self.secret}"


def new_token(fingerprint: str) -> JoinToken:
    secret = base64.urlsafe_b64encode(secrets.token_bytes(32)).decode().rstrip("=")
    return JoinToken(fingerprint, secrets.token_hex(6), secret)


def parse_token(text: str) -> JoinToken:
    found = _TOKEN.fullmatch(text.strip())
    if found is None:
        raise BadRequest("that is not a Drover join token (drv1.<fingerprint>.<id>.<secret>, "
                         "as `drover token create` prints it)")
    return JoinToken(*found.groups())


def parse_ttl(text: str) -> float:
    """A token's lifetime: 90s, 30m, 1h, 7d (or plain seconds); 1 second to 365 days."""
    found = re.fullmatch(r"([0-9]+)([smhd]?)", text.strip())
    if found is None:
        raise BadRequest(f"--ttl must be a duration such as 30m, 1h or 7d, not {text!r}")
    seconds = int(found.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[found.group(2)]
    if not 1 <= seconds <= 365 * 86400:
        raise BadRequest(f"--ttl must be between 1 second and 365 days, not {text!r}")
    return float(seconds)
