"""Which job scripts the shepherd execs directly (shepherd/launch.py): exactly the line the client
writes for a command, `exec` and the words quoted by shlex.quote; everything else stays bash's."""

from __future__ import annotations

import shlex

from hypothesis import given
from hypothesis import strategies as st

from drover.shepherd.launch import command_of, environment


def client_script(argv: list[str]) -> bytes:
    """What `drover submit -- ARGV` stores (cli/commands/submit.py)."""
    return ("exec " + " ".join(shlex.quote(word) for word in argv) + "\n").encode()


words = st.text(st.characters(blacklist_characters="\n\x00", blacklist_categories=("Cs",)), max_size=12)


@given(st.lists(words, min_size=1, max_size=6).filter(lambda argv: not argv[0].startswith("-")))
def test_every_command_the_client_writes_is_read_back_whole(argv: list[str]) -> None:
    assert command_of(client_script(argv)) == argv


def test_gridengine_binary_jobs_after_a_shell_line_are_commands_too() -> None:
    assert command_of(b"#!/bin/sh\nexec /bin/echo 'a b'\n") == ["/bin/echo", "a b"]


def test_anything_bash_would_expand_or_read_as_an_option_stays_a_script() -> None:
    for script in [b"exec echo $HOME\n", b"exec echo *\n", b"exec ls ~\n", b'exec echo "a b"\n',
                   b"exec -a name sleep 1\n", b"exec\n", b"echo hi\n", b"exec a\nexec b\n", b"exec a",
                   b"exec 'unterminated\n", b"exec a; rm -rf x\n", b"exec a > out\n", b"\xff\xfe\n",
                   b"#!/usr/bin/python3\nexec a\n", client_script(["python3", "-c", "1\n2"])]:
        assert command_of(script) is None, script


def test_the_environment_bash_would_have_handed_on() -> None:
    assert environment({"A": "1"}, "/w") == {"A": "1", "PWD": "/w", "SHLVL": "0"}
    assert environment({"SHLVL": "3", "PWD": "/elsewhere"}, "/w") == {"SHLVL": "3", "PWD": "/w"}
