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
    assert file_system_type("/dev/shm/drover-0/abc", mounts, "0:21") == "tmpfs"
    assert file_system_type("/var/spool/drover/n1", mounts, "8:2") == "xfs"
    assert file_system_type("/var/spool/drover/mem/n1", mounts, "0:25") == "tmpfs"
    assert file_system_type("/var/spool/drovers", mounts, "8:1") == "ext4"  # a name that only begins alike
    assert file_system_type("/run/user/1000/drover/x", mounts, "0:23") == "tmpfs"
    assert file_system_type("/srv/with space/spool", mounts, "0:24") == "ramfs"


def test_tmpfs_and_ramfs_are_in_memory_and_nothing_else_is(tmp_path: Path) -> None:
    mounts = table(tmp_path)
    assert in_memory("/dev/shm/drover-0/abc", mounts, "0:21")
    assert in_memory("/srv/with space/spool", mounts, "0:24")
    assert not in_memory("/var/spool/drover/n1", mounts, "8:2")
    assert not in_memory("/home/u/.local/state/drover/spool", mounts, "8:1")


def test_a_mount_hidden_by_a_later_one_on_a_parent_is_not_the_paths(tmp_path: Path) -> None:
    """A tmpfs on /srv/spool/mem, then an ext4 mounted on /srv over it: the tmpfs is still in
    the table, by a name that holds the path, but the path is on the ext4."""
    path = tmp_path / "mountinfo"
    path.write_text(MOUNTS + "31 22 0:26 / /srv/spool/mem rw shared:10 - tmpfs tmpfs rw\n"
                             "32 22 8:3 / /srv rw,relatime shared:11 - ext4 /dev/sda3 rw\n")
    assert file_system_type("/srv/spool/mem/n1", str(path), "8:3") == "ext4"
    assert not in_memory("/srv/spool/mem/n1", str(path), "8:3")
    assert file_system_type("/srv/spool/mem/n1", str(path), "0:26") == "tmpfs"  # were it not hidden


def test_a_path_whose_device_no_mount_names_is_not_taken_as_in_memory(tmp_path: Path) -> None:
    mounts = table(tmp_path)
    assert file_system_type("/dev/shm/drover-0/abc", mounts, "0:99") is None
    assert not in_memory("/dev/shm/drover-0/abc", mounts, "0:99")


def test_a_mount_table_that_cannot_be_read_says_not_in_memory(tmp_path: Path) -> None:
    assert file_system_type("/dev/shm/x", str(tmp_path / "none")) is None
    assert not in_memory("/dev/shm/x", str(tmp_path / "none"))


def test_this_machines_own_mount_table_is_read(tmp_path: Path) -> None:
    assert file_system_type("/") is not None
    assert file_system_type("/proc/self") == "proc"
    assert file_system_type(str(tmp_path / "not" / "made")) == file_system_type(str(tmp_path)) is not None
