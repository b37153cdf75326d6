"""The generators of scripts/ (not a package), loaded by path for the tests that hold a
generated file to its source, and the check each makes of its own file."""

from __future__ import annotations

import importlib.util
import pathlib
import subprocess
import sys
import types

ROOT = pathlib.Path(__file__).resolve().parents[2]


def script_module(name: str) -> types.ModuleType:
    """scripts/NAME.py as a module, as its own run would see it."""
    sys.path.insert(0, str(ROOT / "scripts"))  # where a script finds the others (generated.py)
    try:
        spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # a dataclass of the script's looks its module up there
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(ROOT / "scripts"))


def assert_current(name: str) -> None:
    """`scripts/NAME.py --check` passes: the file it writes is what it would write now."""
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / f"{name}.py"), "--check"],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
