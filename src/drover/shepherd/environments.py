"""Named environments: Altair Accelerator's firing sequence, steps 18 and 19, "The subtasker tries
to switch environment" and "executes the .pre. scripts of the environment", before the precmd
(step 20). A job asks for them with `drover submit --environment A+B`; drover.toml defines each
([environments.NAME]: `setup`, `post`).

Each one's setup is sourced by bash as the job's owner (as the job's own prolog runs: its working
directory, containment, limits and environment), after the site's prologs and before the job's
own prolog (precmd) and PE start; what it prints goes to the job's error file. The environment
bash is left with (`env -0`) becomes the job's and its methods': what the script exported,
changed or unset. A setup that cannot be sourced, or whose sourcing ends with a status other
than 0, fails the attempt: the job does not run, and the error names the environment. The
environments switch in the order given, each on top of the one before.

After the job's epilog (postcmd), each environment's `post` runs with bash, as the owner, in the
reverse order; their statuses go in the trace, not into the job's.
"""

from __future__ import annotations

import subprocess

from drover.records import EnvironmentRecord
from drover.shepherd.config import ShepherdConfig
from drover.shepherd.containment import Containment
from drover.shepherd.failure import StartFailure
from drover.shepherd.methods import Method
from drover.shepherd.processes import ProcessOptions, start
from drover.shepherd.signals import held_signals
from drover.shepherd.trace import Trace

# Sourced, its output to stderr; then the environment it leaves, NUL-separated.
SOURCE = '. "$1" >&2 || exit; exec env -0'
BASH_OWN = frozenset({"_", "SHLVL", "PWD", "OLDPWD"})  # what bash sets for itself: not the script's doing


class Switch:
    """The attempt's named environments: `due` says when to switch (once), `setup` switches,
    `post` runs their post scripts once the job's epilog is done."""

    def __init__(self, config: ShepherdConfig, trace: Trace) -> None:
        self.wanted: list[EnvironmentRecord] = list(config.environments)
        self.timeout_s = config.method_timeout_s
        self.trace = trace
        self.switched = False
        self.posted = False

    def __bool__(self) -> bool:
        return bool(self.wanted)

    def due(self, method: Method | None) -> bool:
        """Whether to switch now, before `method` (None: before the job): before the job's own
        prolog and PE start, after the site's prologs."""
        return bool(self.wanted) and not self.switched and (
            method is None or method.level == "job" or method.step == "pe_start")

    def setup(self, env: dict[str, str], options: ProcessOptions, containment: Containment) -> None:
        """Switch `env` in place (the options of the job's methods hold the same dict). Raises
        StartFailure when an environment cannot be switched to."""
        self.switched = True
        for wanted in self.wanted:
            name, script = wanted["name"], wanted["setup"]
            if wanted.get("unknown"):
                raise StartFailure(f"environment {name} is not defined in the controller's drover.toml")
            if not script:
                continue
            self.trace.step(f"environment {name} setup started")
            code, out = self._run(["/bin/bash", "-c", SOURCE, "drover-environment", script], options,
                                  containment, capture=True)
            self.trace.step(f"environment {name} setup exited {code}")
            if code != 0:
                raise StartFailure(f"the environment {name} setup exited with status {code}; the job did not run")
            switched = parse_env0(out)
            for key in [key for key in env if key not in switched and key not in BASH_OWN]:
                del env[key]
            env.update({key: value for key, value in switched.items() if key not in BASH_OWN})

    def post_due(self, method: Method | None) -> bool:
        """Whether the post scripts run now, before `method` (None: after every method): after
        PE stop and the job's epilog, before the queue's and the node's epilogs."""
        return self.switched and not self.posted and (method is None or method.level != "job"
                                                      and method.step != "pe_stop")

    def post(self, options: ProcessOptions, containment: Containment) -> None:
        self.posted = True
        for wanted in reversed(self.wanted):
            if not wanted["post"] or wanted.get("unknown"):
                continue
            self.trace.step(f"environment {wanted['name']} post started")
            code, _ = self._run(["/bin/bash", wanted["post"]], options, containment)
            self.trace.step(f"environment {wanted['name']} post exited {code}")

    def _run(self, argv: list[str], options: ProcessOptions, containment: Containment,
             capture: bool = False) -> tuple[int, bytes]:
        popen = options.with_output(subprocess.PIPE, options.stderr) if capture else options
        containment.enter()
        try:
            with held_signals():
                process = start(argv, popen)
        except OSError as error:
            return (127 if error.errno == 2 else 126), b""
        finally:
            containment.leave()
        try:
            out, _ = process.communicate(timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            out, _ = process.communicate()
            return 124, b""
        code = 128 - process.returncode if process.returncode < 0 else process.returncode
        return code, out or b""


def parse_env0(data: bytes) -> dict[str, str]:
    """`env -0`'s output: NAME=VALUE entries, each ended by a NUL."""
    found: dict[str, str] = {}
    for entry in data.split(b"\0"):
        name, sep, value = entry.partition(b"=")
        if sep and name:
            found[name.decode(errors="surrogateescape")] = value.decode(errors="surrogateescape")
    return found
