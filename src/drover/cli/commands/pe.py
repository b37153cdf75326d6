"""drover pe list|show NAME: the cluster's parallel environments (drover.toml's
[parallel_environments.NAME], Grid Engine's sge_pe(5)) and the slots their jobs hold now."""

from __future__ import annotations

from drover.cli.common import client, parser, print_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.protocol.api import ParallelEnvironmentInfo

LIST_COLUMNS = ("PE", "SLOTS", "USED", "RULE", "RUNNING", "PENDING", "USERS")


def list_rows(environments: list[ParallelEnvironmentInfo]) -> list[tuple[str, ...]]:
    return [(pe.name, str(pe.slots), str(pe.slots_used), pe.allocation_rule, str(pe.running), str(pe.pending),
             users_text(pe)) for pe in environments]


def users_text(pe: ParallelEnvironmentInfo) -> str:
    parts = ([f"only {','.join(pe.user_lists)}"] if pe.user_lists else []) + (
        [f"not {','.join(pe.xuser_lists)}"] if pe.xuser_lists else [])
    return "; ".join(parts) or "all"


def sge_pe_lines(pe: ParallelEnvironmentInfo) -> list[str]:
    """The parallel environment as sge_pe(5) writes it (`qconf -sp NAME`, `drover pe show NAME`)."""
    def flag(value: bool) -> str:
        return "TRUE" if value else "FALSE"

    fields = [("pe_name", pe.name), ("slots", str(pe.slots)), ("user_lists", ",".join(pe.user_lists) or "NONE"),
              ("xuser_lists", ",".join(pe.xuser_lists) or "NONE"),
              ("start_proc_args", pe.start_proc_args or "NONE"), ("stop_proc_args", pe.stop_proc_args or "NONE"),
              ("allocation_rule", pe.allocation_rule), ("control_slaves", flag(pe.control_slaves)),
              ("job_is_first_task", flag(pe.job_is_first_task)), ("urgency_slots", "min"),
              ("accounting_summary", flag(pe.accounting_summary))]
    return [f"{key:<18} {value}" for key, value in fields]


def find(environments: list[ParallelEnvironmentInfo], name: str) -> ParallelEnvironmentInfo:
    found = next((pe for pe in environments if pe.name == name), None)
    if found is None:
        from drover.core.errors import NotFound

        known = ", ".join(pe.name for pe in environments) or "none"
        raise NotFound(f"no parallel environment named {name!r} (this cluster has {known})")
    return found


def run(command: str, argv: list[str]) -> int:
    p = parser(command, "The cluster's parallel environments: drover pe list | drover pe show NAME.")
    p.add_argument("subcommand", choices=("list", "show"))
    p.add_argument("name", nargs="?", metavar="NAME")
    args = p.parse_args(argv)
    if args.subcommand == "show" and not args.name:
        p.error("show needs the parallel environment's NAME")
    if args.subcommand == "list" and args.name:
        p.error("list takes no NAME (drover pe show NAME shows one)")
    with client() as api:
        environments = api.parallel_environments()
    if args.subcommand == "list":
        if args.json:
            print_json(environments)
            return 0
        from drover.cli.render import table

        table(LIST_COLUMNS, list_rows(environments), right=("SLOTS", "USED", "RUNNING", "PENDING"))
        return 0
    pe = find(environments, args.name)
    if args.json:
        print_json(pe)
    else:
        print("\n".join([*sge_pe_lines(pe), f"{'# in use':<18} {pe.slots_used} slot(s), {pe.running} task(s) "
                                             f"running, {pe.pending} job(s) waiting"]))
    return 0
