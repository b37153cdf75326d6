"""Node feature requirements: which nodes a job may run on, by the features they advertise
(Slurm's --constraint, jobd's "need", Grid Engine's -l arch=...). Pure.

Syntax (Slurm's, sbatch(1) --constraint):
- a feature name is letters, digits and `_ . : = + -`, so Grid Engine's `arch=lx-amd64` is one name;
- `&` means AND, `|` OR, and AND binds tighter: `a|b&c` is `a|(b&c)`; parentheses group;
- `,` also means AND, as in jobd's comma list of needs (`avx512,bigmem`);
- whitespace around names and operators is ignored.

Refused with the construct and its position named: Slurm's counts (`gpu*2`) and matching-OR
brackets (`[rack1|rack2]`), which ask for a node *set* rather than a node property; an empty
expression; unbalanced parentheses; operators with nothing on one side.

A parsed constraint is kept in a canonical form: nested like operators flattened, duplicates
dropped, members sorted (names first, then groups by their text). So equal requirements written
differently usually share one `text`, and that text parses back to the same constraint.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import TypeAlias

AND, OR = "&", "|"
_NAME = re.compile(r"[A-Za-z0-9_.:=+-]+")
_OPERATORS = {"&": AND, ",": AND, "|": OR}
_MAX_DEPTH = 50  # parentheses nested deeper are refused rather than left to exhaust the stack


@dataclass(frozen=True, slots=True)
class _Group:
    """Names and subgroups joined by one operator. Subgroups always use the other operator (the
    canonical form flattens `a&(b&c)`), and the names are a frozenset, so evaluating is a set test
    plus a short recursion: cheap enough to run for every node and every job in a planning pass."""

    op: str
    leaves: frozenset[str]
    groups: tuple[_Group, ...]
    text: str

    def matches(self, features: AbstractSet[str]) -> bool:
        if self.op == AND:
            return self.leaves <= features and all(group.matches(features) for group in self.groups)
        return not self.leaves.isdisjoint(features) or any(group.matches(features) for group in self.groups)

    def names(self) -> Iterator[str]:
        yield from self.leaves
        for group in self.groups:
            yield from group.names()

    def unmet(self, features: AbstractSet[str]) -> list[str]:
        """Phrases saying why this group does not match `features`; none when it does."""
        if self.op == AND:
            missing = sorted(self.leaves - features)
            phrases = [f"lacks {_listed(missing, 'and')}"] if missing else []
            for group in self.groups:
                phrases.extend(group.unmet(features))
            return phrases
        if self.matches(features):
            return []
        alternatives = sorted(self.leaves) + [group.text for group in self.groups]
        verb = "satisfies" if self.groups else "has"
        if len(alternatives) == 2:
            return [f"{verb} neither {alternatives[0]} nor {alternatives[1]}"]
        return [f"{verb} none of {_listed(alternatives, 'or')}"]


@dataclass(frozen=True, slots=True)
class Constraint:
    """A parsed requirement. `Constraint(text)` parses `text` (raising ValueError when it is
    malformed) and keeps its canonical spelling, so `Constraint("b, a").text == "a&b"`."""

    text: str
    _root: _Group = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        root = _parse(self.text)
        object.__setattr__(self, "text", root.text)
        object.__setattr__(self, "_root", root)

    def matches(self, features: AbstractSet[str]) -> bool:
        """Whether a node advertising exactly `features` satisfies the requirement."""
        return self._root.matches(features)

    def names(self) -> frozenset[str]:
        """Every feature the requirement mentions (to tell a user of a name no node has)."""
        return frozenset(self._root.names())

    def unmet(self, features: AbstractSet[str]) -> str:
        """In words, what `features` lacks: "" exactly when `matches(features)`; otherwise
        phrases such as "lacks avx512" or "has neither bigmem nor hugemem", joined by "; "."""
        return "; ".join(self._root.unmet(features))


def parse_constraint(text: str) -> Constraint:
    """Parse a requirement; a malformed one raises ValueError naming the construct and where."""
    return Constraint(text)


def _listed(words: list[str], conjunction: str) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} {conjunction} {words[-1]}"


# Parsing: tokens, then recursive descent over
#   expression := term ('|' term)* ;  term := factor (('&' | ',') factor)* ;  factor := NAME | '(' expression ')'
# The raw tree is a name or (operator, [children]); _normal() turns it into the canonical _Group.

_Raw: TypeAlias = str | tuple[str, list["_Raw"]]


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # "name", "&", "|", ",", "(", ")" or "end"
    value: str
    at: int  # offset in the text, 0-based


def _tokens(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    position = 0
    while position < len(text):
        char = text[position]
        if char.isspace():
            position += 1
        elif match := _NAME.match(text, position):
            tokens.append(_Token("name", match[0], position))
            position = match.end()
        elif char in "&|,()":
            tokens.append(_Token(char, char, position))
            position += 1
        elif char == "*":
            raise _error(text, position, "feature counts ('*', as in Slurm's gpu*2) are not supported")
        elif char in "[]":
            raise _error(text, position, f"matching-OR brackets ({char!r}, as in Slurm's [rack1|rack2]) are "
                                         "not supported; write rack1|rack2 for any one of them")
        else:
            raise _error(text, position, f"{char!r} is neither an operator (& | , ( )) nor part of a feature "
                                         "name (letters, digits, _ . : = + -)")
    tokens.append(_Token("end", "", len(text)))
    return tokens


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokens(text)
        self.index = 0
        self.depth = 0

    @property
    def token(self) -> _Token:
        return self.tokens[self.index]

    def previous(self) -> _Token | None:
        return self.tokens[self.index - 1] if self.index else None

    def parse(self) -> _Raw:
        if self.token.kind == "end":
            raise ValueError(f"constraint {self.text!r} is empty; name at least one feature")
        tree = self.expression()
        if self.token.kind == ")":
            raise _error(self.text, self.token.at, "')' has no matching '('")
        if self.token.kind != "end":  # only a name can follow a complete expression here
            raise self.missing_operator()
        return tree

    def expression(self) -> _Raw:
        children = [self.term()]
        while self.token.kind == "|":
            self.index += 1
            children.append(self.term())
        return children[0] if len(children) == 1 else (OR, children)

    def term(self) -> _Raw:
        children = [self.factor()]
        while self.token.kind in ("&", ","):
            self.index += 1
            children.append(self.factor())
        return children[0] if len(children) == 1 else (AND, children)

    def factor(self) -> _Raw:
        token = self.token
        if token.kind == "name":
            self.index += 1
            return token.value
        if token.kind == "(":
            self.index += 1
            self.depth += 1
            if self.depth > _MAX_DEPTH:
                raise _error(self.text, token.at, f"parentheses nest more than {_MAX_DEPTH} deep")
            tree = self.expression()
            self.depth -= 1
            if self.token.kind == "end":
                raise _error(self.text, token.at, "'(' is never closed")
            if self.token.kind != ")":
                raise self.missing_operator()
            self.index += 1
            return tree
        raise self.missing_operand(token)

    def missing_operand(self, token: _Token) -> ValueError:
        """A name or '(' was due but `token` came: say which construct is left incomplete."""
        before = self.previous()
        if before is not None and before.kind in _OPERATORS:
            if token.kind in _OPERATORS:
                return _error(self.text, token.at, f"{token.value!r} follows {before.value!r} with no feature "
                                                   "between them")
            return _error(self.text, before.at, f"{before.value!r} has nothing after it")
        if token.kind == ")":
            if before is not None and before.kind == "(":
                return _error(self.text, before.at, "empty parentheses")
            return _error(self.text, token.at, "')' has no matching '('")
        if token.kind == "end":  # after '(' at the very end
            assert before is not None
            return _error(self.text, before.at, "'(' is never closed")
        return _error(self.text, token.at, f"{token.value!r} has nothing before it")

    def missing_operator(self) -> ValueError:
        before, after = self.tokens[self.index - 1], self.token
        return _error(self.text, after.at, f"{after.value!r} follows {before.value!r} with no operator between "
                                           "them; join features with & (and), | (or) or , (and)")


def _error(text: str, at: int, problem: str) -> ValueError:
    return ValueError(f"constraint {text!r}, at character {at + 1}: {problem}")


def _parse(text: str) -> _Group:
    raw = _Parser(text).parse()
    root = _normal(AND, [raw])
    return root if isinstance(root, _Group) else _Group(AND, frozenset({root}), (), root)


def _normal(op: str, children: list[_Raw]) -> str | _Group:
    """The canonical form of `children` joined by `op`: a single member stands for itself."""
    leaves: set[str] = set()
    groups: dict[str, _Group] = {}
    for child in children:
        member = child if isinstance(child, str) else _normal(*child)
        if isinstance(member, str):
            leaves.add(member)
        elif member.op == op:
            leaves |= member.leaves
            groups.update((group.text, group) for group in member.groups)
        else:
            groups[member.text] = member
    if len(leaves) + len(groups) == 1:
        return next(iter(leaves)) if leaves else next(iter(groups.values()))
    ordered = tuple(groups[text] for text in sorted(groups))
    # Subgroups use the other operator: under AND they are ORs and need parentheses; under OR they
    # are ANDs, which bind tighter anyway.
    parts = sorted(leaves) + [f"({group.text})" if op == AND else group.text for group in ordered]
    return _Group(op, frozenset(leaves), ordered, op.join(parts))
