"""drover store migrate|check|copy: the job store's schema and contents, for operators. Each
works on a store URL (--url; default: the one the cluster's drover.toml names, else its SQLite
file) while the controller is stopped or running; `copy` wants the controller stopped."""

from __future__ import annotations

import argparse
import os

from drover.cli.common import parser, print_json
from drover.config import Paths


def run(command: str, argv: list[str]) -> int:
    p = parser(command, "The job store: bring its schema up to date, check it, or copy it to another database "
                        "(SQLite to PostgreSQL, or back).")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    migrate = actions.add_parser("migrate", help="bring the store's schema to this Drover's version")
    check = actions.add_parser("check", help="the schema version, what the store holds, and whether its pages are "
                                             "sound; exit 1 if the schema is behind, 2 if the store cannot be "
                                             "reached, 3 if it is damaged")
    for sub in (migrate, check):
        sub.add_argument("--url", help="the store: sqlite:///PATH or postgresql://USER@HOST:PORT/DATABASE "
                                       "(default: the cluster's)")
        sub.add_argument("--state-dir", help="the cluster whose store is meant (default: yours)")
    copy = actions.add_parser("copy", help="copy a whole store into an empty database, then compare every table's "
                                           "row count and checksum")
    copy.add_argument("--from", dest="source", required=True, metavar="URL", help="the store to copy")
    copy.add_argument("--to", dest="target", required=True, metavar="URL", help="the database to copy it into")
    copy.add_argument("--force", action="store_true", help="replace what the target holds")
    for sub in (migrate, check, copy):
        # After the action too, as every other command takes it (SUPPRESS: one given before it stays).
        sub.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON for programs")
    args = p.parse_args(argv)

    from drover.store import admin

    if args.action == "copy":
        return _copy(args.source, args.target, args.force, args.json)
    url = args.url or _cluster_store(args.state_dir)
    if args.action == "migrate":
        before, after = admin.migrate(url)
        if args.json:
            print_json({"before": before, "after": after})
        else:
            print(f"schema version {after}" + (f" (was {before})" if before != after else ", already current"))
        return 0
    status = admin.check(url)
    found = status.integrity
    if args.json:
        print_json({"store": status.where, "version": status.version, "newest": status.newest,
                    "current": status.is_current, "counts": status.counts,
                    "integrity": {"method": found.method, "sound": found.sound, "problems": list(found.problems),
                                  "skipped": found.skipped}})
    else:
        if status.version is None:
            print(f"{status.where}: its schema version cannot be read: {status.unreadable}")
        else:
            state = ("current" if status.is_current
                     else f"behind: this Drover's is {status.newest}; run `drover store migrate`")
            print(f"{status.where}: schema version {status.version} ({state})")
        for table, count in status.counts.items():
            print(f"  {table:<9} {count:>12,}")
        print(f"integrity: {found.describe()}")
    if not found.sound:
        import sys

        print(f"drover store check: {found.refusal()}", file=sys.stderr)
        return 3
    return 0 if status.is_current else 1


def _copy(source: str, target: str, force: bool, json: bool) -> int:
    from drover.store.admin import copy_store

    report = copy_store(source, target, force=force)
    if json:
        print_json({"matches": report.matches, "tables": [
            {"table": s.table, "source_rows": s.rows, "target_rows": t.rows, "source_checksum": s.checksum,
             "target_checksum": t.checksum} for s, t in zip(report.source, report.target, strict=True)]})
    else:
        print(f"{'table':<18} {'rows':>12} {'target rows':>12}  {'checksum (SHA-256, first 16)':<28}")
        for s, t in zip(report.source, report.target, strict=True):
            same = "same" if s == t else f"DIFFERENT: target {t.checksum[:16]}"
            print(f"{s.table:<18} {s.rows:>12,} {t.rows:>12,}  {s.checksum[:16]}  {same}")
        print("every table's rows and checksum agree" if report.matches else
              "the copy differs from the source: do not use it (the source is unchanged)")
    return 0 if report.matches else 1


def _cluster_store(state_dir: str | None) -> str:
    """The store the cluster's controller opens: drover.toml's [store] url, else its SQLite file."""
    from drover.config_file import read_config

    paths = Paths(os.path.abspath(state_dir) if state_dir else None)
    url = read_config(paths.config_file).config.store.url
    return url or f"sqlite://{paths.database}"
