"""drover leave: take this node out of its cluster (as root). The controller forgets the node and
revokes its certificate (refused while the node runs jobs); then the node's execd stops, and its
certificate, key and the drover.toml `drover join` wrote are removed."""

from __future__ import annotations

import os

from drover.cli.common import parser, print_json
from drover.config import SYSTEM_STATE_DIR, Paths
from drover.core.errors import BadRequest, Forbidden, NotFound, Unavailable


def run(command: str, argv: list[str]) -> int:
    p = parser(command, "Leave the cluster this host joined with `drover join`: the controller forgets the "
                        "node, its execd stops, and its certificate is removed.")
    p.add_argument("--state-dir", help=f"the node's state directory (default: {SYSTEM_STATE_DIR})")
    p.add_argument("--force", action="store_true",
                   help="when the controller cannot be reached: leave here all the same (it still lists the node "
                        "until it is told)")
    args = p.parse_args(argv)
    if os.geteuid() != 0:
        raise Forbidden("only root takes a node out of its cluster")
    paths = Paths(os.path.abspath(args.state_dir) if args.state_dir else SYSTEM_STATE_DIR)

    from drover.cli.commands.join import JOINED_MARK
    from drover.config_file import read_config

    execd = read_config(paths.config_file).config.execd
    if not execd.controller or not (execd.tls_cert and execd.tls_key and execd.tls_ca):
        raise BadRequest(f"{paths.root} is not a node that joined a cluster (its drover.toml names no controller "
                         "and certificate); `drover down` stops a local cluster")
    from drover.client import Client
    from drover.cluster.tls import node_context

    told = True
    try:
        with Client(execd.controllers(), timeout_s=30, tls=node_context(execd.tls_ca, execd.tls_cert, execd.tls_key)) as api:
            node = api.leave().node
    except NotFound:
        node = execd.node_name or "?"  # the controller had forgotten it already
    except (Unavailable, OSError) as error:
        if not args.force:
            raise Unavailable(f"{error}; the node is still a member: try again, or leave with --force") from None
        node, told = execd.node_name or "?", False

    from drover.cli.cluster import down

    stopped = down(paths)
    _disable_at_boot(paths)
    removed = []
    for path in (execd.tls_cert, execd.tls_key, execd.tls_ca):
        try:
            os.unlink(path)
            removed.append(path)
        except FileNotFoundError:
            pass
    with open(paths.config_file) as file:
        written_by_join = file.read().startswith(JOINED_MARK)
    if written_by_join:
        os.unlink(paths.config_file)
        removed.append(paths.config_file)
        if os.path.exists(paths.cluster_file):
            os.unlink(paths.cluster_file)
            removed.append(paths.cluster_file)
    if args.json:
        print_json({"node": node, "controller_told": told, "stopped": stopped, "removed": removed})
        return 0
    print(f"node {node} left {', '.join(execd.controllers())}" + ("" if told else " (the controller was not told: it could not be reached)"))
    if stopped:
        print("stopped " + ", ".join(stopped))
    for path in removed:
        print(f"removed {path}")
    return 0


def _disable_at_boot(paths: Paths) -> None:
    """The execd `drover join` enabled at boot (where systemd runs) is no longer started."""
    from drover.cli.commands.join import EXECD_UNIT, EXECD_UNIT_PATH

    if paths.root == SYSTEM_STATE_DIR and os.path.isdir("/run/systemd/system") and os.path.exists(EXECD_UNIT_PATH):
        import subprocess

        subprocess.run(["systemctl", "disable", EXECD_UNIT], capture_output=True)
