"""Join tokens on plain data: their text, and when one lets a host join; and the store's part:
a use is taken once, in the same transaction as the certificate it pays for."""

from __future__ import annotations

import dataclasses

import pytest

from drover.cluster.tokens import new_token, parse_token, parse_ttl
from drover.core.errors import BadRequest, Forbidden
from drover.core.membership import TokenRecord, check_token, secret_hash, token_refusal
from drover.store.base import open_store
from drover.store.sql_store import SqlStore

FINGERPRINT = "ab" * 32


def test_a_token_reads_back_as_made_and_pins_the_ca() -> None:
    token = new_token(FINGERPRINT)
    text = str(token)
    assert text.startswith(f"drv1.{FINGERPRINT}.{token.id}.")
    assert parse_token(f"  {text}\n") == token
    assert new_token(FINGERPRINT).secret != token.secret


@pytest.mark.parametrize("text", ["", "drv1", f"drv2.{FINGERPRINT}.0123456789ab.{'A' * 43}",
                                  f"drv1.{FINGERPRINT[:-2]}.0123456789ab.{'A' * 43}",
                                  f"drv1.{FINGERPRINT}.0123456789ab.{'A' * 42}",
                                  f"drv1.{FINGERPRINT}.0123456789ab.{'A' * 42}!"])
def test_what_is_not_a_token_is_refused_as_such(text: str) -> None:
    with pytest.raises(BadRequest, match="not a Drover join token"):
        parse_token(text)


BASE = TokenRecord(id="0123456789ab", secret_hash=secret_hash("s3cret"), created_at=100.0, created_by="root",
                   expires_at=200.0, uses_left=1)


def record(**changes: float | int | None) -> TokenRecord:
    return dataclasses.replace(BASE, **changes)


def test_a_token_lets_a_host_join_until_it_expires_is_used_up_or_revoked() -> None:
    assert token_refusal(record(), "s3cret", 150.0) is None
    assert token_refusal(record(), "s3cret", 200.0) == "the join token 0123456789ab has expired"
    assert token_refusal(record(uses_left=0), "s3cret", 150.0) == "the join token 0123456789ab is used up"
    assert token_refusal(record(revoked_at=120.0), "s3cret", 150.0) == "the join token 0123456789ab was revoked"


def test_a_forged_or_unknown_token_says_nothing_more() -> None:
    for found, secret in ((record(), "guess"), (None, "s3cret"), (record(expires_at=0.0), "guess")):
        with pytest.raises(Forbidden, match=r"^the join token is not valid \(unknown or forged\)$"):
            check_token(found, secret, 150.0)


def test_ttls() -> None:
    assert [parse_ttl(t) for t in ("90", "90s", "30m", "1h", "7d")] == [90, 90, 1800, 3600, 7 * 86400]
    for bad in ("0", "1w", "-1h", "366d", "h"):
        with pytest.raises(BadRequest, match="--ttl"):
            parse_ttl(bad)


def test_the_store_takes_each_use_once_with_the_certificate_it_pays_for(store_url: str) -> None:
    store = open_store(store_url)
    assert isinstance(store, SqlStore)
    store.add_join_token(record(uses_left=2))
    assert store.join_token("0123456789ab") == record(uses_left=2)
    assert store.node_joined("0123456789ab", "n1", "aa01", 150.0, 999.0)
    assert store.node_joined("0123456789ab", "n1", "aa02", 151.0, 999.0)  # n1 again: its first certificate goes
    assert store.node_certificate_revoked("aa01") and not store.node_certificate_revoked("aa02")
    assert not store.node_joined("0123456789ab", "n2", "aa03", 152.0, 999.0)  # used up: nothing recorded
    assert store.join_token("0123456789ab") == record(uses_left=0)
    assert not store.node_certificate_revoked("aa03")  # never issued, so never revoked
    store.node_left("n1", 160.0)
    assert store.node_certificate_revoked("aa02")
    assert store.revoke_join_token("0123456789ab", 170.0) and not store.revoke_join_token("ffffffffffff", 170.0)
    assert store.revoke_join_token("0123456789ab", 180.0)
    assert [t.revoked_at for t in store.join_tokens()] == [170.0]
    store.close()
