"""An attempt's name read within what the store holds (core/ids.bounded_attempt_key): the same
answer, for any text, as reading each part as parse_job_ref reads a job id (ASCII digits, at
most 19) and bounding the numbers."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from drover.core.ids import bounded_attempt_key, job_of_attempt, parse_attempt_name
from drover.core.limits import MAX_ID, MAX_INDEX


def by_parts(name: str) -> tuple[int, int, int] | None:
    parts = name.split(".")
    if len(parts) != 3 or not all(part.isascii() and part.isdigit() and len(part) <= 19 for part in parts):
        return None
    job_id, index, number = (int(part) for part in parts)
    if not (0 < job_id <= MAX_ID and index <= MAX_INDEX and number <= MAX_ID):
        return None
    return job_id, index, number


NUMBERS = st.one_of(st.integers(min_value=0, max_value=10**21).map(str),
                    st.sampled_from([str(MAX_ID), str(MAX_ID + 1), str(MAX_INDEX), str(MAX_INDEX + 1), "0" * 19 + "1",
                                     "", "0", "007"]))
PARTS = st.one_of(NUMBERS, st.text(st.sampled_from("0123456789.٣¹ _-+\t"), max_size=22))
NAMES = st.one_of(st.lists(PARTS, min_size=1, max_size=4).map(".".join), st.text(max_size=30))


@settings(max_examples=1000, deadline=None)
@given(NAMES)
def test_any_name_is_read_as_its_parts_say(name: str) -> None:
    key = by_parts(name)
    assert bounded_attempt_key(name) == key
    assert job_of_attempt(name) == (key[0] if key is not None else None)
    try:
        assert parse_attempt_name(name) == key
    except ValueError:
        assert key is None


PADDED = "0" * 19 + "1"  # 20 digits, a small number: refused for its length, as parse_job_ref refuses it


def test_names_at_the_edges_are_read_as_their_parts_say() -> None:
    names = [f"{MAX_ID}.{MAX_INDEX}.{MAX_ID}", f"{MAX_ID + 1}.0.1", f"1.{MAX_INDEX + 1}.1", f"1.0.{MAX_ID + 1}",
             f"{PADDED}.0.1", f"1.{PADDED}.1", f"1.0.{PADDED}", "0.0.1", "1.0.0", "007.0.1", "٣.0.1", "1.¹.1",
             " 1.0.1", "1.0.1 ", "1_0.0.1", "+1.0.1", "-1.0.1", "1..1", "1.0", "1.0.1.", ".1.0.1", ""]
    for name in names:
        assert bounded_attempt_key(name) == by_parts(name), name
    assert bounded_attempt_key(f"{MAX_ID}.{MAX_INDEX}.{MAX_ID}") == (MAX_ID, MAX_INDEX, MAX_ID)
    assert bounded_attempt_key(f"{PADDED}.0.1") is None and bounded_attempt_key("007.0.1") == (7, 0, 1)
