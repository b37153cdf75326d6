"""sinfo: the cluster's queues (Slurm's partitions, with their state, time limit and nodes) and nodes, every option of the real command
parsed as src/sinfo/opts.c does, every `-o` letter and `-O` name printed (sinfo_columns.py)."""

from __future__ import annotations

import os
import string
import sys
import time
from dataclasses import replace

from drover.compat.optiontable import Arity, Mark, Option
from drover.compat.slurm import columns as fmt
from drover.compat.slurm.common import (
    CONNECT_FAILURE,
    VERSION,
    Refused,
    command_line,
    environment_defaults,
    iterate_seconds,
    split_list,
)
from drover.compat.slurm.hostlist import expand
from drover.compat.slurm.sinfo_columns import COLUMNS, LONG_STATES, Group, groups
from drover.core.errors import DroverError, Unreachable

S, A, M, R = Mark.SUPPORTED, Mark.APPROXIMATED, Mark.MEANINGLESS, Mark.REFUSED
NONE, REQ, OPT = Arity.NONE, Arity.REQUIRED, Arity.OPTIONAL
ONE_CLUSTER = "Drover is one cluster"

OPTIONS = [
    Option(("-a", "--all"), NONE, M, "no partition is hidden"),
    Option(("--autocomplete",), REQ, S, "", "OPTION"),
    Option(("-d", "--dead"), NONE, S, "nodes that do not respond"),
    Option(("-e", "--exact"), NONE, S, "nodes of other CPU counts or memory get lines of their own"),
    Option(("--federation",), NONE, M, ONE_CLUSTER),
    Option(("-F", "--future"), NONE, M, "Drover has no FUTURE nodes"),
    Option(("--help",), NONE, S),
    Option(("--helpformat",), NONE, S),
    Option(("--helpFormat",), NONE, S),
    Option(("--helpstate",), NONE, S),
    Option(("--hide",), NONE, M, "no partition is hidden"),
    Option(("-i", "--iterate"), REQ, S, "", "SECONDS"),
    Option(("--local",), NONE, M, ONE_CLUSTER),
    Option(("-l", "--long"), NONE, S),
    Option(("-M", "--cluster", "--clusters"), REQ, M, ONE_CLUSTER, "CLUSTER_NAME"),
    Option(("-n", "--nodes"), REQ, S, "Slurm's hostlist syntax", "NODES"),
    Option(("--noconvert",), NONE, M, "sizes are in MiB already"),
    Option(("-h", "--noheader"), NONE, S),
    Option(("-N", "--Node"), NONE, S),
    Option(("-o", "--format"), REQ, S, "every letter, `%[.][SIZE]LETTER`", "FORMAT"),
    Option(("-O", "--Format"), REQ, S, "every name, `:[.]WIDTH[SUFFIX]`", "NAME[:[.]SIZE],..."),
    Option(("-p", "--partition"), REQ, S, "a Drover queue", "PARTITION"),
    Option(("-r", "--responding"), NONE, S),
    Option(("-R", "--list-reasons"), NONE, S),
    Option(("-s", "--summarize"), NONE, S),
    Option(("-S", "--sort"), REQ, S, "letters of `-o`, `-` for descending", "SORT_LIST"),
    Option(("-t", "--states"), REQ, S, "idle, mix, alloc, drain, drng, down…", "STATES"),
    Option(("-T", "--reservation"), NONE, S, "Drover has no reservations: the header alone"),
    Option(("--usage",), NONE, S),
    Option(("-v", "--verbose"), NONE, M, "nothing more to say"),
    Option(("-V", "--version"), NONE, S),
    Option(("--json",), OPT, R, "the data_parser output is not produced", "[DATA_PARSER]"),
    Option(("--yaml",), OPT, R, "the data_parser output is not produced", "[DATA_PARSER]"),
]
ENVIRONMENT = {"SINFO_ALL": "all", "SINFO_FEDERATION": "federation", "SINFO_FUTURE": "future",
               "SINFO_LOCAL": "local", "SINFO_PARTITION": "partition", "SINFO_SORT": "sort"}
FORMATS = {  # src/sinfo/opts.c: the long-form defaults
    "summarize": "partition:9 ,available:.5 ,time:.10 ,nodeaiot:.16 ,nodelist:0",
    "node": "nodelist:0 ,nodes:.6 ,partition:.9 ,statecompact:6",
    "node_long": ("nodelist:0 ,nodes:.6 ,partition:.9 ,statelong:.11 ,cpus:4 ,socketcorethread:.8 ,memory:.6 ,"
                  "disk:.8 ,weight:.6 ,features:.8 ,reason:20"),
    "reasons": "reason:20 ,user:9 ,timestamp:19 ,nodelist:0",
    "reasons_long": "reason:20 ,userlong:12 ,timestamp:19 ,statecompact:6 ,nodelist:0",
    "default": "partition:9 ,available:.5 ,time:.10 ,nodes:.6 ,statecompact:.6 ,nodelist:0",
    "default_long": ("partition:9 ,available:.5 ,time:.10 ,size:.10 ,root:.4 ,oversubscribe:.8 ,groups:.10 ,"
                     "nodes:.6 ,statelong:.11 ,reservation:.11 ,nodelist:0"),
}
LETTERS = fmt.by_letter(COLUMNS)
NAMES = fmt.by_name(COLUMNS)
STATE_WORDS = {**{word: word for word in LONG_STATES}, **{long: word for word, long in LONG_STATES.items()},
               "allocated": "alloc", "drained": "drain", "draining": "drng", "mixed": "mix", "drain": "drain"}


