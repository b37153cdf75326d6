"""qconf, read-only: the cluster's configuration as Grid Engine shows it, from what Drover has.
Drover's queues are its cluster queues (`default` is Grid Engine's `all.q`; compat/gridengine/queues.py);
its nodes are the execution hosts, all in the
host group @allhosts; its parallel environments are drover.toml's (`smp` always exists). Every option that
would change the configuration is refused: Drover is configured in drover.toml."""

from __future__ import annotations

import sys

from drover.compat.gridengine.common import failed, host_name, user_name
from drover.compat.gridengine.jobaction import usage
from drover.compat.gridengine.syntax import GeUsageError, Given, Operands, parse
from drover.compat.optiontable import Arity, Mark, Option
from drover.core.errors import DroverError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.protocol.api import CheckpointInfo, NodeInfo, ParallelEnvironmentInfo, QueueInfo

# qconf(1)'s options that change the configuration: name and how many words follow.
_CHANGES = ["-Aattr", "3", "-Acal", "1", "-Ackpt", "1", "-Aconf", "1", "-Ae", "1", "-Ahgrp", "1", "-Arqs", "1", "-Ap", "1", "-Aprj", "1", "-Aq", "1", "-Au", "1", "-cb", "0", "-Dattr", "3", "-Mattr", "3", "-Mc", "1", "-Mcal", "1", "-Mckpt", "1", "-Mconf", "1", "-Me", "1", "-Mhgrp", "1", "-Mrqs", "1", "-Mp", "1", "-Mprj", "1", "-Mq", "1", "-Mstree", "1", "-Mu", "1", "-Muser", "1", "-Rattr", "3", "-aattr", "4", "-acal", "1", "-ackpt", "1", "-aconf", "1", "-ae", "0", "-ah", "1", "-ahgrp", "1", "-arqs", "0", "-am", "1", "-ao", "1", "-ap", "1", "-at", "1", "-aprj", "0", "-aq", "0", "-as", "1", "-astnode", "1", "-astree", "0", "-Astree", "1", "-au", "2", "-Auser", "1", "-auser", "0", "-clearusage", "0", "-cq", "1", "-dattr", "4", "-dcal", "1", "-dckpt", "1", "-dconf", "1", "-de", "1", "-dh", "1", "-dhgrp", "1", "-drqs", "1", "-dm", "1", "-do", "1", "-dp", "1", "-dprj", "1", "-dq", "1", "-ds", "1", "-dstnode", "1", "-dstree", "0", "-du", "2", "-dul", "1", "-duser", "1", "-km", "0", "-ks", "0", "-ke", "1", "-kej", "1", "-kt", "1", "-kec", "1", "-mattr", "4", "-mc", "0", "-mcal", "1", "-mckpt", "1", "-mconf", "0", "-me", "1", "-mhgrp", "1", "-mrqs", "0", "-mp", "1", "-mprj", "1", "-mq", "1", "-msconf", "0", "-mstnode", "1", "-mstree", "0", "-mu", "1", "-muser", "1", "-purge", "3", "-rattr", "4", "-rsstnode", "1", "-tsm", "0"]
_READ_ONLY = "Drover is configured in drover.toml: qconf shows its configuration and changes nothing"
_NOTHING = "Drover has none: the answer is Grid Engine's for an empty list"
N, R, OPT = Arity.NONE, Arity.REQUIRED, Arity.OPTIONAL
OK, APPROX, REFUSED = Mark.SUPPORTED, Mark.APPROXIMATED, Mark.REFUSED
_SHOWS = [
    Option(("-help",), N, OK, "prints the usage"),
    Option(("-sc",), N, OK, "the complexes Drover honours: h_rt, s_rt, h_vmem, mem_free, virtual_free, slots"),
    Option(("-scal",), R, REFUSED, _NOTHING, "calendar_name"), Option(("-scall",), N, OK, _NOTHING),
    Option(("-sckpt",), R, OK, "a checkpoint environment of drover.toml (`[checkpoints.NAME]`)", "ckpt_name"),
    Option(("-sckptl",), N, OK, "the checkpoint environments of drover.toml"),
    Option(("-sconf",), OPT, OK, "the global configuration, with Drover's values", "[host,...|global]"),
    Option(("-sconfl",), N, OK, _NOTHING), Option(("-sds",), N, OK, _NOTHING),
    Option(("-se",), R, OK, "a node as an execution host", "hostname"),
    Option(("-sel",), N, OK, "the nodes"), Option(("-secl",), N, OK, _NOTHING),
    Option(("-sep",), N, OK, "each node's processors"),
    Option(("-sh",), N, OK, "this host"), Option(("-shgrp",), R, OK, "@allhosts: every node", "group"),
    Option(("-shgrpl",), N, OK, "@allhosts"), Option(("-shgrp_tree",), R, OK, "@allhosts: every node", "group"),
    Option(("-shgrp_resolved",), R, OK, "@allhosts: every node", "group"),
    Option(("-srqs",), OPT, OK, _NOTHING, "[rqs_name_list]"), Option(("-srqsl",), N, OK, _NOTHING),
    Option(("-sm",), N, OK, "root"), Option(("-so",), N, OK, "root"),
    Option(("-sobjl",), R, REFUSED, "object queries are not supported", "obj_spec attr_name val"),
    Option(("-sp",), R, OK, "a parallel environment of drover.toml's, as sge_pe(5) writes it", "pe_name"),
    Option(("-spl",), N, OK, "the parallel environments (`smp` and drover.toml's)"),
    Option(("-sprj",), R, REFUSED, _NOTHING, "project"), Option(("-sprjl",), N, OK, _NOTHING),
    Option(("-sq",), OPT, OK, "a queue's configuration: its nodes, slots per node, nice as `priority`, window as "
           "`calendar`, limits as h_rt and h_vmem", "[wc_queue_list]"),
    Option(("-sql",), N, OK, "the queues (`default` is all.q)"),
    Option(("-ss",), N, OK, "this host"), Option(("-ssconf",), N, OK, "the scheduler configuration"),
    Option(("-sstnode",), R, REFUSED, _NOTHING, "node_path"), Option(("-sstree",), N, OK, _NOTHING),
    Option(("-sst",), N, OK, _NOTHING), Option(("-sss",), N, OK, "the controller's host"),
    Option(("-su",), R, OK, "the user sets: arusers, deadlineusers, defaultdepartment", "acl_name"),
    Option(("-sul",), N, OK, "arusers, deadlineusers, defaultdepartment"),
    Option(("-suser",), R, REFUSED, _NOTHING, "user"), Option(("-suserl",), N, OK, _NOTHING),
]
OPTIONS = sorted([*_SHOWS, *(Option((name,), {"0": N, "1": R}.get(words, R), REFUSED, _READ_ONLY)
                             for name, words in zip(_CHANGES[::2], _CHANGES[1::2], strict=True))],
                 key=lambda o: o.names[0].lower())


