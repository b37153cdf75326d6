"""Whether a spool is in memory, as the node reads it from the mount table once at its start
(spool/file_system.py): its cleanup writes and removes a spool in memory on its event loop."""

from __future__ import annotations

from pathlib import Path

from drover.spool.file_system import file_system_type, in_memory

MOUNTS = """\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
25 22 0:21 / /dev/shm rw,nosuid,nodev shared:3 - tmpfs tmpfs rw
26 22 0:22 / /run rw,nosuid shared:4 - tmpfs tmpfs rw,mode=755
27 26 0:23 / /run/user/1000 rw,nosuid,nodev shared:5 - tmpfs tmpfs rw,mode=700
28 22 8:2 / /var/spool/drover rw,relatime shared:6 - xfs /dev/sda2 rw
29 22 0:24 / /srv/with\\040space rw shared:7 - ramfs none rw
30 28 0:25 / /var/spool/drover/mem rw shared:8 optional:9 - tmpfs tmpfs rw
"""


def table(tmp_path: Path) -> str:
    path = tmp_path / "mountinfo"
    path.write_text(MOUNTS)
    return str(path)


def test_the_longest_mount_point_holding_the_path_says_its_file_system(tmp_path: Path) -> None:
    mounts = table(tmp_path)
    assert file_system_type("/dev/shm/drover-0/abc", mounts) == "tmpfs"
    assert file_system_type("/var/spool/drover/n1", mounts) == "xfs"
    assert file_system_type("/var/spool/drover/mem/n1", mounts) == "tmpfs"
    assert file_system_type("/var/spool/drovers", mounts) == "ext4"  # a name that only begins alike
    assert file_system_type("/run/user/1000/drover/x", mounts) == "tmpfs"
    assert file_system_type("/srv/with space/spool", mounts) == "ramfs"


def test_tmpfs_and_ramfs_are_in_memory_and_nothing_else_is(tmp_path: Path) -> None:
    mounts = table(tmp_path)
    assert in_memory("/dev/shm/drover-0/abc", mounts)
    assert in_memory("/srv/with space/spool", mounts)
    assert not in_memory("/var/spool/drover/n1", mounts)
    assert not in_memory("/home/u/.local/state/drover/spool", mounts)


def test_a_mount_table_that_cannot_be_read_says_not_in_memory(tmp_path: Path) -> None:
    assert file_system_type("/dev/shm/x", str(tmp_path / "none")) is None
    assert not in_memory("/dev/shm/x", str(tmp_path / "none"))


def test_this_machines_own_mount_table_is_read() -> None:
    assert file_system_type("/") is not None
    assert file_system_type("/proc/self") == "proc"
