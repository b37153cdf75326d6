"""The head of a request is counted as it arrives: refused (414, 431) once over its limit, in
whatever pieces it comes, and never for the body that follows a head within the limit."""

from __future__ import annotations

from drover.api.request_head import HEADERS_TOO_LARGE, URI_TOO_LONG, HeadLimit


def fed(limit: HeadLimit, *chunks: bytes) -> list[int | None]:
    return [limit.feed(chunk) for chunk in chunks]


def test_a_head_within_the_limits_passes_with_its_body_in_the_same_chunk() -> None:
    limit = HeadLimit(max_line=64, max_head=128)
    head = b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n"
    assert fed(limit, head + b"x" * 1000) == [None]
    assert not limit.in_head
    assert fed(limit, b"y" * 100_000) == [None]  # the body is not counted


def test_a_head_exactly_at_the_limit_passes_and_one_byte_more_is_refused() -> None:
    head = b"GET / HTTP/1.1\r\nX: " + b"a" * 100 + b"\r\n\r\n"
    assert HeadLimit(max_line=64, max_head=len(head)).feed(head) is None
    assert HeadLimit(max_line=64, max_head=len(head) - 1).feed(head) == HEADERS_TOO_LARGE


def test_an_endless_header_is_refused_once_over_the_limit_whatever_the_pieces() -> None:
    limit = HeadLimit(max_line=64, max_head=4096)
    answers = fed(limit, b"GET /v1/ping HTTP/1.1\r\nX-Big: ", *[b"a" * 1000] * 5)
    assert answers == [None, None, None, None, None, HEADERS_TOO_LARGE]  # 30 + 4,000 bytes, then 5,030


def test_a_long_request_line_is_414_even_in_one_byte_pieces() -> None:
    limit = HeadLimit(max_line=32, max_head=4096)
    line = b"GET /" + b"a" * 40
    answers = fed(limit, *[line[i:i + 1] for i in range(len(line))])
    assert answers.index(URI_TOO_LONG) == 32  # the 33rd byte
    assert HeadLimit(max_line=32, max_head=4096).feed(b"GET /" + b"a" * 40 + b" HTTP/1.1\r\n") == URI_TOO_LONG


def test_the_blank_line_split_across_chunks_ends_the_head() -> None:
    limit = HeadLimit(max_line=64, max_head=64)
    assert fed(limit, b"GET / HTTP/1.1\r\nHost: x\r\n\r", b"\n" + b"b" * 1000) == [None, None]
    assert not limit.in_head


def test_the_next_request_on_the_connection_is_counted_afresh() -> None:
    limit = HeadLimit(max_line=64, max_head=40)
    assert limit.feed(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n") is None
    limit.next_request()
    assert limit.in_head and not limit.started
    assert limit.feed(b"GET / HTTP/1.1\r\nX: " + b"a" * 30) == HEADERS_TOO_LARGE
