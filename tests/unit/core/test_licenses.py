"""Licence requests (sbatch -L, drover submit --licenses) on plain data: counts, sums, remote
names, and bad input refused naming the bad part."""

from __future__ import annotations

import re

import pytest

from drover.core.licenses import MAX_COUNT, describe_licenses, parse_licenses


@pytest.mark.parametrize(("text", "expected"), [
    ("matlab", {"matlab": 1}),
    ("matlab:2", {"matlab": 2}),
    ("matlab:2,foo", {"matlab": 2, "foo": 1}),
    ("foo,matlab:2,foo:3", {"foo": 4, "matlab": 2}),  # a name given twice: the sum
    ("nastran@slurmdb:12", {"nastran@slurmdb": 12}),  # a remote licence keeps its server in its name
    (" a : 1 , b ", {"a": 1, "b": 1}),
    ("fluent-2024.1_x:7", {"fluent-2024.1_x": 7}),
    (f"big:{MAX_COUNT}", {"big": MAX_COUNT}),
])
def test_names_and_counts(text: str, expected: dict[str, int]) -> None:
    assert parse_licenses(text) == expected


@pytest.mark.parametrize(("text", "names"), [
    ("", "no licence named"),
    ("   ", "no licence named"),
    ("matlab:0", "'matlab:0': the count must be from 1"),
    (f"matlab:{MAX_COUNT + 1}", "the count must be from 1"),
    ("matlab:two", "'matlab:two': the count after ':' must be a whole number"),
    ("matlab:-1", "must be a whole number"),
    ("matlab:", "must be a whole number, not ''"),
    ("matlab:٣", "must be a whole number"),
    ("matlab:1:2", "must be a whole number, not '1:2'"),
    ("a,,b", "an empty licence between commas"),
    ("a,", "an empty licence between commas"),
    (":3", "'' is not a licence name"),
    ("mat lab", "'mat lab' is not a licence name"),
    ("a=2", "'a=2' is not a licence name"),
    ("a|b", "one of several licences"),
    (f"a:{MAX_COUNT},a", "more than the limit"),
])
def test_bad_requests_name_the_bad_part(text: str, names: str) -> None:
    with pytest.raises(ValueError, match=re.escape(names)):
        parse_licenses(text)


def test_describe_sorts_by_name() -> None:
    assert describe_licenses({"matlab": 2, "foo": 1}) == "foo:1,matlab:2"
    assert describe_licenses({}) == ""
    assert parse_licenses(describe_licenses({"x@srv": 3, "a": 1})) == {"a": 1, "x@srv": 3}