def main(argv: list[str] | None = None) -> int:
    try:
        parsed = parse(list(sys.argv[1:] if argv is None else argv), OPTIONS, Operands.JOBS)
    except GeUsageError as error:
        print(error, file=sys.stderr)
        return 1
    if not parsed.given or parsed.given[0].key == "help":
        print(usage("qconf", OPTIONS, ""))
        return 0 if parsed.given else 1
    first = parsed.given[0]
    if first.option.mark is REFUSED:
        print(f"qconf: {first.option.names[0]}: {first.option.note}", file=sys.stderr)
        return 1
    from drover.client.client import Client

    try:
        with Client() as client:
            nodes = sorted(client.nodes(), key=lambda n: n.name)
            queues = client.queues() if first.key in ("sq", "sql") else []
            environments = client.parallel_environments() if first.key in ("sp", "spl") else []
            checkpoints = client.checkpoints() if first.key in ("sckpt", "sckptl") else []
    except DroverError as error:
        return failed("qconf", error)
    text, status = show(first, nodes, queues, environments, checkpoints)
    print(text, end="" if text.endswith("\n") or not text else "\n", file=sys.stdout if status == 0 else sys.stderr)
    return status


def show(given: Given, nodes: list[NodeInfo], queues: list[QueueInfo],
         environments: list[ParallelEnvironmentInfo] | None = None,
         checkpoints: list[CheckpointInfo] | None = None) -> tuple[str, int]:
    """What qconf prints for one show option, and its exit status. Pure."""
    from drover.compat.gridengine.queues import ge_name, queue_conf

    if given.key == "sckpt" or (given.key == "sckptl" and checkpoints):
        return _checkpoints(given, checkpoints or [])
    names = [node.name for node in nodes]
    by_name = {ge_name(queue.name): queue for queue in sorted(queues, key=lambda q: ge_name(q.name))}
    key = given.key
    if key == "sql":
        return "\n".join(by_name) + "\n", 0
    if key == "sq":
        from fnmatch import fnmatchcase

        wanted = []
        for pattern in (given.value or ",".join(by_name)).split(","):
            matched = [name for name in by_name if fnmatchcase(name, pattern.partition("@")[0])]
            if not matched:
                return f"No cluster queue or queue instance matches the phrase \"{pattern}\"", 1
            wanted += [name for name in matched if name not in wanted]
        return "".join(_pairs(queue_conf(by_name[name], nodes)) for name in wanted), 0
    if key == "sel":
        return "\n".join(names) + "\n", 0
    if key == "se":
        node = next((n for n in nodes if n.name == given.value), None)
        if node is None:
            return f"{given.value} is not an execution host", 1
        return _pairs([("hostname", node.name), ("load_scaling", "NONE"), ("complex_values", "NONE"),
                       ("user_lists", "NONE"), ("xuser_lists", "NONE"), ("projects", "NONE"),
                       ("xprojects", "NONE"), ("usage_scaling", "NONE"), ("report_variables", "NONE"),
                       ("processors", str(node.cpus))]), 0
    if key == "sep":
        rows = [f"{'HOST':<24}{'PROCESSOR':>10}{'ARCH':>15}", "=" * 49]
        rows += [f"{n.name:<24}{n.cpus:>10}{'lx-amd64':>15}" for n in nodes]
        rows += ["=" * 49, f"{'SUM':<24}{sum(n.cpus for n in nodes):>10}"]
        return "\n".join(rows) + "\n", 0
    if key in ("sh", "ss", "sss"):
        return host_name() + "\n", 0
    if key == "shgrpl":
        return "@allhosts\n", 0
    if key in ("shgrp", "shgrp_tree", "shgrp_resolved"):
        if given.value != "@allhosts":
            return f"Host group \"{given.value}\" does not exist", 1
        if key == "shgrp":
            return _pairs([("group_name", "@allhosts"), ("hostlist", " ".join(names) or "NONE")]), 0
        return ("@allhosts\n" + "".join(f"   {n}\n" for n in names)) if key == "shgrp_tree" else " ".join(
            names) + "\n", 0
    if key in ("sm", "so"):
        return "root\n", 0
    if key == "spl":
        return "".join(f"{pe.name}\n" for pe in environments or []) or "no parallel environment defined\n", 0
    if key == "sp":
        found = next((pe for pe in environments or [] if pe.name == given.value), None)
        if found is None:
            return f"parallel environment \"{given.value}\" does not exist", 1
        from drover.cli.commands.pe import sge_pe_lines

        return "".join(f"{line}\n" for line in sge_pe_lines(found)) + f"{'qsort_args':<18} NONE\n", 0
    if key == "sul":
        return "arusers\ndeadlineusers\ndefaultdepartment\n", 0
    if key == "su":
        return _pairs([("name", given.value or ""), ("type", "ACL DEPT" if given.value != "defaultdepartment"
                                                       else "DEPT"), ("fshare", "0"), ("oticket", "0"),
                       ("entries", "NONE")]), 0
    if key == "sc":
        return _complexes(), 0
    if key == "sconf":
        return _global_conf(), 0
    if key == "ssconf":
        return _pairs([("algorithm", "default"), ("schedule_interval", "0:0:0"), ("maxujobs", "0"),
                       ("queue_sort_method", "load"), ("job_load_adjustments", "NONE"),
                       ("schedd_job_info", "false"), ("params", "none"), ("max_reservation", "0")]), 0
    empty = {"scall": "no calendar defined", "sckptl": "no ckpt interface definition defined",
             "sconfl": "no local configuration defined", "sds": "", "secl": "no event clients registered",
             "srqs": "no resource quota set list defined", "srqsl": "no resource quota set list defined",
             "sprjl": "no project list defined", "sstree": "no sharetree element defined",
             "sst": "no sharetree element defined", "suserl": "no user list defined"}
    return empty.get(key, "") + ("\n" if empty.get(key) else ""), 0


