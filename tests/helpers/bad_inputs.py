"""The bad-input corpus (tests/data/bad_inputs.tsv): reading its cases, and running one as a
user would, as a real process against a real cluster, or as a raw HTTP request on its socket.

A case is one line of four tab-separated columns:

    command     words as a shell splits them. The first is `drover`, a front end (`sbatch`,
                `qsub`...), or `api` followed by a method and a path. Leading NAME=VALUE words
                are set in the command's environment. `{held}` and `{ended}` stand for the ids of
                a held job and an ended one that the cluster has when the corpus runs.
    input       `-` for none; `script:TEXT` is written to `case.sh` in the working directory
                (the command names it), `file:PATH:TEXT` to PATH there; `stdin:TEXT` is the
                standard input. For `api`: `body:TEXT` is the request body, `body-of-size:N` a
                JSON body padded to N bytes, `claimed-length:N` no body but a Content-Length
                header that claims N bytes.
    status      the exit status expected (the real command's, for a front end); for `api`, the
                HTTP status.
    fragment    text the error must hold: on stderr, or in an `api` reply's `error`.

TEXT, words and fragments take backslash escapes (`\\n`, `\\t`, `\\x00`, `\\u0663`), so the file
stays ASCII and one case stays one line. Lines starting with `#` and blank lines are skipped.
"""

from __future__ import annotations

import codecs
import http.client
import shlex
import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

SCRIPT_NAME = "case.sh"
INPUT_KINDS = ("script", "file", "stdin", "body", "body-of-size", "claimed-length")


@dataclass(frozen=True)
class Case:
    line: int
    words: list[str]
    env: dict[str, str] = field(default_factory=dict)
    input_kind: str = ""  # "" or one of INPUT_KINDS
    input_text: str = ""
    status: int = 1
    fragment: str = ""

    @property
    def id(self) -> str:
        return f"L{self.line}:" + " ".join(self.words)[:60]

    @property
    def is_api(self) -> bool:
        return self.words[0] == "api"


def unescape(text: str) -> str:
    return codecs.decode(text, "unicode_escape") if "\\" in text else text


def split_words(command: str) -> list[str]:
    """Words as a shell splits them, but with backslashes kept for `unescape`."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=False)
    lexer.whitespace_split, lexer.escape = True, ""
    return list(lexer)


def load_cases(path: Path) -> list[Case]:
    cases = []
    for number, raw in enumerate(path.read_text(encoding="ascii").splitlines(), start=1):
        if not raw.strip() or raw.startswith("#"):
            continue
        columns = raw.split("\t")
        if len(columns) != 4:
            raise ValueError(f"{path}:{number}: {len(columns)} columns, not 4 (command, input, status, fragment)")
        command, given, status, fragment = columns
        words = [unescape(word) for word in split_words(command)]
        env = {}
        while words and "=" in words[0] and words[0].split("=", 1)[0].isidentifier():
            name, _, value = words.pop(0).partition("=")
            env[name] = value
        kind, text = ("", "") if given == "-" else given.split(":", 1)
        if kind not in ("", *INPUT_KINDS) or (kind == "file" and ":" not in text):
            raise ValueError(f"{path}:{number}: unknown input {given!r}")
        if not fragment:
            raise ValueError(f"{path}:{number}: a case needs the message fragment it expects")
        cases.append(Case(number, words, env, kind, unescape(text), int(status), unescape(fragment)))
    return cases


def substitute(words: list[str], values: dict[str, str]) -> list[str]:
    out = []
    for word in words:
        for name, value in values.items():
            word = word.replace("{" + name + "}", value)
        out.append(word)
    return out


@dataclass(frozen=True)
class Outcome:
    status: int
    message: str  # stderr, or an API reply's body
    stdout: str = ""


def run_command(case: Case, argv: list[str], env: dict[str, str], workdir: Path) -> Outcome:
    """The case's command as a real process in `workdir`; `argv[0]` is already a path."""
    stdin = None
    if case.input_kind in ("script", "file"):
        name, text = (SCRIPT_NAME, case.input_text) if case.input_kind == "script" else case.input_text.split(":", 1)
        (workdir / name).parent.mkdir(parents=True, exist_ok=True)
        (workdir / name).write_text(text)
    elif case.input_kind == "stdin":
        stdin = case.input_text
    result = subprocess.run(argv, capture_output=True, text=True, input=stdin, cwd=workdir,
                            env={**env, **case.env}, timeout=60,
                            stdin=subprocess.DEVNULL if stdin is None else None)
    return Outcome(result.returncode, result.stderr, result.stdout)


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str) -> None:
        super().__init__("drover", timeout=60)
        self.socket_path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.socket_path)


def request_body(case: Case, values: dict[str, str]) -> bytes | None:
    if case.input_kind == "body":
        return substitute([case.input_text], values)[0].encode("utf-8", "surrogatepass")
    if case.input_kind == "body-of-size":
        size = int(case.input_text)
        return b'{"jobs": []' + b" " * (size - 12) + b"}"
    if case.input_kind == "claimed-length":
        return b""
    return None


def call_api(case: Case, socket_path: str, values: dict[str, str]) -> Outcome:
    """The case's request, sent as it is written (no client in between), over the Unix socket."""
    method, path = case.words[1], substitute(case.words[2:3], values)[0]
    body = request_body(case, values)
    connection = _UnixConnection(socket_path)
    try:
        # skip_accept_encoding: the request holds only what the case says, and Host.
        connection.putrequest(method, path, skip_accept_encoding=True)
        if body is not None:
            connection.putheader("Content-Type", "application/json")
            claimed = case.input_text if case.input_kind == "claimed-length" else str(len(body))
            connection.putheader("Content-Length", claimed)
        connection.endheaders()
        if body is not None:
            try:
                connection.send(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # refused before it was all read (over the size limit): the answer says why
        reply = connection.getresponse()
        return Outcome(reply.status, reply.read().decode("utf-8", "replace"))
    finally:
        connection.close()


def split_command(case: Case) -> tuple[str, list[str]]:
    return case.words[0], case.words[1:]


def describe(case: Case, outcome: Outcome) -> str:
    return (f"line {case.line}: {shlex.join(case.words)}\nexit {outcome.status}\n"
            f"stderr/reply: {outcome.message}\nstdout: {outcome.stdout}")
