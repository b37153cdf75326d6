"""Reading drover.toml into its schema (`drover.config_schema`): the typed settings, or one line
that says what is wrong and where, such as

    /var/lib/drover/drover.toml:7: [execd] unknown key 'prologue' (did you mean 'prolog'?)

tomllib gives values without their lines, so the line of a key is found again in the text
(`KeyLines`). Every key is checked against the schema before anything is converted, so the
error names the first wrong key in the file's own terms, not msgspec's.
"""

from __future__ import annotations

import difflib
import json
import re
import tomllib
import typing
from dataclasses import dataclass

import msgspec
import msgspec.inspect

from drover.config_schema import DroverConfig, Section
from drover.core.errors import DroverError

KeyPath = tuple[str, ...]  # ("execd", "rlimits", "nofile"): where a value is in the file


class ConfigError(DroverError):
    """drover.toml cannot be used; the message is `PATH:LINE: what is wrong`."""

    def __init__(self, path: str, line: int | None, problem: str) -> None:
        super().__init__(f"{path}:{line}: {problem}" if line else f"{path}: {problem}")
        self.path, self.line, self.problem = path, line, problem


@dataclass(frozen=True)
class LoadedConfig:
    path: str
    found: bool  # False: there is no file, every value is a default
    config: DroverConfig
    from_file: frozenset[KeyPath]  # the settings the file gives, the others being defaults


def read_config(path: str) -> LoadedConfig:
    """The settings of the drover.toml at `path`; every default when there is none."""
    try:
        with open(path, "rb") as file:
            raw = file.read()
    except FileNotFoundError:
        return LoadedConfig(path, False, DroverConfig(), frozenset())
    except OSError as error:
        raise ConfigError(path, None, f"cannot be read: {error.strerror}") from None
    try:
        text = raw.decode()
    except UnicodeDecodeError:
        raise ConfigError(path, None, "is not UTF-8 text") from None
    return parse_config(text, path)


def parse_config(text: str, path: str = "drover.toml") -> LoadedConfig:
    """The settings of a drover.toml's text; `path` is what errors name."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise _syntax_error(error, text, path) from None
    from_file: set[KeyPath] = set()
    _check_table(data, DroverConfig, (), from_file, lambda where, problem: ConfigError(
        path, KeyLines(text).line_of(where), problem))
    # Every key and type was checked above, so this conversion succeeds.
    return LoadedConfig(path, True, msgspec.convert(data, DroverConfig), frozenset(from_file))


def _syntax_error(error: tomllib.TOMLDecodeError, text: str, path: str) -> ConfigError:
    # Python 3.11's TOMLDecodeError has no line attribute; its message ends with the position.
    message = str(error)
    if found := re.fullmatch(r"(.*) \(at line (\d+), column (\d+)\)", message, re.DOTALL):
        return ConfigError(path, int(found[2]), f"not valid TOML: {found[1]} (column {found[3]})")
    if found := re.fullmatch(r"(.*) \(at end of document\)", message, re.DOTALL):
        return ConfigError(path, text.count("\n") + 1, f"not valid TOML: {found[1]} (at the end)")
    return ConfigError(path, None, f"not valid TOML: {message}")


Refuse = typing.Callable[[KeyPath, str], ConfigError]


def _check_table(table: dict[str, object], schema: type[Section], where: KeyPath, from_file: set[KeyPath],
                 refuse: Refuse) -> None:
    """Refuse the first key of `table` that `schema` does not have, or whose value has the wrong
    type; record the keys that are set."""
    fields = {info.encode_name: info for info in msgspec.structs.fields(schema)}
    for key, value in table.items():
        here = (*where, key)
        info = fields.get(key)
        if info is None:
            raise refuse(here, _unknown(key, list(fields), where))
        kind = _bare(info.type)
        if isinstance(kind, type) and issubclass(kind, Section):
            if not isinstance(value, dict):
                raise refuse(here, f"{_name(here)} must be a table ([{_name(here)}]), not {toml_value(value)}")
            _check_table(value, kind, here, from_file, refuse)
        elif typing.get_origin(kind) is dict and _is_section(typing.get_args(kind)[1]):
            # [queues.NAME]: a table of tables, named freely
            item_schema = typing.get_args(kind)[1]
            if not isinstance(value, dict):
                raise refuse(here, f"{_name(here)} must be a table ([{_name(here)}.NAME]), not {toml_value(value)}")
            for name, item in value.items():
                if not isinstance(item, dict):
                    named = (*here, name)
                    raise refuse(named, f"{_name(named)} must be a table ([{_name(named)}]), not {toml_value(item)}")
                _check_table(item, item_schema, (*here, name), from_file, refuse)
        elif typing.get_origin(kind) is dict and isinstance(value, dict):  # [licenses]: NAME = value
            item_type = typing.get_args(kind)[1]
            for name, item in value.items():
                try:
                    msgspec.convert(item, item_type)
                except msgspec.ValidationError:
                    raise refuse((*here, name), f"[{_name(here)}] {toml_key(name)} must be {describe(item_type)}, "
                                                f"not {toml_value(item)}") from None
                from_file.add((*here, name))
        else:
            try:
                msgspec.convert(value, info.type)
            except msgspec.ValidationError:
                raise refuse(here, f"[{_name(where)}] {toml_key(key)} must be {describe(info.type)}, "
                                   f"not {toml_value(value)}") from None
            from_file.add(here)
    try:  # what the table's own check says (a default over its maximum, a malformed window...)
        msgspec.convert(table, schema)
    except msgspec.ValidationError as error:
        table_name = f"[{_name(where)}] " if where else ""  # the whole file's own check names its table
        raise refuse(where, table_name + str(error).split(' - at `')[0]) from None


def _is_section(kind: object) -> bool:
    return isinstance(kind, type) and issubclass(kind, Section)


def _unknown(key: str, known: list[str], where: KeyPath) -> str:
    close = difflib.get_close_matches(key, known, n=1)
    if not where:
        hint = f" (did you mean [{close[0]}]?)" if close else f" (drover.toml has {', '.join(f'[{k}]' for k in known)})"
        return f"unknown section [{toml_key(key)}]{hint}"
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"[{_name(where)}] unknown key {key!r}{hint}"


def _bare(kind: object) -> object:
    """The type without its Annotated description."""
    return typing.get_args(kind)[0] if typing.get_origin(kind) is typing.Annotated else kind


def describe(kind: object) -> str:
    """What a value of a schema type is, in words: "a number", "true or false", ..."""
    return _describe(msgspec.inspect.type_info(kind))


def _describe(info: msgspec.inspect.Type) -> str:
    inspect = msgspec.inspect
    if isinstance(info, inspect.Metadata):
        return _describe(info.type)
    if isinstance(info, inspect.UnionType):  # `X | None`: None means unset, which TOML cannot write
        return " or ".join(_describe(each) for each in info.types if not isinstance(each, inspect.NoneType))
    if isinstance(info, inspect.BoolType):
        return "true or false"
    if isinstance(info, inspect.IntType):
        return "a whole number" + _range(info)
    if isinstance(info, inspect.FloatType):
        return "a number" + _range(info)
    if isinstance(info, inspect.StrType):
        return "a string"
    if isinstance(info, inspect.LiteralType):
        return "one of " + ", ".join(toml_value(value) for value in info.values)
    if isinstance(info, inspect.ListType) and isinstance(info.item_type, inspect.StrType):
        return "a list of strings"
    if isinstance(info, inspect.ListType):
        return "a list"
    return "a table"


def _range(info: msgspec.inspect.IntType | msgspec.inspect.FloatType) -> str:
    if info.ge is not None and info.le is not None:
        return f" from {number_text(info.ge)} to {number_text(info.le)}"
    if info.ge is not None:
        return f" of {number_text(info.ge)} or more"
    return ""


def number_text(value: float) -> str:
    """3600.0 as 3600, 0.1 as 0.1."""
    return str(int(value)) if float(value).is_integer() else repr(value)


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else json.dumps(key, ensure_ascii=False)


def _name(path: KeyPath) -> str:
    return ".".join(toml_key(part) for part in path)


def toml_value(value: object) -> str:
    """A value as TOML writes it (what the user typed, near enough)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    if hasattr(value, "isoformat"):  # TOML's dates and times
        return str(value.isoformat())
    return repr(value)


