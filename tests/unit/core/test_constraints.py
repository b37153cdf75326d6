"""Node feature requirements (--constraint, jobd's need): the syntax, its canonical text, the words
given for a node that falls short, and bad input refused with the construct and position named."""

from __future__ import annotations

from typing import TypeAlias

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drover.core.constraints import Constraint, parse_constraint

NAMES = ("avx512", "bigmem", "gpu", "arch=lx-amd64")


@pytest.mark.parametrize(("text", "canonical"), [
    ("avx512", "avx512"),
    ("avx512&(bigmem|hugemem)", "avx512&(bigmem|hugemem)"),
    (" (hugemem | bigmem) , avx512 ", "avx512&(bigmem|hugemem)"),  # jobd's comma list means AND
    ("a|b&c", "a|b&c"),  # AND binds tighter
    ("(a|b)&c", "c&(a|b)"),
    ("a&(b&c)", "a&b&c"), ("a|(b|c)", "a|b|c"), ("((a))", "a"), ("a&a", "a"), ("a|a&a", "a"),
    ("arch=lx-amd64", "arch=lx-amd64"), ("x86_64.v3:fast+new-ish", "x86_64.v3:fast+new-ish"),
    ("(a|b)&(c|d)", "(a|b)&(c|d)"), ("(d|c)&(b|a)", "(a|b)&(c|d)"), ("a|(b|c)&d", "a|d&(b|c)"),
])
def test_parsing_gives_the_canonical_text(text: str, canonical: str) -> None:
    constraint = parse_constraint(text)
    assert constraint.text == canonical
    assert parse_constraint(canonical) == constraint
    assert Constraint(text) == constraint


@pytest.mark.parametrize(("text", "features", "expected"), [
    ("avx512&(bigmem|hugemem)", {"avx512", "hugemem"}, True),
    ("avx512&(bigmem|hugemem)", {"avx512", "gpu"}, False),
    ("avx512&(bigmem|hugemem)", {"bigmem", "hugemem"}, False),
    ("a|b&c", {"a"}, True), ("a|b&c", {"b"}, False), ("a|b&c", {"b", "c"}, True),
    ("a,b", {"a", "b", "z"}, True), ("a,b", {"a"}, False),
    ("arch=lx-amd64", {"arch=lx-amd64"}, True), ("arch=lx-amd64", {"arch=lx-arm64"}, False),
])
def test_matching(text: str, features: set[str], expected: bool) -> None:
    assert parse_constraint(text).matches(features) is expected
    assert parse_constraint(text).matches(frozenset(features)) is expected


def test_names_lists_every_feature_mentioned() -> None:
    assert parse_constraint("avx512&(bigmem|hugemem)|gpu").names() == {"avx512", "bigmem", "hugemem", "gpu"}


@pytest.mark.parametrize(("text", "features", "words"), [
    ("avx512", set(), "lacks avx512"),
    ("avx512&gpu&bigmem", {"gpu"}, "lacks avx512 and bigmem"),
    ("a&b&c", set(), "lacks a, b and c"),
    ("bigmem|hugemem", {"gpu"}, "has neither bigmem nor hugemem"),
    ("a|b|c", set(), "has none of a, b or c"),
    ("avx512&(bigmem|hugemem)", {"bigmem"}, "lacks avx512"),
    ("avx512&(bigmem|hugemem)", {"avx512"}, "has neither bigmem nor hugemem"),
    ("avx512&(bigmem|hugemem)", set(), "lacks avx512; has neither bigmem nor hugemem"),
    ("a|b&c", {"b"}, "satisfies neither a nor b&c"),
    ("avx512&(bigmem|hugemem)", {"avx512", "bigmem"}, ""),
])
def test_unmet_says_what_the_features_lack(text: str, features: set[str], words: str) -> None:
    assert parse_constraint(text).unmet(features) == words


