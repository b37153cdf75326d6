"""The submit description language of condor_submit, on plain data: commands (`key = value`,
`+Attr = value`, `MY.Attr = value`), comments, `\\` continuations, `queue` statements and the
macros expanded in each job of them.

    queue [N]
    queue [N] VAR[,VAR...] in|from|matching ...
        in (a b c)           in (one item per line, up to the closing parenthesis)
        from FILE            from ( one item per line )
        matching [files|dirs] GLOB...

Macros: `$(name)` (a command of the file, or Cluster/ClusterId, Process/ProcId, Step,
ItemIndex, Row, Item and the queue's variables), `$(name:default)`, `$ENV(NAME)`, and
`$F(name)` with its letters (`$Fn`, `$Fx`, `$Fp`, `$Fd`, `$Fq`...: the name, extension,
directory of a path; `$F()` alone strips quotes). An undefined macro is empty, as condor_submit
makes it.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

BUILTINS = ("cluster", "clusterid", "process", "procid", "step", "itemindex", "row", "node")
_QUEUE = re.compile(r"^queue\b(.*)$", re.IGNORECASE | re.DOTALL)


class SubmitFileError(ValueError):
    """What condor_submit says of a submit file it cannot read (`ERROR: on Line 3 of submit file: ...`)."""


@dataclass(frozen=True)
class Queue:
    line: int
    count: int
    variables: tuple[str, ...]
    items: tuple[str, ...] | None  # None: a plain `queue N`


@dataclass
class Statement:
    line: int
    key: str  # lower case; custom attributes as `my.name`
    spelled: str  # as written: `+DaskWorkerName`, `RequestMemory`
    value: str


@dataclass
class SubmitFile:
    statements: list[Statement | Queue] = field(default_factory=list)


@dataclass(frozen=True)
class Proc:
    """One job (proc) of the cluster: each command's value, macros expanded."""

    process: int
    item_index: int
    step: int
    values: dict[str, str]  # lower-case key → expanded value
    spelled: dict[str, str]  # lower-case key → the key as written (custom attributes' case)

    def get(self, key: str, default: str = "") -> str:
        return self.values.get(key.lower(), default)

    def has(self, key: str) -> bool:
        return key.lower() in self.values


def logical_lines(text: str) -> list[tuple[int, str]]:
    """(line number, text): continuations joined, comments and blank lines dropped."""
    out: list[tuple[int, str]] = []
    pending, start = "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if not pending and line.lstrip().startswith("#"):
            continue
        if line.endswith("\\"):
            if not pending:
                start = number
            pending += line[:-1]
            continue
        if pending:
            line, number = pending + line, start
            pending = ""
        if line.strip():
            out.append((number, line.strip()))
    if pending.strip():
        out.append((start, pending.strip()))
    return out


def parse(text: str, read_file: Callable[[str], str] | None = None) -> SubmitFile:
    """The file's statements in order. `read_file(path)`: the items of `queue ... from FILE`."""
    submit = SubmitFile()
    lines = logical_lines(text)
    i = 0
    while i < len(lines):
        number, line = lines[i]
        i += 1
        match = _QUEUE.match(line)
        if match is not None and (not match.group(1) or match.group(1)[0] in " \t"):
            rest = match.group(1).strip()
            if rest.endswith("(") or (re.search(r"\b(in|from)\s*\($", rest, re.IGNORECASE)):
                body: list[str] = []
                while i < len(lines) and lines[i][1] != ")":
                    body.append(lines[i][1])
                    i += 1
                if i >= len(lines):
                    raise SubmitFileError(f"ERROR: on Line {number} of submit file: queue list has no closing )")
                i += 1
                rest = rest[:-1].rstrip() + " (\n" + "\n".join(body) + "\n)"
            submit.statements.append(_queue(number, rest, read_file))
            continue
        key, equals, value = line.partition("=")
        if not equals:
            raise SubmitFileError(f"ERROR: on Line {number} of submit file: \nSubmit file has a bad line: {line}")
        spelled = key.strip()
        if spelled.startswith("+"):
            spelled = spelled[1:]
            lowered = "my." + spelled.lower()
        else:
            lowered = spelled.lower()
            if lowered.startswith("my."):
                spelled = spelled[3:]
        if not re.fullmatch(r"[a-z_][a-z0-9_.]*", lowered):
            raise SubmitFileError(f"ERROR: on Line {number} of submit file: \nSubmit file has a bad line: {line}")
        submit.statements.append(Statement(number, lowered, spelled, value.strip()))
    return submit


