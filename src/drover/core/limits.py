"""What one request, and one user, may ask of a cluster: every limit in one place. Pure.

Two kinds:
- bounds (module constants): what the store and the kernel can hold at all. An id beyond a
  signed 64-bit integer, an array index beyond 2^31 - 1, a time limit of 10^37 days are not
  requests anyone means; they are refused at once, before anything changes.
- limits (`Limits`): what a shared cluster allows one user, so that no one starves the others.
  Each has a key in ``[controller]`` of drover.toml (read by drover.config_schema, which takes
  its defaults from here), and every refusal names the limit and its key, so the user knows
  what to ask the operator for.

The CLI checks what it can early, for a friendly message; the controller checks everything, and
its answer is the truth.
"""

from __future__ import annotations

from drover.core.errors import BadRequest

MAX_ID = 2**63 - 1  # job ids and sequence numbers: SQLite's (and PostgreSQL's) bigint
MAX_INDEX = 2**31 - 1  # array indices and %max: Grid Engine's and Slurm's bound
MAX_CPUS = 1 << 20
MAX_MEMORY_MIB = 1 << 40  # an exbibyte
MAX_TIME_LIMIT_S = 100 * 365 * 24 * 3600  # a century: "no limit" is spelt by giving none
PRIORITY_RANGE = range(-1023, 1024)  # Grid Engine's -p range; above 0 for operators only
MIB = 1024 * 1024
MAX_PIDS = 1 << 22  # a process limit: Linux's largest pid_max


class Limits:
    """The per-request and per-user limits of a cluster; the defaults suit a shared machine.
    (A plain class, not a dataclass: `drover submit` imports this, and dataclasses costs it
    15 ms of start-up.)"""

    max_request_bytes = 32 * MIB  # one HTTP request body (stage-in files travel in it)
    max_jobs_per_request = 100_000
    max_pending_jobs_per_user = 100_000  # waiting or held jobs of one user (Slurm's MaxSubmitJobs)
    max_pending_tasks_per_user = 10_000_000  # their array tasks, all counted
    max_array_size = 1_000_000  # tasks of one array (Slurm's MaxArraySize, GE's max_aj_tasks)
    max_name_bytes = 1024  # a job's name
    max_path_bytes = 4096  # each path: working directory, output, error, event log, staged names
    max_env_vars = 10_000  # variables in a job's environment
    max_env_bytes = 4 * MIB  # their names and values together
    max_script_bytes = 4 * MIB
    max_stage_in_bytes = 16 * MIB  # per job; the files travel through the controller
    # The scripts, environments and staged-in files of one user's unfinished jobs, together: what
    # the store holds for them (an array's tasks share their job's).
    max_job_bytes_per_user = 1024 * MIB
    max_stage_out_bytes = 64 * MIB  # per attempt: what the controller keeps of the files a job stages out

    KEYS = ("max_request_bytes", "max_jobs_per_request", "max_pending_jobs_per_user",
            "max_pending_tasks_per_user", "max_array_size", "max_name_bytes", "max_path_bytes",
            "max_env_vars", "max_env_bytes", "max_script_bytes", "max_stage_in_bytes", "max_job_bytes_per_user",
            "max_stage_out_bytes")

    def __init__(self, **values: int) -> None:
        for key, value in values.items():
            if key not in self.KEYS:
                raise TypeError(f"no limit named {key}")
            setattr(self, key, value)


def refuse(what: str, limit: int, key: str, unit: str = "") -> BadRequest:
    """The refusal of something over a limit: what, the limit, and the key that sets it."""
    amount = f"{limit // MIB} MiB" if unit == "bytes" and limit % MIB == 0 else f"{limit}{' ' + unit if unit else ''}"
    return BadRequest(f"{what} is over this cluster's limit of {amount} ({key} in [controller] of drover.toml)")


def bounded(value: int, low: int, high: int, what: str) -> int:
    """`value` if low <= value <= high, else a refusal naming it and the range."""
    if not low <= value <= high:
        raise BadRequest(f"{what} must be between {low} and {high}, not {value}")
    return value


def ascii_int(text: str, what: str, high: int = MAX_ID) -> int:
    """A non-negative whole number written in ASCII digits only (int() also takes '٣', '1_0' and
    ' 7'), at most `high`."""
    if not text or not text.isascii() or not text.isdigit():
        raise BadRequest(f"{what} must be a number, not {text!r}")
    if len(text) > len(str(high)) or int(text) > high:
        raise BadRequest(f"{what} must be at most {high}, not {text}")
    return int(text)
