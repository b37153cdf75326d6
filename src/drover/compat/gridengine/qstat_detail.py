"""`qstat -j`: one job in detail, as cull_show_job() (source/clients/common/show_job.c) prints
it, and its `-xml` form, the detailed_job_info document. Pure."""

from __future__ import annotations

from xml.sax.saxutils import escape

from drover.compat.gridengine.common import ctime, queue_name, task_state
from drover.compat.gridengine.qstat_view import RUNNING, XMLNS, array_indices, task_ranges
from drover.compat.gridengine.values import hms

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.protocol.api import JobInfo

# Drover's file-name patterns in Grid Engine's words.
PSEUDO = (("%%", "\0"), ("%j", "$JOB_ID"), ("%A", "$JOB_ID"), ("%a", "$TASK_ID"), ("%x", "$JOB_NAME"),
          ("%u", "$USER"), ("%N", "$HOSTNAME"), ("\0", "%"))
# JAT_status bits of sgeobj/sge_job.h: JRUNNING, JSUSPENDED, JTRANSFERING, JIDLE.
JAT_STATUS = {"r": 128, "s": 256, "S": 256, "sS": 256, "t": 64}


def ge_path(pattern: str) -> str:
    for drover, ge in PSEUDO:
        pattern = pattern.replace(drover, ge)
    return pattern


def _resources(job: JobInfo) -> str:
    parts = []
    if job.time_limit_s is not None:
        parts.append(f"h_rt={job.time_limit_s}")
    if job.memory_mib:
        parts.append(f"h_vmem={-(-job.memory_mib // max(job.cpus, 1))}M")  # per slot, as requested
    return ",".join(parts)


def fields(job: JobInfo, uid: int | None, gid: int | None, group: str | None) -> list[tuple[str, str]]:
    """The job's `key: value` lines, in show_job.c's order; what Drover does not have is left out."""
    rows: list[tuple[str, str | None]] = [
        ("job_number", str(job.id)), ("exec_file", f"job_scripts/{job.id}"),
        ("submission_time", ctime(job.submitted_at)), ("owner", job.owner),
        ("uid", None if uid is None else str(uid)), ("group", group), ("gid", None if gid is None else str(gid)),
        ("sge_o_workdir", job.submit_dir or None), ("account", "sge"), ("cwd", job.workdir or None),
        ("stderr_path_list", f"NONE:NONE:{ge_path(job.error)}" if job.error else None),
        ("merge", "y" if job.error is None else None), ("hard resource_list", _resources(job) or None),
        ("notify", "TRUE" if job.notify else "FALSE"), ("job_name", job.name),
        ("stdout_path_list", f"NONE:NONE:{ge_path(job.output)}"), ("jobshare", "0"),
        ("hard_queue_list", queue_name(job) if job.queue != "default" else None),
        ("priority", str(job.priority)),
        ("parallel environment", f"{job.pe or 'smp'} range: {job.cpus}" if job.cpus > 1 or job.pe else None),
        ("jid_predecessor_list (req)", ",".join(str(d) for d in _predecessors(job, False)) or None),
        ("ja_ad_predecessor_list (req)", ",".join(str(d) for d in _predecessors(job, True)) or None),
        ("job-array tasks", task_ranges(array_indices(job.array)) if job.array else None),
    ]
    return [(key, value) for key, value in rows if value is not None]


def text(job: JobInfo, uid: int | None = None, gid: int | None = None, group: str | None = None) -> str:
    """One job's block: the `=` rule, its fields, usage of its running tasks, scheduling info."""
    lines = ["=" * 62]
    lines += [f"{key + ':':<28}{value}" for key, value in fields(job, uid, gid, group)]
    for task in sorted(job.tasks, key=lambda t: t.index):
        state = task_state(task)
        attempt = task.attempts[-1] if task.attempts else None
        if state in RUNNING and attempt is not None:
            index = task.index if job.array else 1
            lines.append(f"{'exec_host_list ' + str(index) + ':':<28}{attempt.node}:{job.cpus}")
            usage = attempt.usage
            cpu = int((usage.user_cpu_s + usage.sys_cpu_s) if usage else 0)
            maxvmem = f"{usage.max_rss_kib / 1024:.3f}M" if usage and usage.max_rss_kib else "N/A"
            lines.append(f"usage {index:4d}:                 cpu={hms(cpu)}, mem=0.00000 GBs, io=0.00000, vmem=N/A, "
                         f"maxvmem={maxvmem}")
    if job.pending_explanation and job.state in ("pending", "held"):
        lines.append(f"{'scheduling info:':<28}{job.pending_explanation}")
    return "\n".join(lines) + "\n"


