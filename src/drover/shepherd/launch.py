"""How the job's process starts: a command line without a shell in between, and a job of the
shepherd's own user without a fork of the shepherd.

1. A command line without bash.

`drover submit -- CMD ARGS...` stores the job as the one-line script `exec CMD ARGS...`, each
word quoted by shlex.quote (`qsub -b y CMD ARGS...` as the same line after `#!/bin/sh`, which bash
reads as a comment). Run by bash (GE: start_child), that line costs a whole bash start (about a
millisecond of CPU, a third of a /bin/true job) only to exec CMD. The shepherd recognises exactly that line and
execs CMD itself, with what bash would have added to the environment: PWD (the working
directory) and SHLVL (bash's `exec` gives the program the level bash was started with; 0 where
none was set).

Anything else is a script and runs under bash, as before; so does a command the direct start
cannot exec (not found, not executable, a file without #!): bash then says why in the job's
error file and exits 127 or 126, or runs the file as a shell script, exactly as it always did.
What bash alone would do with the environment is not done on the direct path: BASH_ENV is not
read (a non-interactive bash sources it before it runs its script).

2. A job of the shepherd's own user (a personal cluster; root's own jobs on a shared node) is
started with posix_spawn, which glibc does with a vfork: the shepherd's memory is not copied,
and no Python runs in the child. Popen cannot do that here: the signal reset between fork and
exec (signals.reset_for_exec) is a preexec_fn, which makes it fork the whole interpreter and run
Python in the child. posix_spawn does the same reset in C (every signal to its default, an empty
mask), puts the job in its own process group, and gives it stdin, stdout and stderr; it starts in
the working directory the shepherd enters through the owner's descriptor just before. A job that
runs as another user (a root shepherd switching to the owner) still goes through Popen, which
switches groups and user in C between fork and exec: posix_spawn cannot.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal

PREFIX = "exec "
# Words made of the characters shlex.quote never quotes, one space apart: the line reads back
# the same, and splitting it at its spaces is what shlex.split would do, at a tenth of the cost.
_PLAIN = re.compile(r"[\w@%+=:,./-]+(?: [\w@%+=:,./-]+)*", re.ASCII)
SHEBANGS = ("#!/bin/sh\n", "#!/bin/bash\n")  # a first line bash, running the file, skips as a comment


def command_of(script: bytes) -> list[str] | None:
    """The argv the script execs, if it is exactly a quoted `exec` line; None otherwise.
    The line must read back the same when its words are quoted again, so any word bash would
    expand, split or take as an option of `exec` (`-a`, `-c`, `-l`) keeps the script on bash."""
    try:
        text = script.decode()
    except UnicodeDecodeError:
        return None
    for shebang in SHEBANGS:
        text = text.removeprefix(shebang)
    if not text.startswith(PREFIX) or not text.endswith("\n") or text.count("\n") != 1:
        return None
    line = text[len(PREFIX):-1]
    if _PLAIN.fullmatch(line):  # words shlex.quote leaves as they are, one space apart: no parse
        words = line.split(" ")
        return None if words[0].startswith("-") else words
    try:
        words = shlex.split(line)
    except ValueError:  # an unterminated quote: bash's to report
        return None
    if not words or words[0].startswith("-") or " ".join(shlex.quote(word) for word in words) != line:
        return None
    return words


def environment(env: dict[str, str], workdir: str) -> dict[str, str]:
    """The job's environment as bash would have handed it on through `exec`."""
    return {**env, "PWD": workdir, "SHLVL": env.get("SHLVL", "0")}


_ALL_SIGNALS = tuple(int(signum) for signum in signal.valid_signals()
                     if signum not in (signal.SIGKILL, signal.SIGSTOP))


def spawn_as_self(argv: list[str], env: dict[str, str], workdir_fd: int, stdout: int, stderr: int) -> int:
    """Start the job as the shepherd's own user (see 2. above); its pid. The executable is found
    on the job's PATH, as exec would; an OSError says why it could not start."""
    executable = argv[0] if "/" in argv[0] else shutil.which(argv[0], path=env.get("PATH", os.defpath))
    if executable is None:
        raise FileNotFoundError(2, "No such file or directory", argv[0])
    devnull = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    os.fchdir(workdir_fd)
    try:
        return os.posix_spawn(
            executable, argv, env,
            file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, stdout, 1),
                          (os.POSIX_SPAWN_DUP2, stderr, 2)],
            setpgroup=0, setsigmask=(), setsigdef=_ALL_SIGNALS,
        )
    finally:
        os.chdir("/")
        os.close(devnull)
