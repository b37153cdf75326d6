"""The values of submit commands, as condor_submit reads them: arguments and environment in
their old and new syntax, sizes with units, booleans."""

from __future__ import annotations

import re


class SubmitValueError(ValueError):
    """A value condor_submit refuses; the message is its words."""


def arguments(text: str) -> list[str]:
    """`arguments`: the new syntax when the value is in double quotes (words split on blanks,
    single quotes group, '' is a quote inside them, "" a double quote); else the old one (split
    on blanks, \\" a double quote)."""
    text = text.strip()
    if len(text) >= 2 and text.startswith('"') and text.endswith('"'):
        return _new_syntax(text[1:-1].replace('""', '"'), "arguments")
    if '"' in text.replace('\\"', ""):
        raise SubmitValueError(f"Found illegal unescaped double-quote: {text}\nThe full arguments you "
                               "specified were: " + text)
    return [word.replace('\\"', '"') for word in text.split()]


def _new_syntax(text: str, what: str) -> list[str]:
    words: list[str] = []
    current, in_word, quoted = "", False, False
    i = 0
    while i < len(text):
        char = text[i]
        if quoted:
            if char == "'":
                if text[i + 1:i + 2] == "'":
                    current += "'"
                    i += 2
                    continue
                quoted = False
            else:
                current += char
        elif char == "'":
            quoted, in_word = True, True
        elif char in " \t":
            if in_word:
                words.append(current)
                current, in_word = "", False
        else:
            current += char
            in_word = True
        i += 1
    if quoted:
        raise SubmitValueError(f"Unterminated single-quote in {what}: {text}")
    if in_word:
        words.append(current)
    return words


def environment(text: str) -> dict[str, str]:
    """`environment`: the new syntax in double quotes (`"A=1 B='x y'"`), else the old one
    (`A=1;B=2`)."""
    text = text.strip()
    if len(text) >= 2 and text.startswith('"') and text.endswith('"'):
        pairs = _new_syntax(text[1:-1].replace('""', '"'), "environment")
    else:
        pairs = [pair for pair in text.split(";") if pair.strip()]
    out: dict[str, str] = {}
    for pair in pairs:
        name, equals, value = pair.strip().partition("=")
        if not equals or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise SubmitValueError(f"environment: bad pair {pair!r} (NAME=VALUE)")
        out[name] = value
    return out


_UNITS = {"": None, "k": 1, "kb": 1, "m": 1024, "mb": 1024, "g": 1024**2, "gb": 1024**2, "t": 1024**3, "tb": 1024**3,
          "b": 0}


def size_kib(text: str, default_unit_kib: int) -> int | None:
    """A size with an optional unit (K, M, G, T, with or without B), in KiB; a plain number is
    in `default_unit_kib` (request_memory: MB, request_disk: KB). None: not a literal size (an
    expression, evaluated by the caller)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*([a-zA-Z]*)\s*", text)
    if match is None:
        return None
    number, unit = float(match.group(1)), match.group(2).lower()
    if unit not in _UNITS:
        raise SubmitValueError(f"{text.strip()} is not a valid size (a number, then K, M, G or T)")
    factor = _UNITS[unit]
    if factor is None:
        return int(number * default_unit_kib + 0.999999)
    if factor == 0:
        return int(number / 1024 + 0.999999)
    return int(number * factor + 0.999999)


def boolean(text: str, key: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "t", "yes", "y", "1"):
        return True
    if lowered in ("false", "f", "no", "n", "0", ""):
        return False
    raise SubmitValueError(f"{key} = {text.strip()}: expected True or False")


def file_list(text: str) -> list[str]:
    return [item.strip() for item in re.split(r"[,\n]", text) if item.strip()]
