"""How much of a request's head (its request line and headers) the controller reads before it
refuses it. The bytes are counted as they arrive, before the HTTP parser sees them, so a peer
that never ends its head costs the controller at most one limit and one read, never what it
sends: 414 for a request line over `max_line` bytes, 431 for a head over `max_head` (the request
line counted in). Pure: bytes in, a status or None out."""

from __future__ import annotations

URI_TOO_LONG = 414
HEADERS_TOO_LARGE = 431


class HeadLimit:
    def __init__(self, max_line: int, max_head: int) -> None:
        self.max_line = max_line
        self.max_head = max_head
        self.next_request()

    def next_request(self) -> None:
        """The request before was read whole: what comes next is a new head."""
        self.in_head = True
        self.started = False  # a byte of this head came
        self._line = 0  # bytes of the request line so far
        self._line_done = False
        self._head = 0  # bytes of the head before the last chunk
        self._tail = b""  # the last bytes of the head so far: its blank line may span two chunks

    def feed(self, data: bytes) -> int | None:
        """Count a chunk received while the head is not whole: the status that refuses the
        request, or None. Once the blank line that ends the head came, the body is not counted."""
        if not self.in_head or not data:
            return None
        self.started = True
        if not self._line_done:
            end = data.find(b"\n")
            self._line += len(data) if end < 0 else end
            self._line_done = end >= 0
            if self._line > self.max_line:
                return URI_TOO_LONG
        window = self._tail + data
        ends = [found + len(mark) for mark in (b"\r\n\r\n", b"\n\n") if (found := window.find(mark)) >= 0]
        if not ends:
            self._head += len(data)
            self._tail = window[-3:]
            return HEADERS_TOO_LARGE if self._head > self.max_head else None
        self.in_head = False
        size = self._head + min(ends) - len(self._tail)
        return HEADERS_TOO_LARGE if size > self.max_head else None
