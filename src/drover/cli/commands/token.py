"""drover token create|list|revoke: join tokens, for admins, over the local socket. A token lets
a host join as a node (`drover join`); it pins the cluster's CA, expires, and allows a number of
joins. Its text is shown once: the controller keeps only its secret's hash."""

from __future__ import annotations

from drover.cli.common import client, parser, print_json


def run(command: str, argv: list[str]) -> int:
    p = parser(command, "Make, list and revoke join tokens (admins only): `drover token create [--ttl 1h] "
                        "[--uses N]`, `drover token list`, `drover token revoke ID`.")
    p.add_argument("action", choices=["create", "list", "revoke"])
    p.add_argument("token_id", nargs="?", metavar="ID", help="revoke: the token's id (as `list` shows it)")
    p.add_argument("--ttl", default="1h", help="create: how long it is good for: 30m, 1h, 7d (default 1h)")
    p.add_argument("--uses", type=int, default=1, help="create: how many hosts may join with it (default 1)")
    args = p.parse_args(argv)
    if (args.action == "revoke") != (args.token_id is not None):
        p.error("revoke takes the token's id, and only revoke takes one")
    from drover.cluster.tokens import parse_ttl

    ttl = parse_ttl(args.ttl) if args.action == "create" else 0.0
    with client() as api:
        if args.action == "create":
            created = api.create_token(ttl, args.uses)
            if args.json:
                print_json(created)
            else:
                print(created.token)
            return 0
        tokens = [api.revoke_token(args.token_id)] if args.action == "revoke" else api.tokens()
    if args.json:
        print_json(tokens)
        return 0
    from drover.cli.render import table, when

    table(["ID", "STATE", "USES LEFT", "EXPIRES", "CREATED", "BY"],
          [(t.id, t.state, t.uses_left, when(t.expires_at), when(t.created_at), t.created_by) for t in tokens])
    return 0