def every_letter() -> str:
    """`-o %all`, as src/sinfo/opts.c spells it out: `%a|%b|`…`%z|`, then `%A |`…`%Y |%Z `; a
    letter sinfo lacks is left out with the text that follows it."""
    lower = [f"%{letter}|" for letter in string.ascii_lowercase]
    upper = [f"%{letter} |" for letter in string.ascii_uppercase[:-1]] + ["%Z "]
    return "".join(token for token in lower + upper if token[1] in LETTERS)


def parse_letters(text: str, errors: list[str]) -> list[fmt.Spec[Group]]:
    return fmt.parse_letters(every_letter() if text.lower() == "%all" else text, LETTERS, errors)


def parse_names(text: str, errors: list[str]) -> list[fmt.Spec[Group]]:
    """-O: a name `All` (with or without `:WIDTH`) stands for every `-o` letter, as `%all`."""
    out: list[fmt.Spec[Group]] = []
    for token in text.split(","):
        if token.partition(":")[0].lower() == "all":
            out += fmt.parse_letters(every_letter(), LETTERS, errors)
        elif token:
            out += fmt.parse_names(token, NAMES, errors)
    return out


def specs(values: dict[str, str | None], flags: set[str], environ: dict[str, str], errors: list[str]
          ) -> list[fmt.Spec[Group]]:
    if values.get("format"):
        return parse_letters(values["format"] or "", errors)
    if values.get("Format"):
        return parse_names(values["Format"] or "", errors)
    long = "long" in flags
    if "summarize" in flags:
        chosen = FORMATS["summarize"]
    elif "Node" in flags:
        chosen = FORMATS["node_long" if long else "node"]
    elif "list-reasons" in flags:
        chosen = FORMATS["reasons_long" if long else "reasons"]
    elif environ.get("SINFO_FORMAT"):
        return parse_letters(environ["SINFO_FORMAT"], errors)
    else:
        chosen = FORMATS["default_long" if long else "default"]
    return fmt.parse_names(chosen, NAMES, errors)


def select(lines: list[Group], values: dict[str, str | None], flags: set[str]) -> list[Group]:
    out = lines
    if values.get("nodes"):
        wanted = set(expand(values["nodes"] or ""))
        out = [replace(g, nodes=tuple(n for n in g.nodes if n.name in wanted)) for g in out]
        out = [g for g in out if g.nodes]
    if values.get("states"):
        words = set()
        for word in split_list((values["states"] or "").lower()):
            if word == "all":
                words |= set(LONG_STATES)
            elif word.rstrip("*") in STATE_WORDS:
                words.add(STATE_WORDS[word.rstrip("*")])
            else:
                raise Refused(f"Invalid node state specified: {word}")
        out = [g for g in out if g.state in words]
    if "dead" in flags:
        out = [g for g in out if g.state == "down"]
    if "responding" in flags:
        out = [g for g in out if g.state != "down"]
    if "list-reasons" in flags:
        out = [g for g in out if g.state in ("down", "drain", "drng") or any(n.reason for n in g.nodes)]
    return out


def main(argv: list[str] | None = None) -> int:
    environ = dict(os.environ)
    parsed = command_line("sinfo", argv, OPTIONS)
    if isinstance(parsed, int):
        return parsed
    found, operands = parsed
    if "SINFO_ALL" in environ and "SINFO_PARTITION" in environ:
        return _error("Conflicting options, SINFO_ALL and SINFO_PARTITION, specified. Please choose one or the other.")
    found = environment_defaults(OPTIONS, ENVIRONMENT, environ) + found
    values: dict[str, str | None] = {}
    flags: set[str] = set()
    for option, value in found:
        if option.mark is Mark.REFUSED:
            return _error(f"{option.names[-1]} is not supported by Drover: {option.note}")
        if option.arity is Arity.NONE:
            flags.add(option.key)
        else:
            values[option.key] = value
    if operands:
        return _error(f"Unrecognized option: {operands[0]}")
    early = _informational(flags)
    if early is not None:
        return early
    if values.get("format") and values.get("Format"):
        return _error("-O (--Format) is incompatible with -o (--format)")
    try:
        iterate = iterate_seconds(values.get("iterate"))
        if values.get("iterate") is not None and iterate <= 0:
            raise Refused(f"Error: invalid entry for --iterate={values['iterate']}")
        while True:
            if iterate:
                print(time.strftime("%a %b %d %H:%M:%S %Y"))
            print_once(values, flags, environ)
            if not iterate:
                return 0
            print()
            sys.stdout.flush()
            time.sleep(iterate)
    except Refused as error:
        return _error(str(error))
    except Unreachable:
        print(f"slurm_load_partitions: {CONNECT_FAILURE}", file=sys.stderr)
        return 1
    except (DroverError, ValueError) as error:
        return _error(str(error))
    except KeyboardInterrupt:
        return 130