def _queue(number: int, rest: str, read_file: Callable[[str], str] | None) -> Queue:
    def bad(why: str) -> SubmitFileError:
        return SubmitFileError(f"ERROR: on Line {number} of submit file: {why}")

    count = 1
    first = re.match(r"^(\d+)(?:\s+|$)", rest)
    if first is not None:
        count, rest = int(first.group(1)), rest[first.end():]
    elif rest and not re.match(r"^[A-Za-z_]", rest):
        raise bad(f"invalid Queue statement: {rest}")
    if not rest:
        return Queue(number, count, (), None)
    match = re.match(r"^(?P<vars>[A-Za-z_][A-Za-z0-9_.]*(?:\s*,\s*[A-Za-z_][A-Za-z0-9_.]*)*\s+)?"
                     r"(?P<how>in|from|matching)\b\s*(?P<what>.*)$", rest, re.IGNORECASE | re.DOTALL)
    if match is None:
        raise bad(f"invalid Queue statement: {rest}")
    variables = tuple(v.strip() for v in (match.group("vars") or "Item").split(",")) or ("Item",)
    how, what = match.group("how").lower(), match.group("what").strip()
    if how == "matching":
        words = what.split()
        kind = ""
        if words and words[0].lower() in ("files", "dirs"):
            kind, words = words[0].lower(), words[1:]
        if not words:
            raise bad("queue matching: no pattern")
        found: list[str] = []
        for pattern in words:
            for path in sorted(glob.glob(pattern)):
                if kind == "files" and not os.path.isfile(path) or kind == "dirs" and not os.path.isdir(path):
                    continue
                if path not in found:
                    found.append(path)
        return Queue(number, count, variables, tuple(found))
    if what.startswith("("):
        if not what.endswith(")"):
            raise bad(f"queue {how}: the list has no closing )")
        inner = what[1:-1]
        items = [item for item in (inner.splitlines() if "\n" in inner else _split_list(inner)) if item.strip()]
    elif how == "from":
        if read_file is None:
            raise bad(f"queue from {what}: no file can be read here")
        try:
            items = [line for line in read_file(what).splitlines() if line.strip() and not line.lstrip().startswith("#")]
        except OSError as error:
            raise bad(f"queue from {what}: {error.strerror}") from None
    else:
        items = _split_list(what)
    return Queue(number, count, variables, tuple(item.strip() for item in items))


def _split_list(text: str) -> list[str]:
    return [item for item in re.split(r"[\s,]+", text.strip()) if item]


def _item_values(variables: tuple[str, ...], item: str) -> dict[str, str]:
    """An item's values for the queue's variables: split on commas or spaces, the last one takes
    the rest of the line."""
    if len(variables) == 1:
        return {variables[0].lower(): item}
    parts = re.split(r"[\s,]+", item.strip(), maxsplit=len(variables) - 1)
    parts += [""] * (len(variables) - len(parts))
    return {name.lower(): value for name, value in zip(variables, parts, strict=True)}


def procs(submit: SubmitFile, cluster: str, environ: Mapping[str, str],
          extra_before: Sequence[tuple[str, str]] = (), append: Sequence[str] = (),
          process_token: str | None = None) -> list[Proc]:
    """Every job the file queues, in order, numbered from 0. `extra_before`: command-line
    `key=value`s, as if at the top of the file; `append` (-append): commands just before each
    queue statement (a `queue` of its own when the file has none). `process_token`: what
    $(Process) expands to, in place of the number (to see which values differ by it alone)."""
    statements: list[Statement | Queue] = [Statement(0, k.lower(), k, v) for k, v in extra_before]
    appended = parse("\n".join(append)).statements if append else []
    appended_queue = [s for s in appended if isinstance(s, Queue)]
    appended_sets = [s for s in appended if isinstance(s, Statement)]
    has_queue = any(isinstance(s, Queue) for s in submit.statements)
    for statement in submit.statements:
        if isinstance(statement, Queue):
            statements += appended_sets
        statements.append(statement)
    if not has_queue:
        statements += [*appended_sets, *appended_queue]
    raw: dict[str, str] = {}
    spelled: dict[str, str] = {}
    out: list[Proc] = []
    for statement in statements:
        if isinstance(statement, Statement):
            raw[statement.key] = statement.value
            spelled[statement.key] = statement.spelled
            continue
        items: tuple[str, ...] = statement.items if statement.items is not None else ("",)
        for index, item in enumerate(items):
            for step in range(statement.count):
                local = dict(raw)
                if statement.items is not None:
                    local.update(_item_values(statement.variables, item))
                process = process_token if process_token is not None else str(len(out))
                builtins = {"cluster": cluster, "clusterid": cluster, "process": process,
                            "procid": process, "step": str(step), "itemindex": str(index),
                            "row": str(index), "node": "#pArAlLeLnOdE#"}
                local.update(builtins)
                values = {key: expand(value, local, environ) for key, value in raw.items()}
                out.append(Proc(len(out), index, step, values, dict(spelled)))
    return out


_MACRO = re.compile(r"\$(ENV|F[a-zA-Z]*|INT|REAL|)\(([^()]*)\)")


def expand(text: str, values: Mapping[str, str], environ: Mapping[str, str], depth: int = 0) -> str:
    """`text` with its macros replaced; a macro's own value is expanded in turn."""
    if depth > 32:
        raise SubmitFileError(f"ERROR: the macros of {text!r} refer to themselves")

    def replace(match: re.Match[str]) -> str:
        kind, body = match.group(1), match.group(2)
        if kind == "ENV":
            name, _, default = body.partition(":")
            return environ.get(name, default)
        name, colon, default = body.partition(":")
        key = name.strip().lower()
        if key in values:
            value = expand(values[key], values, environ, depth + 1)
        elif colon:
            value = default
        else:
            value = ""
        if kind.startswith("F"):
            return _filename(kind[1:], value)
        if kind == "INT":
            try:
                return str(int(float(value)))
            except ValueError:
                return value
        if kind == "REAL":
            try:
                return str(float(value))
            except ValueError:
                return value
        return value

    previous = None
    while previous != text:
        previous, text = text, _MACRO.sub(replace, text)
    return text


def _filename(letters: str, value: str) -> str:
    """$F's letters: p the directory, d the parent's name, n the name without its extension,
    x the extension, q quoted; none strips quotes."""
    value = value.strip().strip('"')
    if not letters:
        return value
    directory, base = os.path.split(value)
    name, extension = os.path.splitext(base)
    out = ""
    if "p" in letters:
        out += directory + "/" if directory else ""
    elif "d" in letters:
        out += os.path.basename(directory) + "/" if directory else ""
    if "n" in letters:
        out += name
    if "x" in letters:
        out += extension
    if not set(letters) & set("pdnx"):
        out = value
    return f'"{out}"' if "q" in letters else out
