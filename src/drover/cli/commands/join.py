"""drover join https://ADDR:PORT --token T: make this host a node of the cluster (as root).

1. The controller's CA is fetched and checked against the fingerprint the token pins; nothing
   is sent before it matches (no trust on first use).
2. A key is made here and only its signing request is sent, on a connection that verifies the
   controller against that CA; the controller answers with the node's certificate.
3. The certificate, the key (0600) and the CA go to STATE_DIR/tls/, the node's drover.toml
   names them and the controller, and the execd starts: it connects over TLS with its
   certificate.
"""

from __future__ import annotations

import json
import os
import sys
import time

from drover.cli.common import parser, print_json
from drover.config import MUNGE_SOCKET, SYSTEM_STATE_DIR, Paths
from drover.core.errors import Conflict, DroverError, Forbidden

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.cluster.files import TlsFiles

JOINED_MARK = "# Written by `drover join`"
START_TIMEOUT_S = 30.0


EXECD_UNIT = "drover-execd.service"
EXECD_UNIT_PATH = f"/etc/systemd/system/{EXECD_UNIT}"

def run(command: str, argv: list[str]) -> int:
    p = parser(command, "Join this host to a cluster as a node (as root): verify the controller by the "
                        "token's fingerprint, get the node's certificate, write its drover.toml, start its execd.")
    p.add_argument("controller", metavar="https://ADDR:PORT",
                   help="the controller, as `drover up --listen` serves it; several separated by commas where "
                        "controllers share one PostgreSQL store (the node follows the active one)")
    p.add_argument("--token", required=True, help="a join token from `drover token create` on the controller's host")
    p.add_argument("--name", help="the node's name (default: this host's name)")
    p.add_argument("--state-dir", help=f"the node's state directory (default: {SYSTEM_STATE_DIR})")
    p.add_argument("--cpus", type=int, help="CPUs the node offers (default: all)")
    p.add_argument("--memory", type=int, metavar="MIB", help="memory the node offers (default: all)")
    p.add_argument("--munge-socket", metavar="PATH",
                   help="this host's munged, which vouches for its users to the controller and checks the "
                        "signatures of the jobs it is sent (default: /run/munge/munge.socket.2)")
    p.add_argument("--no-munge", action="store_true",
                   help="join without MUNGE even where munged runs: the node runs the jobs the controller sends "
                        "without checking their owners' signatures, and its users cannot submit from here")
    args = p.parse_args(argv)
    if args.no_munge and args.munge_socket:
        p.error("--no-munge and --munge-socket contradict each other: give one")
    if os.geteuid() != 0:
        raise Forbidden("only root joins a host to a cluster: its execd runs each job as the job's owner")

    import socket

    from drover.cluster.files import TlsFiles, check_node_name
    from drover.cluster.tls import parse_address
    from drover.cluster.tokens import parse_token

    token = parse_token(args.token)
    urls = []
    for given in args.controller.split(","):
        host, port = parse_address(given.strip(), "the controller's address")
        urls.append(f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}")
    url = ",".join(urls)  # the client goes to the active one of them
    node = check_node_name(args.name or socket.gethostname().split(".")[0])  # as the execd names its node
    paths = Paths(os.path.abspath(args.state_dir) if args.state_dir else SYSTEM_STATE_DIR)
    files = TlsFiles.of(paths.root)
    _check_free(paths, files)

    ca_pem = _pinned_ca(url, token.fingerprint)
    from drover.cluster.ca import fingerprint, signing_request
    from drover.cluster.tls import pinned_context

    request_pem, key_pem = signing_request(node)
    from drover.client import Client

    with Client(url, timeout_s=30, tls=pinned_context(ca_pem)) as api:
        reply = api.join(str(token), node, request_pem.decode("ascii"))
    if fingerprint(reply.ca.encode()) != token.fingerprint:
        raise Forbidden("the controller answered with another CA than the token pins: not joining")

    from drover.cluster.files import write_private

    os.makedirs(paths.root, mode=0o711, exist_ok=True)
    os.chmod(paths.root, 0o711)  # its users reach cluster.json by name, and nothing else
    write_private(files.node_key, key_pem)
    write_private(files.node_cert, reply.certificate.encode(), 0o644)
    write_private(files.ca_cert, reply.ca.encode(), 0o644)
    # Where munged runs (or is named), the node runs only jobs their owners signed: the
    # controller cannot make it run anything as anyone (cluster/signing.py).
    # --no-munge: none, whatever runs here (the node is told, not left to find one).
    munge_socket = args.munge_socket or MUNGE_SOCKET
    signed = not args.no_munge and (bool(args.munge_socket) or os.path.exists(MUNGE_SOCKET))
    config = _node_config(urls, reply.node, files, args.cpus, args.memory, munge_socket if signed else None)
    write_private(paths.config_file, config.encode(), 0o644)
    # For this host's users: where the cluster is, the CA to verify it by, and the munged that
    # vouches for them (their commands send a MUNGE credential with each request); none after
    # --no-munge.
    write_private(paths.cluster_file, json.dumps({"controller": url, "ca_pem": reply.ca,
                                                  "munge_socket": None if args.no_munge else munge_socket}
                                                 ).encode(), 0o644)
    started = _start_execd(paths, reply.node)
    at_boot = _enabled_at_boot(paths)
    if args.json:
        print_json({"node": reply.node, "controller": url, "state_dir": paths.root, "execd": started,
                    "enabled_at_boot": at_boot})
    else:
        print(f"joined {url} as node {reply.node}; its certificate is {files.node_cert}")
        print(f"started {started}")
        if at_boot:
            print(f"enabled {at_boot}: the node's execd starts at boot")
        if args.no_munge:
            print("warning: joined without MUNGE (--no-munge): this node runs the jobs the controller sends "
                  "without checking their owners' signatures, and its users cannot submit from here",
                  file=sys.stderr)
        elif not signed:
            print(f"warning: no munged at {MUNGE_SOCKET}: this node runs the jobs the controller sends "
                  "without checking their owners' signatures, and its users cannot submit from here "
                  "(install munge with the cluster's key, then join again)", file=sys.stderr)
    return 0