@pytest.mark.parametrize(("text", "words"), [
    ("", "is empty"), ("   ", "is empty"),
    ("gpu*2", r"at character 4: feature counts \('\*'"),
    ("[rack1|rack2]", "at character 1: matching-OR brackets"),
    ("a&[b|c]", "at character 3: matching-OR brackets"),
    ("(a|b", "at character 1: '\\(' is never closed"), ("(", "at character 1: '\\(' is never closed"),
    ("a|b)", "at character 4: '\\)' has no matching '\\('"), (")", "at character 1: '\\)' has no matching"),
    ("()", "at character 1: empty parentheses"), ("a&()", "at character 3: empty parentheses"),
    ("a&", "at character 2: '&' has nothing after it"), ("a,", "at character 2: ',' has nothing after it"),
    ("a|(b|)", "at character 5: '\\|' has nothing after it"),
    ("&a", "at character 1: '&' has nothing before it"), ("(|a)", "at character 2: '\\|' has nothing before"),
    ("a&|b", "at character 3: '\\|' follows '&' with no feature between"),
    ("a b", "at character 3: 'b' follows 'a' with no operator between"),
    ("(a)b", "at character 4: 'b' follows '\\)' with no operator"),
    ("a!b", "at character 2: '!' is neither an operator"),
    ("(" * 60 + "a" + ")" * 60, "at character 51: parentheses nest more than 50 deep"),
])
def test_bad_constraints_are_refused_with_the_construct_and_position_named(text: str, words: str) -> None:
    with pytest.raises(ValueError, match=f"constraint .*{words}"):
        parse_constraint(text)


# Properties: random expression trees over a few names, rendered with random spelling choices.

Tree: TypeAlias = str | tuple[str, list["Tree"]]

trees: st.SearchStrategy[Tree] = st.recursive(
    st.sampled_from(NAMES),
    lambda children: st.tuples(st.sampled_from("&|,"), st.lists(children, min_size=2, max_size=4)),
    max_leaves=12,
)
feature_sets = st.frozensets(st.sampled_from(NAMES))


def render(tree: Tree, spaced: bool) -> str:
    """Fully parenthesised, so precedence never decides the meaning."""
    if isinstance(tree, str):
        return tree
    op, children = tree
    joiner = f" {op} " if spaced else op
    return "(" + joiner.join(render(child, spaced) for child in children) + ")"


def evaluate(tree: Tree, features: frozenset[str]) -> bool:
    if isinstance(tree, str):
        return tree in features
    op, children = tree
    results = (evaluate(child, features) for child in children)
    return any(results) if op == "|" else all(results)


def mentioned(tree: Tree) -> set[str]:
    return {tree} if isinstance(tree, str) else set().union(*(mentioned(child) for child in tree[1]))


@settings(max_examples=300, deadline=None)
@given(tree=trees, features=st.lists(feature_sets, min_size=1, max_size=8), spaced=st.booleans())
def test_a_parsed_tree_matches_as_the_tree_evaluates(tree: Tree, features: list[frozenset[str]], spaced: bool) -> None:
    constraint = parse_constraint(render(tree, spaced))
    assert constraint.names() == mentioned(tree)
    for feature_set in features:
        assert constraint.matches(feature_set) == evaluate(tree, feature_set)


@settings(max_examples=300, deadline=None)
@given(tree=trees, features=feature_sets)
def test_canonical_text_parses_back_to_the_same_constraint(tree: Tree, features: frozenset[str]) -> None:
    constraint = parse_constraint(render(tree, spaced=False))
    again = parse_constraint(constraint.text)
    assert again == constraint and again.text == constraint.text
    assert again.matches(features) == constraint.matches(features)


@settings(max_examples=300, deadline=None)
@given(tree=trees, features=feature_sets)
def test_unmet_is_empty_exactly_when_the_features_match(tree: Tree, features: frozenset[str]) -> None:
    constraint = parse_constraint(render(tree, spaced=False))
    assert (constraint.unmet(features) == "") == constraint.matches(features)