def _checkpoints(given: Given, checkpoints: list[CheckpointInfo]) -> tuple[str, int]:
    """-sckptl: the names; -sckpt NAME: checkpoint(5)'s format."""
    if given.key == "sckptl":
        return "".join(f"{c.name}\n" for c in checkpoints), 0
    found = next((c for c in checkpoints if c.name == given.value), None)
    if found is None:
        return f"{given.value} is not a checkpointing interface definition", 1
    return _pairs([("ckpt_name", found.name), ("interface", found.interface), ("ckpt_command", found.ckpt_command),
                   ("migr_command", found.migr_command), ("restart_command", found.restart_command),
                   ("clean_command", found.clean_command), ("ckpt_dir", found.ckpt_dir or "NONE"),
                   ("signal", found.signal or "none"), ("when", found.when)]), 0


def _pairs(rows: list[tuple[str, str]]) -> str:
    """qconf's object layout: the key padded to 24 characters, then the value."""
    return "".join(f"{key:<24}{value}\n" for key, value in rows)


def _complexes() -> str:
    rows = [("#name", "shortcut", "type", "relop", "requestable", "consumable", "default", "urgency"),
            ("#" + "-" * 95,),
            ("h_rt", "h_rt", "TIME", "<=", "YES", "NO", "0:0:0", "0"),
            ("h_vmem", "h_vmem", "MEMORY", "<=", "YES", "YES", "0", "0"),
            ("mem_free", "mf", "MEMORY", "<=", "YES", "YES", "0", "0"),
            ("s_rt", "s_rt", "TIME", "<=", "YES", "NO", "0:0:0", "0"),
            ("s_vmem", "s_vmem", "MEMORY", "<=", "YES", "NO", "0", "0"),
            ("slots", "s", "INT", "<=", "YES", "YES", "1", "1000"),
            ("virtual_free", "vf", "MEMORY", "<=", "YES", "YES", "0", "0"),
            ("# >#< starts a comment but comments are not saved across edits --------",)]
    return "\n".join(" ".join(f"{cell:<{w}}" for cell, w in zip(row, (18, 10, 12, 8, 12, 12, 8, 8), strict=False))
                     .rstrip() for row in rows) + "\n"


