"""What the node tells the controller it has besides CPUs and memory: its generic resources
(drover.toml's [execd] gres, or else the NVIDIA GPUs it finds) and its features ([execd]
features, and always arch=<Grid Engine's architecture name>)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from drover.core.gres import Device, hello_form, node_devices
from drover.spool.architecture import architecture

NVIDIA_SMI = ("nvidia-smi", "--query-gpu=index,name", "--format=csv,noheader")
NVIDIA_SMI_TIMEOUT_S = 5.0  # a wedged driver hangs nvidia-smi; the node starts without it then
_DEVICE_FILE = re.compile(r"nvidia([0-9]+)")
# Words of NVIDIA's model names that say nothing of the model: "NVIDIA GeForce RTX 3090".
_BRANDS = {"nvidia", "tesla", "geforce", "quadro"}
# What a feature may not hold: the operators of --constraint (& | ( ) ! [ ] *), the comma that
# separates features in listings, and white space.
_FEATURE_FORBIDDEN = re.compile(r"[&|()!\[\]*,\s]")


@dataclass(frozen=True, slots=True)
class NodeInventory:
    """What the node announces besides CPUs and memory, in the Hello's forms."""

    gres: list[str]  # one a device, by name then index: "gpu:a100", "nic"
    features: list[str]
    described: str  # the devices for the node's log: "gpu:a100:2,nic:1"

    def gpus(self) -> int:
        """How many GPUs the node has (gpu 0 .. N-1)."""
        return sum(1 for device in self.gres if device.split(":")[0] == "gpu")

    @classmethod
    def of(cls, gres: list[str] | None, features: list[str]) -> NodeInventory:
        """From drover.toml's [execd] gres and features; a bad entry is a ValueError naming its key."""
        devices = node_gres(gres)
        return cls(hello_form(devices), node_features(features), describe_devices(devices))


def node_gres(configured: list[str] | None, *, command: Sequence[str] = NVIDIA_SMI, dev_dir: str = "/dev",
              timeout_s: float = NVIDIA_SMI_TIMEOUT_S) -> tuple[Device, ...]:
    """The node's devices: those configured, when [execd] gres is set (an empty list: none);
    else its NVIDIA GPUs as nvidia-smi lists them, typed by model (gpu_type); else one untyped
    GPU a /dev/nvidiaN file; else none. A bad configured entry is a ValueError naming the key."""
    if configured is not None:
        return node_devices(configured, option="[execd] gres")
    return _nvidia_smi_gpus(command, timeout_s) or _device_file_gpus(dev_dir)


def gpu_type(model: str) -> str:
    """The GRES type of an NVIDIA model name: lower-cased, its brand words (NVIDIA, Tesla,
    GeForce, Quadro) dropped, the words up to and including the first with a digit joined, and
    cut at the first "-": "NVIDIA A100-SXM4-40GB" is a100, "Tesla V100-PCIE-16GB" v100,
    "NVIDIA GeForce RTX 3090" rtx3090, "NVIDIA H100 80GB HBM3" h100. "" when nothing is left."""
    words = [word for word in model.lower().split() if word not in _BRANDS]
    kept = []
    for word in words:
        kept.append(word)
        if any(character.isdigit() for character in word):
            break
    return re.sub(r"[^a-z0-9]", "", "".join(kept).split("-")[0])


def node_features(configured: list[str]) -> list[str]:
    """The node's features: those configured, each once, then arch=<Grid Engine's architecture
    name> (arch=lx-amd64), which the node always has and which may not be configured. A bad one
    is a ValueError naming [execd] features."""
    features: list[str] = []
    for feature in configured:
        if not feature or _FEATURE_FORBIDDEN.search(feature):
            raise ValueError(f"[execd] features {feature!r}: a feature must be a word, without spaces, "
                             f"commas or any of & | ( ) ! [ ] *")
        if feature.startswith("arch="):
            raise ValueError(f"[execd] features {feature!r}: the node's arch= is its own "
                             f"(arch={architecture()}); leave it out")
        if feature not in features:
            features.append(feature)
    return [*features, f"arch={architecture()}"]


def describe_devices(devices: Iterable[Device]) -> str:
    """The devices as [execd] gres would list them, for the node's log: "gpu:a100:2,nic:1";
    "none"."""
    counts: dict[str, int] = {}
    for device in devices:
        counts[str(device)] = counts.get(str(device), 0) + 1
    return ",".join(f"{kind}:{count}" for kind, count in counts.items()) or "none"


def _nvidia_smi_gpus(command: Sequence[str], timeout_s: float) -> tuple[Device, ...]:
    """The GPUs nvidia-smi lists, in its index order; () when it is not there, fails, or says
    anything this does not read (the device files are the fallback then)."""
    if shutil.which(command[0]) is None:
        return ()
    try:
        done = subprocess.run(list(command), capture_output=True, text=True, timeout=timeout_s, check=False,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return ()
    if done.returncode != 0:
        return ()
    listed: list[tuple[int, str]] = []
    for line in done.stdout.splitlines():
        if not line.strip():
            continue
        index, comma, model = line.partition(",")
        if not comma or not index.strip().isdigit():
            return ()
        listed.append((int(index.strip()), model.strip()))
    # The position is the index a job is given; nvidia-smi's own index orders them.
    return tuple(Device("gpu", position, gpu_type(model)) for position, (_, model) in enumerate(sorted(listed)))


def _device_file_gpus(dev_dir: str) -> tuple[Device, ...]:
    """One untyped GPU per /dev/nvidiaN (not nvidiactl, nvidia-uvm...), in N's order."""
    try:
        names = os.listdir(dev_dir)
    except OSError:
        return ()
    count = sum(1 for name in names if _DEVICE_FILE.fullmatch(name))
    return tuple(Device("gpu", index) for index in range(count))
