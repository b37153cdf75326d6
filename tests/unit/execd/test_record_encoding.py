"""The node daemon's JSON records (execd/record_encoding.py, through spool/atomic.py
`write_json`): encoded by msgspec, a sixth of the standard library's cost for a job's config, and
read back as the same values by both readers; and the spool's reads (spool/atomic.py)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.attempt_config import attempt_config

from drover.execd.decoders import RECORDS
from drover.execd.record_encoding import encoded
from drover.records import AttemptConfig
from drover.spool.atomic import read_json, write_json


def test_a_config_is_written_as_the_same_json_values_and_read_back_by_both_readers(tmp_path: Path) -> None:
    config = attempt_config(str(tmp_path), "7.0.1")
    config["environment"] = {"LANG": "C.UTF-8", "NAME": "Zoë 東京", "EMPTY": ""}
    path = str(tmp_path / "config")
    write_json(path, config, encode=encoded)
    assert read_json(path) == config == json.loads(json.dumps(config))
    assert RECORDS.decode(Path(path).read_bytes(), AttemptConfig) == config
    assert "Zoë 東京".encode() in Path(path).read_bytes()  # UTF-8, not escaped


def test_it_is_compact_json() -> None:
    assert encoded({"a": [1, 2.5, None, True], "b": {"c": "d"}}) == b'{"a":[1,2.5,null,true],"b":{"c":"d"}}'


def test_what_msgspec_cannot_encode_is_written_by_the_standard_library_as_before() -> None:
    assert encoded({True: 1, None: 2}) == json.dumps({True: 1, None: 2}, separators=(",", ":")).encode()
    assert json.loads(encoded({"n": 10 ** 40})) == {"n": 10 ** 40}


def test_records_are_read_back_whole_as_a_file_objects_reader_gives_them(tmp_path: Path) -> None:
    from drover.spool.atomic import read_bytes, read_text, write_atomically

    path = str(tmp_path / "trace")
    big = b"".join(b"%06d line\r\n" % n for n in range(20000))  # past one read's 64 KiB
    write_atomically(path, big + b"last\rend \xff")
    assert read_bytes(path) == big + b"last\rend \xff"
    with open(path, encoding="utf-8", errors="replace") as file:
        assert read_text(path) == file.read()
    assert read_text(str(tmp_path / "none")) is None and read_json(str(tmp_path / "none")) is None
