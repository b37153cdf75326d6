"""`drover submit --environment A+B` (Altair Accelerator's named environments, composed with '+'):
the request names them in order; a name that cannot be one is a usage error, at once; the
controller refuses one the cluster does not define."""

from __future__ import annotations

import pathlib

import pytest

from drover.cli.commands.submit import _with_directives, build_parser, jobs_from_arguments
from drover.controller.handlers.submit import known_environments
from drover.core.errors import BadRequest


def test_accelerator_environments_compose_with_plus_in_order() -> None:
    args = build_parser("submit").parse_args(["--environment", "gcc13+cuda"])
    (job,) = jobs_from_arguments(args, ["true"])
    assert job["environments"] == ["gcc13", "cuda"]
    (plain,) = jobs_from_arguments(build_parser("submit").parse_args([]), ["true"])
    assert "environments" not in plain


def test_accelerator_environments_in_a_directive(tmp_path: pathlib.Path) -> None:
    parser = build_parser("submit")
    script = "#!/bin/bash\n#DROVER --environment tools\ntrue\n"
    path = tmp_path / "job.sh"
    path.write_text(script)
    args = _with_directives(parser, parser.parse_args([str(path)]), [str(path)], script)
    (job,) = jobs_from_arguments(args, [], script)
    assert job["environments"] == ["tools"]


@pytest.mark.parametrize("value", ["a++b", "+a", "a+", "a b", "-x", "a/b"])
def test_accelerator_environments_a_bad_name_is_a_usage_error(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser("submit").parse_args([f"--environment={value}"])
    assert exited.value.code == 2 and "an environment's name is 1 to 64" in capsys.readouterr().err


def test_accelerator_environments_unknown_or_twice_is_refused_by_the_controller() -> None:
    defined = {"cuda": object(), "gcc13": object()}
    assert known_environments(["gcc13", "cuda"], defined, BadRequest) == ["gcc13", "cuda"]
    with pytest.raises(BadRequest, match=r"unknown environment 'gcc12' \(--environment\); this cluster has cuda, gcc13"):
        known_environments(["gcc12"], defined, BadRequest)
    with pytest.raises(BadRequest, match="this cluster defines none"):
        known_environments(["gcc13"], {}, BadRequest)
    with pytest.raises(BadRequest, match="names an environment twice: cuda\\+cuda"):
        known_environments(["cuda", "cuda"], defined, BadRequest)


def test_accelerator_environments_in_drover_config_and_bad_ones_refused() -> None:
    from drover.cli.commands.config import effective_settings
    from drover.config_file import ConfigError, parse_config

    loaded = parse_config('[environments.gcc13]\nsetup = "/opt/env/gcc13.sh"\n')
    lines = effective_settings(loaded)
    assert "[environments.gcc13]" in lines
    assert any(line.startswith('setup = "/opt/env/gcc13.sh"') and "file:" in line for line in lines)
    with pytest.raises(ConfigError, match="setup must be an absolute path"):
        parse_config('[environments.gcc13]\nsetup = "gcc13.sh"\n')
    with pytest.raises(ConfigError, match="an environment's name is 1 to 64"):
        parse_config('[environments."a+b"]\nsetup = "/x"\n')
