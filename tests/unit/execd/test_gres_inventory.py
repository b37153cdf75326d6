"""The node's generic resources and features (execd/gres_inventory.py): configured, found by a
fake nvidia-smi or in a fake /dev, and bad entries refused with the key named."""

from __future__ import annotations

import os
import pathlib
import re
import sys

import pytest

from drover.core.gres import Device
from drover.execd.gres_inventory import (
    NodeInventory,
    describe_devices,
    gpu_type,
    node_features,
    node_gres,
)
from drover.spool.architecture import architecture

NO_SMI = ("/nonexistent/nvidia-smi",)


def fake_smi(tmp_path: pathlib.Path, output: str, status: int = 0, delay_s: float = 0) -> tuple[str, ...]:
    """A stand-in for nvidia-smi that prints `output` and exits with `status`."""
    script = tmp_path / "nvidia-smi"
    script.write_text(f"#!{sys.executable}\nimport sys, time\ntime.sleep({delay_s})\n"
                      f"sys.stdout.write({output!r})\nsys.exit({status})\n")
    script.chmod(0o755)
    return (str(script), "--query-gpu=index,name", "--format=csv,noheader")


def fake_dev(tmp_path: pathlib.Path, *names: str) -> str:
    dev = tmp_path / f"dev{len(list(tmp_path.glob('dev*')))}"
    dev.mkdir()
    for name in names:
        (dev / name).touch()
    return str(dev)


def test_configured_devices_are_the_nodes_and_nothing_is_detected(tmp_path: pathlib.Path) -> None:
    dev = fake_dev(tmp_path, "nvidia0", "nvidia1")
    configured = node_gres(["gpu:a100:2", "gpu:v100:1", "nic:1"], command=NO_SMI, dev_dir=dev)
    assert configured == (Device("gpu", 0, "a100"), Device("gpu", 1, "a100"), Device("gpu", 2, "v100"),
                          Device("nic", 0))
    assert node_gres([], command=fake_smi(tmp_path, "0, Tesla T4\n"), dev_dir=dev) == ()


@pytest.mark.parametrize(("entry", "words"), [
    ("gpu:0", "the count must be 1 or more"), ("gpu:a:b:c", "write name"), ("9gpu", "the name '9gpu'"),
    ("gpu:2,nic:1", "one resource an entry"),
])
def test_a_bad_configured_entry_is_refused_with_the_key_named(entry: str, words: str) -> None:
    with pytest.raises(ValueError, match=f"^\\[execd\\] gres '{entry}': .*{words}"):
        node_gres(["gpu:1", entry], command=NO_SMI)


def test_nvidia_smis_gpus_are_typed_by_model_in_index_order(tmp_path: pathlib.Path) -> None:
    output = "1, Tesla V100-PCIE-16GB\n0, NVIDIA A100-SXM4-40GB\n\n2, NVIDIA GeForce RTX 3090\n"
    devices = node_gres(None, command=fake_smi(tmp_path, output), dev_dir=fake_dev(tmp_path, "nvidia0"))
    assert devices == (Device("gpu", 0, "a100"), Device("gpu", 1, "v100"), Device("gpu", 2, "rtx3090"))


@pytest.mark.parametrize(("model", "kind"), [
    ("NVIDIA A100-SXM4-40GB", "a100"), ("Tesla V100-PCIE-16GB", "v100"), ("NVIDIA GeForce RTX 3090", "rtx3090"),
    ("NVIDIA H100 80GB HBM3", "h100"), ("Tesla T4", "t4"), ("NVIDIA L4", "l4"), ("Quadro RTX 6000", "rtx6000"),
    ("NVIDIA RTX A6000", "rtxa6000"), ("NVIDIA GeForce GTX 1080 Ti", "gtx1080"), ("NVIDIA", ""),
])
def test_a_gpus_type_is_its_model(model: str, kind: str) -> None:
    assert gpu_type(model) == kind


@pytest.mark.parametrize(("output", "status"), [
    ("0, Tesla T4\n", 9),  # no driver loaded: nvidia-smi fails
    ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver\n", 0),
    ("x, Tesla T4\n", 0),
])
def test_a_failing_nvidia_smi_falls_back_to_the_device_files(tmp_path: pathlib.Path, output: str,
                                                            status: int) -> None:
    dev = fake_dev(tmp_path, "nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "nvidia-modeset", "null")
    assert node_gres(None, command=fake_smi(tmp_path, output, status), dev_dir=dev) == (
        Device("gpu", 0), Device("gpu", 1))


def test_a_hung_nvidia_smi_is_given_up(tmp_path: pathlib.Path) -> None:
    command = fake_smi(tmp_path, "0, Tesla T4\n", delay_s=30)
    assert node_gres(None, command=command, dev_dir=fake_dev(tmp_path, "nvidia3"), timeout_s=0.5) == (
        Device("gpu", 0),)


def test_no_nvidia_smi_and_no_device_files_is_no_gpus(tmp_path: pathlib.Path) -> None:
    assert node_gres(None, command=NO_SMI, dev_dir=fake_dev(tmp_path, "null", "nvidiactl")) == ()
    assert node_gres(None, command=NO_SMI, dev_dir=str(tmp_path / "missing")) == ()
    assert node_gres(None, command=NO_SMI, dev_dir=fake_dev(tmp_path, "nvidia0")) == (Device("gpu", 0),)


def test_nvidia_smi_is_looked_for_on_the_path(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_smi(tmp_path, "0, NVIDIA L4\n")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    assert node_gres(None, dev_dir=str(tmp_path / "missing")) == (Device("gpu", 0, "l4"),)


def test_the_node_always_has_its_architecture() -> None:
    assert node_features([]) == [f"arch={architecture()}"]
    assert node_features(["ib", "rack=3", "ib", "avx512"]) == ["ib", "rack=3", "avx512", f"arch={architecture()}"]
    assert architecture("x86_64") == "lx-amd64" and architecture("aarch64") == "lx-arm64"
    assert architecture("riscv64") == "lx-riscv64"


@pytest.mark.parametrize("feature", ["", "two words", "a&b", "a|b", "(a)", "!a", "a,b", "a*2", "[a]", "tab\t"])
def test_a_bad_feature_is_refused_with_the_key_named(feature: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(f'[execd] features {feature!r}')}: a feature must be a word"):
        node_features(["ok", feature])


def test_the_architecture_is_the_nodes_own() -> None:
    with pytest.raises(ValueError, match="\\[execd\\] features 'arch=lx-x86': the node's arch= is its own"):
        node_features(["arch=lx-x86"])


def test_the_inventory_is_in_the_hellos_forms(tmp_path: pathlib.Path) -> None:
    inventory = NodeInventory.of(["nic:1", "gpu:a100:2", "gpu:1"], ["ib"])
    assert inventory.gres == ["gpu:a100", "gpu:a100", "gpu", "nic"]
    assert inventory.features == ["ib", f"arch={architecture()}"]
    assert inventory.described == "nic:1,gpu:a100:2,gpu:1"
    assert describe_devices([]) == "none"
    with pytest.raises(ValueError, match="\\[execd\\] gres"):
        NodeInventory.of(["gpu:0"], [])
    with pytest.raises(ValueError, match="\\[execd\\] features"):
        NodeInventory.of([], ["a b"])
