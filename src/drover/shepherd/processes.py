"""How the shepherd starts the attempt's processes other than the job: the job's own methods and
the site's (methods.py), the named environments' scripts (environments.py), the queue's suspend,
resume and terminate commands (control.py) and the checkpoint commands (checkpoint.py).

Each is started by `start`, with its arguments from one typed ProcessOptions: on /dev/null, in a
process group of its own (the shepherd ends it with its group), with every signal back to its
default, no descriptor but its three, and the owner's ids, working directory, environment and
set-up its options give. Typed arguments, not a dict splatted into Popen: the type checker sees
each of them.
"""

from __future__ import annotations

import dataclasses
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ProcessOptions:
    cwd: str
    env: Mapping[str, str] | None  # None: the shepherd's own
    stdout: int  # a descriptor, or subprocess.DEVNULL or PIPE
    stderr: int
    preexec_fn: Callable[[], None] | None = None  # in the child, after the fork, before the exec
    user: int | None = None  # the owner's ids (identity.Identity.popen_ids), or None: the shepherd's own
    group: int | None = None
    extra_groups: list[int] | None = None

    def with_output(self, stdout: int, stderr: int) -> ProcessOptions:
        return dataclasses.replace(self, stdout=stdout, stderr=stderr)


def start(argv: Sequence[str], options: ProcessOptions) -> subprocess.Popen[bytes]:
    """Start `argv` with `options`; OSError when it cannot be started."""
    return subprocess.Popen(
        list(argv), cwd=options.cwd, env=options.env, stdin=subprocess.DEVNULL, stdout=options.stdout,
        stderr=options.stderr, close_fds=True, process_group=0, restore_signals=True,
        preexec_fn=options.preexec_fn, user=options.user, group=options.group, extra_groups=options.extra_groups,
    )
