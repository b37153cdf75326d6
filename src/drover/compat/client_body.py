"""What a front end's command does once its command line is parsed and its own options (usage,
version) are answered: check the rest, then act through a client of the cluster. The LSF and
PBS commands start this way (their `common.run`); each keeps only its check and its act."""

from __future__ import annotations

from collections.abc import Callable

from drover.compat.optiontable import Given

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.client.client import Client

# check(given, operands): refuse a command line (the front end's usage error) before the cluster
# is asked.
Check = Callable[[list[Given], list[str]], None]
# act(client, given, operands) → the exit status.
Act = Callable[["Client", list[Given], list[str]], int]
# body(given, operands) → the exit status: a command that opens its client itself (bsub, qsub).
Body = Callable[[list[Given], list[str]], int]


def through_client(act: Act, check: Check | None = None, timeout: bool = True) -> Body:
    """`check`, then `act` through a client of the cluster (without a timeout when `timeout` is
    false: bpeek -f follows a job)."""

    def body(given: list[Given], operands: list[str]) -> int:
        if check is not None:
            check(given, operands)
        from drover.client.client import Client

        with Client() if timeout else Client(timeout_s=None) as client:
            return act(client, given, operands)

    return body
