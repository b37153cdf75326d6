"""drover cluster init: make the cluster's CA and the controller's certificate (idempotent), and
print the CA's fingerprint, which every join token pins. With --system (as root), first the
service user the shared cluster's controller runs as, and its files made that user's
(cli/service_account.py); drover-controller.service runs it before the controller."""

from __future__ import annotations

import os

from drover.cli.common import parser, print_json
from drover.config import SERVICE_USER, SYSTEM_STATE_DIR, Paths
from drover.core.errors import Forbidden

TYPE_CHECKING = False
if TYPE_CHECKING:
    import pwd

    from drover.cluster.setup import InitResult


def run(command: str, argv: list[str]) -> int:
    p = parser(command, "Set up the cluster for many hosts: `drover cluster init` makes its CA and the "
                        "controller's TLS certificate under STATE_DIR/tls/ (once; later runs keep them) "
                        "and prints the CA's SHA-256 fingerprint.")
    p.add_argument("action", choices=["init"], help="init: make what is missing, print the fingerprint")
    p.add_argument("--system", action="store_true",
                   help=f"as root: the machine's shared cluster ({SYSTEM_STATE_DIR}); also makes the service user "
                        f"{SERVICE_USER} its controller runs as, and gives it the controller's files")
    p.add_argument("--state-dir", help="the cluster's state directory (default: yours; with --system, the system's)")
    p.add_argument("--host", action="append", default=[], metavar="NAME",
                   help="a name or address the controller's certificate also names (repeatable)")
    args = p.parse_args(argv)
    paths = Paths(os.path.abspath(args.state_dir) if args.state_dir else (SYSTEM_STATE_DIR if args.system else None))
    if args.system:
        if os.geteuid() != 0:
            raise Forbidden("only root sets up a shared cluster (drover cluster init --system)")
        result = init_shared_cluster(paths, args.host)[1]
    else:
        result = init_cluster(paths, args.host)
    fingerprint = result.tls.fingerprint()
    if args.json:
        print_json({"state_dir": paths.root, "ca": result.tls.ca, "cert": result.tls.cert,
                    "fingerprint": fingerprint, "made": result.made, "own": result.tls.own})
        return 0
    from drover.cluster.ca import spaced

    for path in result.made:
        print(f"made {path}")
    if not result.made:
        print("the cluster's TLS files are there already" if result.tls.own
              else "using the certificates named in drover.toml")
    print(f"CA {result.tls.ca}")
    print(f"SHA-256 fingerprint {spaced(fingerprint)}")
    return 0


def init_cluster(paths: Paths, hosts: list[str], user: pwd.struct_passwd | None = None) -> InitResult:
    """`drover cluster init` for `paths` (also run by `drover up --system` and `up --listen`);
    with `user`, the files are made with that user's rights (the shared cluster's service user)."""
    from drover.cli.service_account import acting_as
    from drover.cluster.setup import init
    from drover.config_file import read_config

    os.makedirs(paths.root, mode=0o700, exist_ok=True)
    old_umask = os.umask(0o077)
    try:
        section = read_config(paths.config_file).config.controller
        if user is None:
            return init(paths.root, section, hosts)
        with acting_as(user):
            return init(paths.root, section, hosts)
    finally:
        os.umask(old_umask)


def init_shared_cluster(paths: Paths, hosts: list[str]) -> tuple[pwd.struct_passwd, InitResult]:
    """As root, before a shared cluster's controller starts: its service user (made if missing),
    the controller's files made that user's, then the cluster's CA, made as that user."""
    from drover.cli.service_account import give_controller_its_files, service_user

    user = service_user(paths.root)
    give_controller_its_files(paths, user)
    return user, init_cluster(paths, hosts, user)
