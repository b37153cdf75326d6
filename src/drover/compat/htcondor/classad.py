"""A small evaluator of ClassAd expressions, for condor_q's and condor_history's -constraint,
the submit file's `requirements` and its request_* expressions (`floor(MY.DaskWorkerMemory /
1048576)`).

What it reads: integers, reals, "strings", true, false, undefined, error; attribute names
(case-insensitive, with MY. or TARGET.); unary `! - +`; `* / %`, `+ -`, `< <= > >=`, `== !=`,
`=?= =!=` (is, isnt), `&&`, `||`, `?:`; parentheses; and the common functions (floor, ceiling,
round, int, real, string, strcat, size, toUpper, toLower, isUndefined, isError, ifThenElse,
regexp, stringListMember, min, max). ClassAd's three-valued logic: an undefined attribute makes
a comparison undefined, `false && undefined` is false and `true || undefined` is true; a
constraint matches only what is true.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


class ClassAdError(ValueError):
    """An expression that cannot be parsed."""


class _Undefined:
    def __repr__(self) -> str:
        return "undefined"


class _Error:
    def __repr__(self) -> str:
        return "error"


UNDEFINED: Any = _Undefined()
ERROR: Any = _Error()

_TOKEN = re.compile(r"""\s*(?:
    (?P<real>\d+\.\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+)
  | (?P<int>\d+)
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<name>[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<op>=\?=|=!=|==|!=|<=|>=|&&|\|\||[-+*/%<>!?:(),])
)""", re.VERBOSE)


@dataclass(frozen=True)
class Expr:
    """A parsed expression: evaluate it against an ad (a mapping of attribute names)."""

    node: tuple[Any, ...]
    text: str

    def evaluate(self, ad: Mapping[str, Any]) -> Any:
        lowered = {k.lower(): v for k, v in ad.items()}
        return _eval(self.node, lowered)

    def matches(self, ad: Mapping[str, Any]) -> bool:
        return self.evaluate(ad) is True

    def attributes(self) -> set[str]:
        """The attribute names it reads (lower case, without MY. or TARGET.)."""
        out: set[str] = set()
        _names(self.node, out)
        return out


def parse(text: str) -> Expr:
    tokens = _tokens(text)
    parser = _Parser(tokens, text)
    node = parser.ternary()
    if parser.i != len(tokens):
        raise ClassAdError(f"unexpected {tokens[parser.i][1]!r} in {text!r}")
    return Expr(node, text)


def evaluate(text: str, ad: Mapping[str, Any]) -> Any:
    return parse(text).evaluate(ad)


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            raise ClassAdError(f"cannot parse {text[pos:]!r} in {text!r}")
        kind = match.lastgroup or ""
        out.append((kind, match.group(kind)))
        pos = match.end()
    return out


_BINARY = [("||",), ("&&",), ("==", "!=", "=?=", "=!=", "is", "isnt"), ("<", "<=", ">", ">="), ("+", "-"),
           ("*", "/", "%")]


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]], text: str) -> None:
        self.tokens, self.text, self.i = tokens, text, 0

    def peek(self) -> str | None:
        if self.i >= len(self.tokens):
            return None
        kind, value = self.tokens[self.i]
        if kind == "op" or (kind == "name" and value.lower() in ("is", "isnt")):
            return value.lower()
        return None

    def take(self, op: str) -> None:
        if self.peek() != op:
            found = self.tokens[self.i][1] if self.i < len(self.tokens) else "the end"
            raise ClassAdError(f"expected {op!r}, found {found!r} in {self.text!r}")
        self.i += 1

    def ternary(self) -> tuple[Any, ...]:
        condition = self.binary(0)
        if self.peek() == "?":
            self.i += 1
            then = self.ternary()
            self.take(":")
            return ("?", condition, then, self.ternary())
        return condition

    def binary(self, level: int) -> tuple[Any, ...]:
        if level == len(_BINARY):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek() in _BINARY[level]:
            op = self.peek() or ""
            self.i += 1
            left = ({"is": "=?=", "isnt": "=!="}.get(op, op), left, self.binary(level + 1))
        return left

    def unary(self) -> tuple[Any, ...]:
        op = self.peek()
        if op in ("!", "-", "+"):
            self.i += 1
            return ("u" + op, self.unary())
        return self.primary()

    def primary(self) -> tuple[Any, ...]:
        if self.i >= len(self.tokens):
            raise ClassAdError(f"the expression {self.text!r} ends too soon")
        kind, value = self.tokens[self.i]
        self.i += 1
        if kind == "int":
            return ("lit", int(value))
        if kind == "real":
            return ("lit", float(value))
        if kind == "string":
            return ("lit", re.sub(r"\\(.)", r"\1", value[1:-1]))
        if kind == "name":
            lowered = value.lower()
            if lowered in ("true", "false"):
                return ("lit", lowered == "true")
            if lowered == "undefined":
                return ("lit", UNDEFINED)
            if lowered == "error":
                return ("lit", ERROR)
            if self.peek() == "(":
                self.i += 1
                args = []
                if self.peek() != ")":
                    args.append(self.ternary())
                    while self.peek() == ",":
                        self.i += 1
                        args.append(self.ternary())
                self.take(")")
                return ("call", lowered, args)
            for scope in ("my.", "target."):
                if lowered.startswith(scope):
                    lowered = lowered[len(scope):]
            return ("attr", lowered)
        if value == "(":
            inner = self.ternary()
            self.take(")")
            return inner
        raise ClassAdError(f"unexpected {value!r} in {self.text!r}")


def _names(node: tuple[Any, ...], out: set[str]) -> None:
    if node[0] == "attr":
        out.add(node[1])
    for part in node[1:]:
        if isinstance(part, tuple):
            _names(part, out)
        elif isinstance(part, list):
            for item in part:
                _names(item, out)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _eval(node: tuple[Any, ...], ad: Mapping[str, Any]) -> Any:
    kind = node[0]
    if kind == "lit":
        return node[1]
    if kind == "attr":
        value = ad.get(node[1], UNDEFINED)
        if isinstance(value, Expr):
            return value.evaluate(ad)
        return value
    if kind == "call":
        return _call(node[1], [_eval(arg, ad) for arg in node[2]])
    if kind == "?":
        condition = _eval(node[1], ad)
        if condition is UNDEFINED:
            return UNDEFINED
        if not isinstance(condition, (bool, int, float)):
            return ERROR
        return _eval(node[2] if condition else node[3], ad)
    if kind == "u!":
        value = _eval(node[1], ad)
        return value if value in (UNDEFINED, ERROR) else not value if isinstance(value, bool) else ERROR
    if kind in ("u-", "u+"):
        value = _eval(node[1], ad)
        if not _is_number(value):
            return value if value in (UNDEFINED, ERROR) else ERROR
        return -value if kind == "u-" else value
    left = _eval(node[1], ad)
    if kind == "&&":
        if left is False:
            return False
        right = _eval(node[2], ad)
        return _and(left, right)
    if kind == "||":
        if left is True:
            return True
        right = _eval(node[2], ad)
        return _or(left, right)
    right = _eval(node[2], ad)
    if kind == "=?=":
        return _identical(left, right)
    if kind == "=!=":
        return not _identical(left, right)
    if left is ERROR or right is ERROR:
        return ERROR
    if left is UNDEFINED or right is UNDEFINED:
        return UNDEFINED
    if kind in ("==", "!=", "<", "<=", ">", ">="):
        return _compare(kind, left, right)
    if not (_is_number(left) or isinstance(left, bool)) or not (_is_number(right) or isinstance(right, bool)):
        return ERROR
    a, b = float(left) if isinstance(left, float) else int(left), float(right) if isinstance(right, float) else int(right)
    if kind == "+":
        return a + b
    if kind == "-":
        return a - b
    if kind == "*":
        return a * b
    if b == 0:
        return ERROR
    if kind == "/":
        return a / b if isinstance(a, float) or isinstance(b, float) else int(a / b)
    return math.fmod(a, b) if isinstance(a, float) or isinstance(b, float) else int(math.fmod(a, b))


def _and(left: Any, right: Any) -> Any:
    if left is ERROR or right is ERROR:
        return ERROR
    if right is False:
        return False
    if left is UNDEFINED or right is UNDEFINED:
        return UNDEFINED
    return bool(left) and bool(right)


def _or(left: Any, right: Any) -> Any:
    if left is ERROR or right is ERROR:
        return ERROR
    if right is True:
        return True
    if left is UNDEFINED or right is UNDEFINED:
        return UNDEFINED
    return bool(left) or bool(right)


def _identical(left: Any, right: Any) -> bool:
    if type(left) is not type(right) and not (_is_number(left) and _is_number(right)):
        return False
    return bool(left == right)


def _compare(op: str, left: Any, right: Any) -> Any:
    if isinstance(left, str) and isinstance(right, str):
        a: Any = left.lower()
        b: Any = right.lower()
    elif (_is_number(left) or isinstance(left, bool)) and (_is_number(right) or isinstance(right, bool)):
        a, b = left, right
    else:
        return ERROR
    return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def _string(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else repr(value)


def _number_call(function: Callable[[float], Any]) -> Callable[[list[Any]], Any]:
    def call(args: list[Any]) -> Any:
        if len(args) != 1:
            return ERROR
        value = args[0]
        if value is UNDEFINED:
            return UNDEFINED
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                return ERROR
        if not _is_number(value):
            return ERROR
        return function(value)
    return call


def _if_then_else(args: list[Any]) -> Any:
    if len(args) != 3 or args[0] is ERROR:
        return ERROR
    return UNDEFINED if args[0] is UNDEFINED else args[1] if args[0] else args[2]


def _list_member(args: list[Any]) -> Any:
    if len(args) < 2 or not all(isinstance(a, str) for a in args):
        return UNDEFINED if UNDEFINED in args else ERROR
    separators = args[2] if len(args) > 2 else " ,"
    items = [item for item in re.split("[" + re.escape(separators) + "]+", args[1]) if item]
    return args[0] in items


def _regexp(args: list[Any]) -> Any:
    if len(args) < 2 or not isinstance(args[0], str) or not isinstance(args[1], str):
        return UNDEFINED if UNDEFINED in args else ERROR
    flags = re.IGNORECASE if len(args) > 2 and "i" in str(args[2]).lower() else 0
    try:
        return re.search(args[0], args[1], flags) is not None
    except re.error:
        return ERROR


_FUNCTIONS: dict[str, Callable[[list[Any]], Any]] = {
    "floor": _number_call(lambda v: int(math.floor(v))),
    "ceiling": _number_call(lambda v: int(math.ceil(v))),
    "round": _number_call(lambda v: int(round(v))),
    "int": _number_call(lambda v: int(v)),
    "real": _number_call(lambda v: float(v)),
    "string": lambda a: _string(a[0]) if len(a) == 1 and a[0] not in (UNDEFINED, ERROR) else ERROR,
    "strcat": lambda a: "".join(_string(v) for v in a),
    "size": lambda a: len(a[0]) if len(a) == 1 and isinstance(a[0], str) else ERROR,
    "toupper": lambda a: a[0].upper() if len(a) == 1 and isinstance(a[0], str) else ERROR,
    "tolower": lambda a: a[0].lower() if len(a) == 1 and isinstance(a[0], str) else ERROR,
    "isundefined": lambda a: len(a) == 1 and a[0] is UNDEFINED,
    "iserror": lambda a: len(a) == 1 and a[0] is ERROR,
    "ifthenelse": _if_then_else,
    "stringlistmember": _list_member,
    "regexp": _regexp,
    "min": lambda a: min(a) if a and all(_is_number(v) for v in a) else ERROR,
    "max": lambda a: max(a) if a and all(_is_number(v) for v in a) else ERROR,
}


def _call(name: str, args: list[Any]) -> Any:
    function = _FUNCTIONS.get(name)
    if function is None:
        return ERROR
    return function(args)


def unparse(value: Any) -> str:
    """A value as condor_q -long and -af write it: strings quoted, booleans lower case."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, Expr):
        return value.text
    return str(value)
