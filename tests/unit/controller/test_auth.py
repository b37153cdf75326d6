"""Who may do what, on plain data."""

from __future__ import annotations

import os
import pwd

import pytest

from drover.controller.security.auth import Policy, TlsPeer
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
    with pytest.raises(Forbidden, match="carries a MUNGE credential"):
        Policy(owner_uid=ME).caller(None)


def test_over_tls_a_node_is_the_node_its_certificate_names() -> None:
    policy = Policy(owner_uid=ME)
    assert policy.node_of(TlsPeer("10.0.0.2:4000", "node1", "1f")) == "node1"
    for peer in (None, TlsPeer("10.0.0.2:4000")):
        with pytest.raises(Forbidden, match="only a node of the cluster"):
            policy.node_of(peer)


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


def test_the_controllers_own_user_is_an_admin_of_its_shared_cluster() -> None:
    service_account = Policy(owner_uid=OTHER, shared=True)  # a controller run as a service user
    assert service_account.caller((1, OTHER, OTHER)).is_admin
    assert service_account.caller((1, 0, 0)).is_admin


def test_a_shared_controller_run_as_its_service_user_admits_roots_execd_and_refuses_users() -> None:
    """`drover up --system` runs the controller as the service user; the execd beside it is root's."""
    service_account = Policy(owner_uid=OTHER, shared=True)
    assert service_account.may_be_node((1, 0, 0))  # root's execd, on the local socket
    assert service_account.may_be_node((1, OTHER, OTHER))
    assert not service_account.may_be_node((1, 4242, 4242))  # a user
    assert not service_account.caller((1, 4242, 4242)).is_admin


def test_a_tls_peers_host_is_its_address_without_the_port() -> None:
    assert TlsPeer("10.0.0.2:4000").host == "10.0.0.2"
    assert TlsPeer("[fd00::2]:4000").host == "fd00::2"


def test_a_listing_shows_a_users_own_jobs_and_refuses_asking_for_anothers() -> None:
    policy = Policy(owner_uid=0, shared=True)
    plain = policy.caller((1, OTHER, OTHER))
    assert policy.whose_jobs(plain, None) == "nobody"
    assert policy.whose_jobs(plain, "nobody") == "nobody"
    with pytest.raises(Forbidden, match="nobody sees only their own jobs; only root and the cluster's operators list alice's"):
        policy.whose_jobs(plain, "alice")
    root = policy.caller((1, 0, 0))
    assert policy.whose_jobs(root, None) is None and policy.whose_jobs(root, "alice") == "alice"


def test_cluster_wide_acts_are_for_admins_only() -> None:
    policy = Policy(owner_uid=0, shared=True)
    with pytest.raises(Forbidden, match="only root and the cluster's operators resume nodes"):
        policy.may_administer(policy.caller((1, OTHER, OTHER)), "resume nodes")
    policy.may_administer(policy.caller((1, 0, 0)), "resume nodes")


def test_no_request_can_name_who_sends_it() -> None:
    """The user is the socket's peer: no request model has a field for a uid, gid, owner or user
    name, and each refuses fields it does not know, so a spoofed one is an error, never obeyed."""
    import msgspec

    from drover.protocol import api

    identity = {"uid", "gid", "owner", "user", "username", "user_name", "groups", "euid", "egid", "as_user"}
    requests = [api.SubmitRequest, api.JobSubmission, api.ActionRequest, api.StagedFile]
    for model in requests:
        assert model.__struct_config__.forbid_unknown_fields, model
        assert not identity & set(model.__struct_fields__), model
    with pytest.raises(msgspec.ValidationError, match="unknown field `owner`"):
        msgspec.json.decode(b'{"jobs": [{"script": "true", "workdir": "/tmp", "owner": "root"}]}',
                            type=api.SubmitRequest)
    with pytest.raises(msgspec.ValidationError, match="unknown field `uid`"):
        msgspec.json.decode(b'{"refs": ["1"], "uid": 0}', type=api.ActionRequest)


def test_a_user_of_another_host_is_never_an_admin_and_must_exist_here() -> None:
    from drover.controller.security.auth import Policy

    shared = Policy(owner_uid=0, shared=True, operators=frozenset({"root"}))
    assert shared.caller((0, 0, 0), remote=True).is_admin is False  # a host's root is not the cluster's
    with pytest.raises(Forbidden, match="uid 4242424 has no user on the controller's host"):
        shared.caller((0, 4242424, 4242424), remote=True)
    with pytest.raises(Forbidden, match="serves its owner on this host only"):
        Policy(owner_uid=0).caller((0, 0, 0), remote=True)
    with pytest.raises(Forbidden, match="carries a MUNGE credential"):
        shared.caller(None)
