"""drover web [--listen HOST:PORT]: the dashboard in the browser, for the user who runs it."""

from __future__ import annotations

from drover.cli.common import parser
from drover.core.errors import BadRequest

DEFAULT_LISTEN = "127.0.0.1:0"  # loopback, on a free port


def run(command: str, argv: list[str]) -> int:
    p = parser(command, "Serve a dashboard of the cluster, your jobs and their history in the browser, acting "
                        "as you (it shows and does only what `drover` lets you). Prints a URL with a one-time "
                        "token; the dashboard answers only to a browser that opened it.", json_flag=False)
    p.add_argument("--listen", default=DEFAULT_LISTEN, metavar="HOST:PORT",
                   help="where to listen (default 127.0.0.1 on a free port; another address serves plain "
                        "HTTP beyond this host: see docs/web.md)")
    args = p.parse_args(argv)
    host, port = listen_address(args.listen)
    if host not in ("127.0.0.1", "::1", "localhost"):
        import sys

        print(f"drover web: {host} is reachable from other hosts, over plain HTTP: the token and the session "
              "cookie cross the network in clear (docs/web.md says how to reach a dashboard over ssh instead)",
              file=sys.stderr)
    from drover.client.client import Client

    # Asked once, up front: a cluster that does not answer is said now, not on the first page.
    with Client() as api:
        user = api.ping().user
    from drover.web.server import print_url, serve

    try:
        serve(host, port, lambda: Client(), user, lambda dashboard, bound: print_url(dashboard, host, bound))
    except OSError as error:
        raise BadRequest(f"cannot listen on {args.listen}: {error.strerror or error}") from None
    except KeyboardInterrupt:
        pass
    return 0


def listen_address(text: str) -> tuple[str, int]:
    """HOST:PORT (an IPv6 host in brackets) into its parts; a bad one is refused with the reason."""
    host, sep, port = text.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not sep or not host or not port.isascii() or not port.isdigit() or int(port) > 65535:
        raise BadRequest(f"--listen takes HOST:PORT (e.g. 127.0.0.1:8765), not {text!r}")
    return host, int(port)