def _global_conf() -> str:
    return "global:\n" + _pairs([
        ("execd_spool_dir", "/var/spool/drover"), ("mailer", "/usr/bin/mail"), ("xterm", "/usr/bin/xterm"),
        ("load_sensor", "none"), ("prolog", "none"), ("epilog", "none"), ("shell_start_mode", "posix_compliant"),
        ("login_shells", "sh,bash"), ("min_uid", "0"), ("min_gid", "0"), ("user_lists", "none"),
        ("xuser_lists", "none"), ("projects", "none"), ("xprojects", "none"), ("enforce_project", "false"),
        ("enforce_user", "auto"), ("load_report_time", "00:00:40"), ("max_unheard", "00:05:00"),
        ("reschedule_unknown", "00:00:00"), ("loglevel", "log_warning"), ("administrator_mail", user_name()),
        ("set_token_cmd", "none"), ("pag_cmd", "none"), ("token_extend_time", "none"), ("shepherd_cmd", "none"),
        ("qmaster_params", "none"), ("execd_params", "none"), ("reporting_params", "accounting=true"),
        ("finished_jobs", "0"), ("gid_range", "none"), ("qlogin_command", "builtin"),
        ("qlogin_daemon", "builtin"), ("rlogin_command", "builtin"), ("rlogin_daemon", "builtin"),
        ("rsh_command", "builtin"), ("rsh_daemon", "builtin"), ("max_aj_instances", "0"),
        ("max_aj_tasks", "1000000"), ("max_u_jobs", "0"), ("max_jobs", "0"), ("max_advance_reservations", "0"),
        ("auto_user_oticket", "0"), ("auto_user_fshare", "0"), ("auto_user_default_project", "none"),
        ("auto_user_delete_time", "0"), ("delegated_file_staging", "false"), ("reprioritize", "0"),
        ("jsv_url", "none"), ("jsv_allowed_mod", "ac,h,i,e,o,j,M,N,p,w")])


if __name__ == "__main__":
    raise SystemExit(main())