# A key, bare or quoted, and dotted keys made of them.
_PART = r"""(?:[A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*"|'[^']*')"""
_DOTTED = rf"{_PART}(?:\s*\.\s*{_PART})*"
_HEADER = re.compile(rf"\s*\[\[?\s*({_DOTTED})\s*\]\]?")
_ASSIGNMENT = re.compile(rf"\s*({_DOTTED})\s*=")


class KeyLines:
    """Where each key of a TOML text is: `[table]` headers, `key = value` lines beneath them,
    dotted keys (`rlimits.nofile = 1`, `[queues.fast]`), quoted keys. Lines inside multi-line
    strings are skipped. A key given inside an inline table or an array is found on the line of
    the key that holds it."""

    def __init__(self, text: str) -> None:
        self.lines: list[tuple[KeyPath, int]] = []
        table: KeyPath = ()
        closing = ""  # the delimiter of the multi-line string we are in, if any
        for number, line in enumerate(text.splitlines(), start=1):
            if closing:
                if line.count(closing) % 2:
                    closing = ""
                continue
            if header := _HEADER.match(line):
                table = _parts(header[1])
                self.lines.append((table, number))
            elif assignment := _ASSIGNMENT.match(line):
                self.lines.append(((*table, *_parts(assignment[1])), number))
            for delimiter in ('"""', "'''"):
                if line.count(delimiter) % 2:
                    closing = delimiter

    def line_of(self, path: KeyPath) -> int | None:
        """The line that sets `path`, else the line of the nearest table or key that holds it,
        else the first line within it (`[queue.fast]` is where the table `queue` begins)."""
        best, best_length, within = None, 0, None
        for found, number in self.lines:
            if found == path:
                return number
            if len(found) > best_length and path[:len(found)] == found:
                best, best_length = number, len(found)
            if within is None and found[:len(path)] == path:
                within = number
        return best or within


def _parts(dotted: str) -> KeyPath:
    return tuple(_unquote(part) for part in re.findall(_PART, dotted))


def _unquote(part: str) -> str:
    if part.startswith("'"):
        return part[1:-1]
    if part.startswith('"'):
        try:
            return str(json.loads(part))  # TOML's basic strings escape as JSON's do, nearly
        except ValueError:
            return part[1:-1]
    return part
