"""sshare: shares and usage, in sshare's fields (src/sshare/process.c), options as
src/sshare/sshare.c reads them.

Drover has no accounts and no fair share yet: every user has one share under the account
`root`, FairShare is 1.0 for everyone (usage does not lower anyone's priority), and RawUsage is
what Drover measured: the CPU seconds (user and system) of the user's ended jobs."""

from __future__ import annotations

from dataclasses import dataclass

from drover.compat.optiontable import Arity, Mark, Option
from drover.compat.slurm.common import (
    VERSION,
    Refused,
    command_line,
    current_user,
    reported,
    user_names,
)
from drover.compat.slurm.printfields import Field, Printer, choose

S, M, R = Mark.SUPPORTED, Mark.MEANINGLESS, Mark.REFUSED
NONE, REQ, OPT = Arity.NONE, Arity.REQUIRED, Arity.OPTIONAL

OPTIONS = [
    Option(("-a", "--all"), NONE, S, "every user who has run a job"),
    Option(("-A", "--accounts"), REQ, M, "accounts are not kept: every user is under `root`", "ACCOUNT_LIST"),
    Option(("--autocomplete",), REQ, S, "", "OPTION"),
    Option(("-e", "--helpformat"), NONE, S),
    Option(("--help",), NONE, S),
    Option(("-h",), NONE, S, "as `-n`"),
    Option(("-l", "--long"), NONE, S),
    Option(("-m", "--partition"), NONE, M, "shares are not kept per partition"),
    Option(("-M", "--cluster", "--clusters"), REQ, M, "Drover is one cluster", "CLUSTER"),
    Option(("-n", "--noheader"), NONE, S),
    Option(("-o", "--format"), REQ, S, "every field, `FIELD%WIDTH`", "FIELD_LIST"),
    Option(("-p", "--parsable"), NONE, S),
    Option(("-P", "--parsable2"), NONE, S),
    Option(("-u", "--users"), REQ, S, "", "USER_LIST"),
    Option(("-U", "--Users"), NONE, S, "the user lines alone"),
    Option(("--usage",), NONE, S),
    Option(("-v", "--verbose"), NONE, M, "nothing more to say"),
    Option(("-V", "--version"), NONE, S),
    Option(("--json",), OPT, R, "the data_parser output is not produced", "[DATA_PARSER]"),
    Option(("--yaml",), OPT, R, "the data_parser output is not produced", "[DATA_PARSER]"),
]
DEFAULT = "A,User,RawShares,NormShares,RawUsage,Eff,Fairshare"
LONG = "A,User,RawShares,NormShares,RawUsage,NormUsage,Eff,Fairshare,LevelFS,GrpTRESMins,TRESRunMins"


@dataclass(frozen=True)
class Share:
    account: str
    user: str  # "" for the account's own line
    shares: int | None
    norm_shares: float | None
    usage: float
    total_usage: float

    @property
    def effective(self) -> float:
        return self.usage / self.total_usage if self.total_usage else 0.0


def _double(value: float | None) -> str | None:
    return None if value is None else f"{value:f}"


FIELDS: list[Field[Share]] = [
    Field(-20, "Account", lambda s: s.account),
    Field(10, "Cluster", lambda s: "drover"),
    Field(13, "EffectvUsage", lambda s: _double(s.effective)),
    Field(10, "FairShare", lambda s: _double(1.0) if s.user else None),
    Field(30, "GrpTRESMins", lambda s: ""),
    Field(30, "GrpTRESRaw", lambda s: f"cpu={int(s.usage / 60)}"),
    Field(15, "ID", lambda s: "1" if not s.user else ""),
    Field(10, "LevelFS", lambda s: _double(1.0) if s.user else None),
    Field(11, "NormShares", lambda s: _double(s.norm_shares)),
    Field(11, "NormUsage", lambda s: _double(s.effective)),
    Field(12, "Partition", lambda s: ""),
    Field(10, "RawShares", lambda s: None if s.shares is None else str(s.shares)),
    Field(11, "RawUsage", lambda s: str(int(s.usage))),
    Field(30, "TRESRunMins", lambda s: ""),
    Field(10, "User", lambda s: s.user),
]


def main(argv: list[str] | None = None) -> int:
    parsed = command_line("sshare", argv, OPTIONS)
    if isinstance(parsed, int):
        return parsed
    return reported("sshare", lambda: _run(*parsed))


def _run(found: list[tuple[Option, str | None]], operands: list[str]) -> int:
    values: dict[str, str] = {}
    flags: set[str] = set()
    for option, value in found:
        if option.mark is Mark.REFUSED:
            raise Refused(f"{option.names[-1]} is not supported by Drover: {option.note}")
        if value is None:
            flags.add(option.key)
        else:
            values[option.key] = value
    if operands:
        raise Refused(f"Unknown arguments: {' '.join(operands)}")
    if "version" in flags:
        print(VERSION)
        return 0
    if flags & {"help", "usage"}:
        print("Usage: sshare [-a] [-A accounts] [-l] [-n] [-o fields] [-p] [-P] [-u users] [-U]")
        return 0
    if "helpformat" in flags:
        print(" ".join(field.name for field in FIELDS))
        return 0
    fields = choose(values.get("format") or (LONG if "long" in flags else DEFAULT), FIELDS)
    shares = _shares(values, flags)
    parsable = "between" if "parsable2" in flags else ("ending" if "parsable" in flags else None)
    printer: Printer[Share] = Printer(fields, parsable, header=not flags & {"noheader", "h"})
    print("\n".join(printer.lines(shares)))
    return 0


def _shares(values: dict[str, str], flags: set[str]) -> list[Share]:
    from drover.client.client import Client

    with Client() as client:
        rows = client.history(limit=1_000_000)
    used: dict[str, float] = {}
    for row in rows:
        if row.usage is not None:
            used[row.owner] = used.get(row.owner, 0.0) + row.usage.user_cpu_s + row.usage.sys_cpu_s
    if "users" in values:
        users = sorted(user_names(values["users"]))
    elif "all" in flags:
        users = sorted(used)
    else:
        users = [current_user()]
    total = sum(used.values())
    out = [] if "Users" in flags else [Share("root", "", None, None, total, total)]
    everyone = max(len(used), 1)
    out += [Share(" root", user, 1, 1 / everyone, used.get(user, 0.0), total) for user in users]
    return out
