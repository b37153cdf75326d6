"""Who may do what, on plain data."""

from __future__ import annotations

import os
import pwd

import pytest

from drover.controller.auth import Policy
from drover.core.errors import Forbidden

ME = os.getuid()
ME_NAME = pwd.getpwuid(ME).pw_name
OTHER = 65534  # nobody


def test_a_personal_cluster_serves_its_owner_only_root_included() -> None:
    policy = Policy(owner_uid=OTHER)
    with pytest.raises(Forbidden, match="this personal cluster belongs to nobody"):
        policy.caller((1, ME, 0))
    assert policy.caller((1, OTHER, OTHER)).is_admin


def test_over_tcp_nobody_is_anybody() -> None:
    with pytest.raises(Forbidden, match="no proven identity"):
        Policy(owner_uid=ME).caller(None)


def test_on_a_shared_cluster_users_touch_only_their_own_jobs_and_operators_all() -> None:
    policy = Policy(owner_uid=0, shared=True, operators=frozenset({"nobody"}))
    root = policy.caller((1, 0, 0))
    nobody = policy.caller((1, OTHER, OTHER))
    assert root.is_admin and nobody.is_admin
    plain = Policy(owner_uid=0, shared=True).caller((1, OTHER, OTHER))
    assert not plain.is_admin
    policy.may_touch(plain, "nobody", 1)
    with pytest.raises(Forbidden, match="job 7 belongs to alice; nobody cannot see or change it"):
        policy.may_touch(plain, "alice", 7)


def test_root_jobs_are_refused_on_a_shared_cluster_unless_allowed() -> None:
    root = Policy(owner_uid=0, shared=True).caller((1, 0, 0))
    with pytest.raises(Forbidden, match="allow_root_jobs"):
        Policy(owner_uid=0, shared=True).may_submit(root)
    Policy(owner_uid=0, shared=True, allow_root_jobs=True).may_submit(root)
    Policy(owner_uid=0).may_submit(Policy(owner_uid=0).caller((1, 0, 0)))  # a personal cluster of root's


def test_only_root_or_the_daemons_user_may_be_a_node() -> None:
    policy = Policy(owner_uid=ME)
    assert policy.may_be_node((1, 0, 0)) and policy.may_be_node((1, ME, 0))
    assert not policy.may_be_node(None)
    if ME != OTHER:
        assert not policy.may_be_node((1, OTHER, OTHER)) or ME == OTHER
