"""Every number drover.toml holds has a range: the schema says it, `drover config check` (and
every daemon that reads the file) refuses a value outside it, naming the key and the range. A
negative heartbeat, a node timeout below zero or a grace of 10^20 seconds are no settings anyone
means; taken, they left a node DOWN for ever and a log full of the same warning."""

from __future__ import annotations

import math

import msgspec
import msgspec.inspect as mi
import pytest

from drover.config_file import ConfigError, parse_config
from drover.config_schema import DroverConfig


def _numbers(info: mi.Type, path: str) -> list[tuple[str, mi.IntType | mi.FloatType]]:
    """Every int and float of the schema, by where it is in the file."""
    if isinstance(info, mi.Metadata):
        return _numbers(info.type, path)
    if isinstance(info, mi.IntType | mi.FloatType):
        return [(path, info)]
    if isinstance(info, mi.UnionType):
        return [found for each in info.types for found in _numbers(each, path)]
    if isinstance(info, mi.ListType):
        return _numbers(info.item_type, path + "[]")
    if isinstance(info, mi.DictType):
        return _numbers(info.value_type, path + ".NAME")
    if isinstance(info, mi.StructType):
        return [found for field in info.fields
                for found in _numbers(field.type, f"{path}.{field.encode_name}" if path else field.encode_name)]
    return []


NUMBERS = _numbers(mi.type_info(DroverConfig), "")


def _low(number: mi.IntType | mi.FloatType) -> float | None:
    return number.ge if number.ge is not None else number.gt


def _high(number: mi.IntType | mi.FloatType) -> float | None:
    return number.le if number.le is not None else number.lt


def test_the_walk_finds_the_numbers_of_every_kind_of_table() -> None:
    paths = {path for path, _ in NUMBERS}
    assert {"controller.heartbeat_s", "execd.rlimits.nofile", "queues.NAME.nice", "licenses.NAME",
            "scheduler.shares.NAME", "parallel_environments.NAME.slots"} <= paths
    assert len(NUMBERS) > 50


@pytest.mark.parametrize(("path", "number"), NUMBERS, ids=[path for path, _ in NUMBERS])
def test_every_number_of_the_schema_has_a_range(path: str, number: mi.IntType | mi.FloatType) -> None:
    low, high = _low(number), _high(number)
    assert low is not None and high is not None, f"{path} has no range ({low}..{high})"
    assert low < high and math.isfinite(low) and math.isfinite(high)


def _toml(path: str, value: str) -> str:
    """A drover.toml that sets `path` to `value` (NAME: a name; a required key set with it)."""
    *table, key = path.replace("NAME", "x").split(".")
    if table == ["parallel_environments", "x"] and key != "slots":
        return f"[{'.'.join(table)}]\nslots = 1\n{key} = {value}\n"
    return f"[{'.'.join(table)}]\n{key} = {value}\n" if table else f"{key} = {value}\n"


def _text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)


def _toml_number(value: float, number: mi.IntType | mi.FloatType) -> str:
    if isinstance(number, mi.IntType):
        return str(int(value))
    return repr(float(value))


@pytest.mark.parametrize(("path", "number"), NUMBERS, ids=[path for path, _ in NUMBERS])
def test_a_value_outside_its_range_is_refused_naming_the_key_and_the_range(
        path: str, number: mi.IntType | mi.FloatType) -> None:
    low, high = _low(number), _high(number)
    assert low is not None and high is not None
    key = path.rsplit(".", 1)[-1].replace("NAME", "x")
    step = 1 if isinstance(number, mi.IntType) else max(abs(high) * 0.5, 1.0)
    for bad in (low - step, high + step):
        with pytest.raises(ConfigError) as caught:
            parse_config(_toml(path, _toml_number(bad, number)), "drover.toml")
        message = str(caught.value)
        assert key in message and f"from {_text(low)} to {_text(high)}" in message, message
    # Both ends are within the range (a rule between two keys of a table, such as the headers'
    # bound counting the request line's, may still refuse one end against the other's default).
    for good in (low, high):
        try:
            parse_config(_toml(path, _toml_number(good, number)), "drover.toml")
        except ConfigError as error:
            assert "must be" in str(error) and " from " not in str(error).split("must be", 1)[1][:40], error


@pytest.mark.parametrize(("text", "expected"), [
    ("[controller]\nheartbeat_s = -5\n",
     "drover.toml:2: [controller] heartbeat_s must be a number from 0.1 to 3600, not -5"),
    ("[controller]\nnode_timeout_s = -1\n",
     "drover.toml:2: [controller] node_timeout_s must be a number from 1 to 2592000, not -1"),
    ("[controller]\nkill_grace_s = 1e20\n",
     "drover.toml:2: [controller] kill_grace_s must be a number from 0 to 3600, not 1e+20"),
    ("[controller]\nkill_grace_s = nan\n",
     "drover.toml:2: [controller] kill_grace_s must be a number from 0 to 3600, not nan"),
    ("[controller]\nheartbeat_s = inf\n",
     "drover.toml:2: [controller] heartbeat_s must be a number from 0.1 to 3600, not inf"),
])
def test_the_settings_that_broke_a_cluster_are_refused(text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, "drover.toml")
    assert str(caught.value) == expected


def test_the_defaults_are_all_within_their_ranges() -> None:
    msgspec.convert(msgspec.to_builtins(DroverConfig()), DroverConfig)
