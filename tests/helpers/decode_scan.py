"""Where a module works out how to decode a type with msgspec's raw API, found by walking its
syntax tree, whatever name that API goes by there.

msgspec works out a type on the type's first use, and two threads doing that at once can crash
the process (protocol/primed.py); each daemon does it through its Primed decoders, made at
import. A scan that looked only for the spelling `msgspec.json.decode(...)` missed the same call
made through another name: `from msgspec import convert`, `import msgspec.json as mj`,
`decode = msgspec.json.Decoder` inside a function, `from msgspec import msgpack as m`. So every
import of msgspec and every name bound to a piece of it is followed to what it stands for, and a
piece of the decoding API that goes where the scan cannot follow it (an argument, an attribute,
a container, `getattr` on the module, a star import, an import by string) is reported as such."""

from __future__ import annotations

import ast
from dataclasses import dataclass

FORMATS = ("msgspec.json", "msgspec.msgpack", "msgspec.yaml", "msgspec.toml")
DECODING = frozenset({"msgspec.convert"} | {f"{module}.{name}" for module in FORMATS for name in ("decode", "Decoder")})
"""What works out a type when given one: msgspec.convert, each format's decode and Decoder."""
MODULES = frozenset({"msgspec", *FORMATS})
"""What the decoding API may be reached through by attribute."""


@dataclass(frozen=True)
class Finding:
    line: int
    in_function: bool
    what: str  # "typed <name>": a typed decode; "escapes <name>": the API where it is not followed

    @property
    def loose(self) -> bool:
        """Whether it may work out a type on a thread: a typed decode in a function (one at import
        runs on the importing thread), or the API gone where the scan does not follow it."""
        return self.in_function or self.what.startswith("escapes")

    def __str__(self) -> str:
        return f"{self.line}: {self.what}{' (in a function)' if self.in_function else ''}"


def _is_typed(call: ast.Call, api: str) -> bool:
    """Whether a call of `api` is given a type to work out (`**options` may carry one)."""
    if api == "msgspec.convert":
        return True
    typed_keyword = any(keyword.arg in ("type", None) for keyword in call.keywords)
    if api.endswith(".Decoder"):
        return bool(call.args) or typed_keyword  # Decoder(type=Any, ...): the type may come first
    return typed_keyword  # decode(buf, /, *, type=Any, ...)


def _bound_names(tree: ast.Module) -> dict[str, str]:
    """Each name the module binds to msgspec or a piece of it, anywhere in it (imports in a
    function too), and what it stands for: `mj` -> "msgspec.json". Names bound to one by
    assignment (`d = mj.Decoder`) are followed to a fixed point, so a chain of them is too."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "msgspec" or alias.name.startswith("msgspec."):
                    # `import msgspec.json` binds `msgspec`; `import msgspec.json as j` binds j to the module
                    names[alias.asname or "msgspec"] = alias.name if alias.asname else "msgspec"
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None and (
                node.module == "msgspec" or node.module.startswith("msgspec.")):
            for alias in node.names:
                if alias.name != "*":
                    names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    while True:
        more = False
        for node in ast.walk(tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                stands_for = _resolve(node.value, names)
                if stands_for is None:
                    continue
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name) and names.get(target.id) != stands_for:
                        names[target.id] = stands_for
                        more = True
        if not more:
            return names


def _resolve(node: ast.AST, names: dict[str, str]) -> str | None:
    """What msgspec piece an expression stands for, or None: `mj.decode` -> "msgspec.json.decode".
    A subscript stands for what it subscripts (`Decoder[Any]` is the Decoder)."""
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.Attribute):
        outer = _resolve(node.value, names)
        return f"{outer}.{node.attr}" if outer in MODULES else None
    if isinstance(node, ast.Subscript):
        return _resolve(node.value, names)
    return None


def _is_import_by_string(call: ast.Call) -> bool:
    name = ast.unparse(call.func)
    if not (name == "__import__" or name.endswith("import_module")):
        return False
    return any(isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.split(".")[0] == "msgspec"
               for arg in call.args)


def scan(source: str) -> list[Finding]:
    """Each typed decode and each escape of the decoding API in a module's source, in order."""
    tree = ast.parse(source)
    names = _bound_names(tree)
    found: list[Finding] = []

    def expression(node: ast.AST, in_function: bool) -> None:
        """An expression: a call of the decoding API, a reference to it, or neither (look inside)."""
        if isinstance(node, ast.Call):
            api = _resolve(node.func, names)
            if api in DECODING:
                if _is_typed(node, api):
                    found.append(Finding(node.lineno, in_function, f"typed {api}"))
            elif api is None:
                expression(node.func, in_function)
            if _is_import_by_string(node):
                found.append(Finding(node.lineno, in_function, "escapes an import of msgspec by name"))
            for argument in [*node.args, *(keyword.value for keyword in node.keywords)]:
                expression(argument, in_function)
            return
        stands_for = _resolve(node, names)
        if stands_for in DECODING or stands_for in MODULES:
            # Not called here, nor bound to a plain name (statement() follows those): passed on,
            # stored, or handed to getattr, where the scan cannot see what calls it.
            found.append(Finding(getattr(node, "lineno", 0), in_function, f"escapes {stands_for}"))
            return
        if stands_for is not None:
            return  # another piece of msgspec (an encoder, an error, Struct): nothing to decode
        if isinstance(node, ast.Lambda):
            for default in [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]:
                expression(default, in_function)
            expression(node.body, True)
            return
        for child in ast.iter_child_nodes(node):
            (expression if isinstance(child, ast.expr) else statement)(child, in_function)

    def statement(node: ast.AST, in_function: bool) -> None:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "msgspec" and any(
                alias.name == "*" for alias in node.names):
            found.append(Finding(node.lineno, in_function, f"escapes a star import of {node.module}"))
            return
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            # Decorators and defaults run where the function is defined; its body, when called.
            for decorator in node.decorator_list:
                expression(decorator, in_function)
            for default in [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]:
                expression(default, in_function)
            for inner in node.body:
                statement(inner, True)
            return  # annotations are not run (and name types, not calls)
        if isinstance(node, ast.AnnAssign):
            if node.value is not None:
                _value(node.value, [node.target], in_function)
            return
        if isinstance(node, ast.Assign):
            _value(node.value, node.targets, in_function)
            for target in node.targets:
                if not isinstance(target, ast.Name):
                    expression(target, in_function)
            return
        if isinstance(node, ast.arguments):
            return
        for child in ast.iter_child_nodes(node):
            (expression if isinstance(child, ast.expr) else statement)(child, in_function)

    def _value(value: ast.expr, targets: list[ast.expr], in_function: bool) -> None:
        """An assigned value: a piece of msgspec bound to plain names is followed by name
        (_bound_names); bound anywhere else it escapes."""
        if _resolve(value, names) is not None and all(isinstance(target, ast.Name) for target in targets):
            return
        expression(value, in_function)

    for top in tree.body:
        statement(top, False)
    return found
