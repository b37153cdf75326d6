"""The starter method: a command the site configures to start every batch job in its place
(Grid Engine's queue_conf(5) `starter_method`; Altair Accelerator's `vovtasker -E`, step 3 of its
firing sequence, "change command line of command to execute to vovfire $JOBID ...").

`[queues.NAME] starter_method` for the jobs of one queue, `[execd] starter_method` for every job
of a node; the queue's wins where both are set. It is the job's process: it runs as the job's
owner, in the job's working directory, containment, limits and environment, and is given what
the shepherd would otherwise have run, as its arguments:

  a job script        STARTER SCRIPT, with SGE_STARTER_SHELL_PATH=/bin/bash (the shell that
                      would have run it) and SGE_STARTER_SHELL_START_MODE=posix_compliant (the
                      shell is given the script as its argument), as Grid Engine's shepherd does
  a command line      STARTER CMD ARGS..., with SGE_STARTER_SHELL_PATH="" and
                      SGE_STARTER_SHELL_START_MODE=unix_behavior: no shell would have run it
                      (Grid Engine's qrsh starter sets the same for a command)

SGE_STARTER_USE_LOGIN_SHELL is not set: Drover starts no login shells. As in Grid Engine the
starter starts the job only, not the prolog, epilog or PE methods, and not an interactive job
(`drover run --pty`). Its exit status is the job's.
"""

from __future__ import annotations

from drover.shepherd.config import ShepherdConfig

SHELL = "/bin/bash"


def starter_of(config: ShepherdConfig) -> str | None:
    """The attempt's starter method, if one applies: the queue's, else the node's."""
    if config.job["pty"]:
        return None
    for command in (config.queue_starter_method, config.starter_method):
        if command is not None and command.strip():
            return command
    return None


def wrap(starter: str | None, argv: list[str], env: dict[str, str],
         is_command_line: bool) -> tuple[list[str], dict[str, str]]:
    """The argv and environment that start the job through `starter`, or as they are without one."""
    if starter is None:
        return argv, env
    if is_command_line:
        return [starter, *argv], {**env, "SGE_STARTER_SHELL_PATH": "",
                                  "SGE_STARTER_SHELL_START_MODE": "unix_behavior"}
    return [starter, *argv[1:]], {**env, "SGE_STARTER_SHELL_PATH": argv[0],
                                  "SGE_STARTER_SHELL_START_MODE": "posix_compliant"}