def _enabled_at_boot(paths: Paths) -> str | None:
    """Where systemd runs and `make install-system` installed its unit: the node's execd is
    enabled to start at boot (drover-execd.service, `drover install-units`). The unit serves the
    system's state directory only."""
    if paths.root != SYSTEM_STATE_DIR or not os.path.isdir("/run/systemd/system") \
            or not os.path.exists(EXECD_UNIT_PATH):
        return None
    import subprocess

    enabled = subprocess.run(["systemctl", "enable", EXECD_UNIT], capture_output=True, text=True)
    return EXECD_UNIT if enabled.returncode == 0 else None


def _check_free(paths: Paths, files: TlsFiles) -> None:
    """A state directory that is already a node's, or has a drover.toml of its own, is not
    taken over: join writes its own."""
    from drover.cli.cluster import _read_pid

    if os.path.exists(files.node_cert):
        raise Conflict(f"{paths.root} is already a node's ({files.node_cert}); run `drover leave` first")
    if _read_pid(paths.execd_pid) is not None:
        raise Conflict(f"an execd already runs for {paths.root} (pid file {paths.execd_pid}); stop it first")
    if os.path.exists(paths.config_file):
        raise Conflict(f"{paths.config_file} exists; `drover join` writes the node's own: move it away, "
                       "or join with another --state-dir")


def _pinned_ca(url: str, pinned: str) -> bytes:
    """The controller's CA certificate, fetched on a connection nothing is trusted on, and
    accepted only if its fingerprint is the token's."""
    from drover.client import Client
    from drover.cluster.ca import fingerprint, spaced
    from drover.cluster.tls import unverified_context

    with Client(url, timeout_s=30, tls=unverified_context()) as api:
        shown = api.cluster_ca().certificate.encode()
    try:
        found = fingerprint(shown)
    except ValueError:
        raise Forbidden(f"the controller at {url} did not show a CA certificate: not joining") from None
    if found != pinned:
        raise Forbidden(f"the controller at {url} shows a CA with fingerprint {spaced(found)}, not the token's "
                        f"{spaced(pinned)}: not joining (is this the cluster the token is for?)")
    return shown


def _node_config(urls: list[str], node: str, files: TlsFiles, cpus: int | None, memory: int | None,
                 munge_socket: str | None) -> str:
    """The node's drover.toml: TOML's basic strings read JSON's escapes, so json.dumps quotes
    them (and a list of strings is the same in both)."""
    lines = [f"{JOINED_MARK} on {time.strftime('%Y-%m-%d %H:%M:%S')}: this node's controller and TLS files.",
             "[execd]", f"controller = {json.dumps(urls[0] if len(urls) == 1 else urls)}", f"node_name = {json.dumps(node)}",
             f"tls_cert = {json.dumps(files.node_cert)}", f"tls_key = {json.dumps(files.node_key)}",
             f"tls_ca = {json.dumps(files.ca_cert)}"]
    if munge_socket:
        lines += ["require_signed_jobs = true", f"munge_socket = {json.dumps(munge_socket)}"]
    if cpus:
        lines.append(f"cpus = {cpus}")
    if memory:
        lines.append(f"memory_mib = {memory}")
    return "\n".join(lines) + "\n"


def _start_execd(paths: Paths, node: str) -> str:
    """Start the node's execd in the background and wait until the controller welcomed it."""
    from drover.cli.cluster import _check_alive, _spawn

    offset = os.path.getsize(paths.execd_log) if os.path.exists(paths.execd_log) else 0
    execd = _spawn("execd", paths, paths.execd_log, [])
    deadline = time.monotonic() + START_TIMEOUT_S
    welcomed = f"joined the cluster as node {node}"
    while True:
        with open(paths.execd_log, "rb") as log:
            log.seek(offset)
            if welcomed.encode() in log.read():
                return f"execd (pid {execd.pid}, log {paths.execd_log})"
        try:
            _check_alive("execd", execd, deadline, paths.execd_log)
        except DroverError as error:
            raise DroverError(f"the node has its certificate, but its execd did not connect: {error}") from None
        time.sleep(0.05)