def not_found(refs: list[str]) -> str:
    """What qstat -j prints on stderr when none of the jobs exists (and then exits 1)."""
    return "Following jobs do not exist: \n" + ", ".join(refs) + "\n"


def _element(name: str, value: object, depth: int) -> str:
    return f"{'  ' * depth}<{name}>{escape(str(value))}</{name}>"


def xml(jobs: list[JobInfo], uid: int | None = None, gid: int | None = None, group: str | None = None) -> str:
    """`qstat -j ... -xml`: the jobs as CULL elements in a detailed_job_info document."""
    out = ["<?xml version='1.0'?>", f'<detailed_job_info  xmlns:xsd="{XMLNS}">', "  <djob_info>"]
    for job in jobs:
        out.append("    <element>")
        for name, value in (("JB_job_number", job.id), ("JB_ar", 0), ("JB_exec_file", f"job_scripts/{job.id}"),
                            ("JB_submission_time", int(job.submitted_at)), ("JB_owner", job.owner),
                            ("JB_uid", uid), ("JB_group", group), ("JB_gid", gid), ("JB_account", "sge"),
                            ("JB_cwd", job.workdir or None), ("JB_notify", "true" if job.notify else "false"), ("JB_job_name", job.name),
                            ("JB_jobshare", 0), ("JB_priority", job.priority + 1024)):
            if value is not None:
                out.append(_element(name, value, 3))
        for tag, path in (("JB_stdout_path_list", job.output), ("JB_stderr_path_list", job.error)):
            if path:
                out += [f"      <{tag}>", "        <path_list>", _element("PN_path", ge_path(path), 5),
                        "          <PN_host></PN_host>", "          <PN_file_host></PN_file_host>",
                        "          <PN_file_staging>false</PN_file_staging>", "        </path_list>", f"      </{tag}>"]
        out.append(_element("JB_merge_stderr", "true" if job.error is None else "false", 3))
        running = [t for t in job.tasks if task_state(t) in RUNNING and t.attempts]
        if running:
            out.append("      <JB_ja_tasks>")
            for task in running:
                attempt = task.attempts[-1]
                out += ["        <ulong_sublist>", _element("JAT_status", JAT_STATUS.get(task_state(task) or "", 128), 5),
                        _element("JAT_task_number", task.index if job.array else 1, 5),
                        _element("JAT_start_time", int(attempt.started_at or attempt.dispatched_at), 5),
                        "          <JAT_granted_destin_identifier_list>", "            <element>",
                        _element("JG_qname", f"{queue_name(job)}@{attempt.node}", 7),
                        _element("JG_qhostname", attempt.node, 7), _element("JG_slots", job.cpus, 7),
                        "            </element>", "          </JAT_granted_destin_identifier_list>",
                        "        </ulong_sublist>"]
            out.append("      </JB_ja_tasks>")
        indices = array_indices(job.array) if job.array else [1]
        step = indices[1] - indices[0] if len(indices) > 1 else 1
        out += ["      <JB_ja_structure>", "        <task_id_range>", _element("RN_min", indices[0], 5),
                _element("RN_max", indices[-1], 5), _element("RN_step", step, 5), "        </task_id_range>",
                "      </JB_ja_structure>"]
        if _predecessors(job, False):
            out.append("      <JB_jid_predecessor_list>")
            for predecessor in _predecessors(job, False):
                out += ["        <job_predecessors>", _element("JRE_job_number", predecessor, 5),
                        "        </job_predecessors>"]
            out.append("      </JB_jid_predecessor_list>")
        out.append("    </element>")
    out += ["  </djob_info>", "  <messages>", "    <element>", "      <SME_global_message_list>",
            "        <element>", "          <MES_message_number>0</MES_message_number>",
            "          <MES_message>(Collecting of scheduler job information is turned off)</MES_message>",
            "        </element>", "      </SME_global_message_list>", "    </element>", "  </messages>",
            "</detailed_job_info>"]
    return "\n".join(out) + "\n"


def xml_not_found(refs: list[str]) -> str:
    """`qstat -j N -xml` for jobs none of which exists: Grid Engine's unknown_jobs document, with
    its nameless elements."""
    out = ["<?xml version='1.0'?>", f'<unknown_jobs  xmlns:xsd="{XMLNS}">']
    for ref in refs:
        out += ["  <>", _element("ST_name", ref, 2), "  </>"]
    return "\n".join([*out, "</unknown_jobs>"]) + "\n"


def _predecessors(job: JobInfo, per_task: bool) -> list[int]:
    """The jobs it waits for (-hold_jid, or -hold_jid_ad with `per_task`), of any kind."""
    return sorted({d.job for d in job.dependencies if d.kind != "singleton" and d.per_task == per_task})
