"""drover config check: read a cluster's drover.toml as its daemons will, and print every setting
in effect, marking those the file gives; a file the daemons would refuse is reported in one line
(file, line, key) with exit status 1."""

from __future__ import annotations

import os

from drover.cli.common import parser, print_json
from drover.config import Paths

TYPE_CHECKING = False
if TYPE_CHECKING:
    import msgspec

    from drover.config_file import KeyPath, LoadedConfig


def run(command: str, argv: list[str]) -> int:
    p = parser(command, "Check a cluster's drover.toml: `drover config check` prints the settings in effect, "
                        "defaults included, or the first error with its file and line.")
    p.add_argument("action", choices=["check"], help="check: read the file as the daemons do and print the result")
    p.add_argument("--state-dir", help="the cluster's state directory, where drover.toml is (default: yours)")
    args = p.parse_args(argv)
    paths = Paths(os.path.abspath(args.state_dir) if args.state_dir else None)

    import msgspec

    from drover.config_file import read_config

    loaded = read_config(paths.config_file)  # a ConfigError is printed by drover's main, exit status 1
    if args.json:
        print_json({"path": loaded.path, "found": loaded.found, "config": msgspec.to_builtins(loaded.config),
                    "from_file": sorted(".".join(key) for key in loaded.from_file)})
        return 0
    print("\n".join(effective_settings(loaded)))
    return 0


def effective_settings(loaded: LoadedConfig) -> list[str]:
    """The configuration as TOML, each key commented with where its value comes from and what it
    means; unset optional keys are commented out (TOML has no way to write "unset")."""
    from drover.config_schema import QueueSection

    config = loaded.config
    lines = [f"# {loaded.path}: " + ("'file' marks the values it sets; the others are defaults" if loaded.found
                                      else "no such file; every value is a default")]
    lines += _table(("controller",), config.controller, loaded.from_file)
    lines += _table(("execd",), config.execd, loaded.from_file)
    for name, queue in sorted(config.queues.items()):
        lines += _table(("queues", name), queue, loaded.from_file)
    if not config.queues:
        lines += ["", '# [queues.NAME]: none; every job runs in the queue "default", which has no methods',
                  f"# (a queue may set {', '.join(QueueSection.__struct_fields__)})"]
    lines += _table(("scheduler",), config.scheduler, loaded.from_file)
    lines += _table(("compat",), config.compat, loaded.from_file)
    for name, environment in sorted(config.environments.items()):
        lines += _table(("environments", name), environment, loaded.from_file)
    for name, checkpointing in sorted(config.checkpoints.items()):
        lines += _table(("checkpoints", name), checkpointing, loaded.from_file)
    for name, parallel in sorted(config.parallel_environments.items()):
        lines += _table(("parallel_environments", name), parallel, loaded.from_file)
    return lines


def _table(path: KeyPath, values: msgspec.Struct, from_file: frozenset[KeyPath]) -> list[str]:
    """One [table] and the tables nested in it: `key = value  # file|default: description`."""
    import msgspec.inspect

    from drover.config_file import toml_key, toml_value

    info = msgspec.inspect.type_info(type(values))
    assert isinstance(info, msgspec.inspect.StructType)
    rows, nested = [], []
    for field in info.fields:
        value = getattr(values, field.name)
        if isinstance(value, msgspec.Struct):
            nested.append(((*path, field.encode_name), value))
            continue
        origin = "file" if (*path, field.encode_name) in from_file else "default"
        setting = f"{field.encode_name} = {toml_value(value)}" if value is not None else f"# {field.encode_name} (unset)"
        rows.append((setting, f"{origin}: {_description(field.type)}"))
    width = max((len(setting) for setting, _ in rows), default=0)
    lines = ["", f"[{'.'.join(toml_key(part) for part in path)}]"]
    lines += [f"{setting:<{width}}  # {comment}" for setting, comment in rows]
    for inner_path, inner in nested:
        lines += _table(inner_path, inner, from_file)
    return lines


def _description(kind: msgspec.inspect.Type) -> str:
    import msgspec.inspect

    if isinstance(kind, msgspec.inspect.Metadata):
        return str((kind.extra_json_schema or {}).get("description", ""))
    return ""
