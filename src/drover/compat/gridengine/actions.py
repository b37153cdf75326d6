"""qdel, qhold, qrls: Grid Engine's words around Drover's cancel, hold and release.
Array tasks are JOB.TASK, as in Grid Engine."""

from __future__ import annotations

import os
import pwd
import sys

from drover.core.errors import DroverError

MESSAGES = {
    "cancel": "{user} has registered the job {ref} for deletion",
    "hold": "modified hold of job {ref}",
    "release": "modified hold of job {ref}",
}


def _act(prog: str, action: str, argv: list[str]) -> int:
    refs = [word for word in argv if not word.startswith("-")]
    if not refs:
        print(f"{prog}: no job id given", file=sys.stderr)
        return 1
    user = pwd.getpwuid(os.getuid()).pw_name
    try:
        from drover.client.client import Client

        with Client() as client:
            results = client.action_json(action, refs)
    except DroverError as error:
        print(f"{prog}: {error}", file=sys.stderr)
        return 1
    status = 0
    for result in results:
        if result["ok"]:
            print(MESSAGES[action].format(user=user, ref=result["ref"]))
        elif "does not exist" in result["message"] or "has already ended" in result["message"]:
            print(f'denied: job "{result["ref"]}" does not exist', file=sys.stderr)
            status = 1
        else:
            print(f"{prog}: {result['message']}", file=sys.stderr)
            status = 1
    return status


def qdel(argv: list[str] | None = None) -> int:
    return _act("qdel", "cancel", list(sys.argv[1:] if argv is None else argv))


def qhold(argv: list[str] | None = None) -> int:
    return _act("qhold", "hold", list(sys.argv[1:] if argv is None else argv))


def qrls(argv: list[str] | None = None) -> int:
    return _act("qrls", "release", list(sys.argv[1:] if argv is None else argv))