def print_once(values: dict[str, str | None], flags: set[str], environ: dict[str, str]) -> None:
    from drover.client.client import Client

    with Client() as client:
        nodes = client.nodes()
        queues = sorted(client.queues(), key=lambda queue: (queue.name != "default", queue.name))
    if values.get("partition"):
        wanted = split_list(values["partition"] or "")
        queues = [queue for queue in queues if queue.name in wanted]
    errors: list[str] = []
    chosen = specs(values, flags, environ, errors)
    for message in errors:
        print(f"sinfo: error: {message}", file=sys.stderr)
    if "reservation" in flags:  # Drover has no reservations: the header of an empty list
        print("RESV_NAME     STATE           START_TIME             END_TIME     DURATION  NODELIST")
        return
    out: list[str] = []
    if "noheader" not in flags:
        out.append(fmt.header(chosen))
    lines = select(groups(queues, nodes, per_node="Node" in flags, exact="exact" in flags), values, flags)
    if "summarize" in flags:
        lines = [Group(q.name, q.name == "default", tuple(n for g in lines if g.partition == q.name for n in g.nodes),
                       "idle", q) for q in queues if any(g.partition == q.name for g in lines)]
    default_format = not values.get("format") and not values.get("Format") and not (
        environ.get("SINFO_FORMAT") and not flags & {"summarize", "Node", "list-reasons"})
    if default_format and "list-reasons" not in flags:
        chosen = fitted(chosen, lines, nodes_too="Node" in flags)
    chosen = starred(chosen)
    if values.get("sort"):
        for key in reversed(split_list(values["sort"] or "")):
            column = LETTERS.get(key.lstrip("+-#"))
            if column is None:
                raise Refused(f"Invalid sort specification: {key}")
            lines.sort(key=column.value, reverse=key.startswith("-"))
    out += [fmt.line(chosen, line) for line in lines]
    print("\n".join(out))


MIN_FIELD = 9  # src/sinfo/print.c: MIN_PART_FIELD_SIZE, MIN_NODE_FIELD_SIZE


def fitted(specs: list[fmt.Spec[Group]], lines: list[Group], nodes_too: bool) -> list[fmt.Spec[Group]]:
    """sinfo's default formats size the partition column (and, with -N, the node list column)
    to the longest value, at least 9, as `_set_part_field_size` and `_set_node_field_size` do."""
    part_width = max([MIN_FIELD] + [len(g.partition) + g.default for g in lines])
    node_width = max([MIN_FIELD] + [len(NAMES["nodelist"].value(g)) for g in lines])
    out = []
    for spec in specs:
        name = spec.column.name if spec.column else ""
        if name in ("Partition", "PartitionName"):
            spec = fmt.Spec(spec.column, part_width, spec.right, spec.suffix)
        elif nodes_too and name in ("NodeList", "NodeHost"):
            spec = fmt.Spec(spec.column, node_width, spec.right, spec.suffix)
        out.append(spec)
    return out


def starred(specs: list[fmt.Spec[Group]]) -> list[fmt.Spec[Group]]:
    """The default partition's `*` survives a narrow column: it replaces the last character that
    fits, as `_print_partition` does."""
    out = []
    for spec in specs:
        if spec.column is not None and spec.column.name == "Partition" and spec.width > 0:
            width = spec.width

            def value(group: Group, width: int = width) -> str:
                if group.default and len(group.partition) >= width:
                    return group.partition[:width - 1] + "*"
                return group.partition + ("*" if group.default else "")

            spec = fmt.Spec(fmt.Column("Partition", "P", "PARTITION", value), spec.width, spec.right, spec.suffix)
        out.append(spec)
    return out


def _error(message: str) -> int:
    print(f"sinfo: error: {message}", file=sys.stderr)
    return 1


def _informational(flags: set[str]) -> int | None:
    if "version" in flags:
        print(VERSION)
        return 0
    if "help" in flags or "usage" in flags:
        print("Usage: sinfo " + " ".join(f"[{', '.join(o.names)}]" for o in OPTIONS))
        return 0
    if "helpformat" in flags:
        print(" ".join(f"%{letter}" for letter in sorted(LETTERS)))
        return 0
    if "helpFormat" in flags:
        print(" ".join(column.name for column in COLUMNS))
        return 0
    if "helpstate" in flags:
        print("\n".join(LONG_STATES.values()))
        return 0
    return None


if __name__ == "__main__":
    raise SystemExit(main())
