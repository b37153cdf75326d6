"""Join tokens are for admins: on a shared cluster (`drover up --system`, which made the
cluster's CA), a user can neither make, list nor revoke them; root can."""

from __future__ import annotations

import json

from tests.helpers.system_cluster import SystemCluster


def test_only_admins_make_list_and_revoke_join_tokens(system_cluster: SystemCluster, users: tuple[str, str]) -> None:
    alice, _bob = users
    assert (system_cluster.state_dir / "tls" / "ca.crt").exists()  # up --system ran cluster init
    token = system_cluster.as_root("token", "create", "--uses", "3").stdout.strip()
    token_id = token.split(".")[2]
    for argv, what in ((("create",), "make join tokens"), (("list",), "list join tokens"),
                       (("revoke", token_id), "revoke join tokens")):
        refused = system_cluster.run_as(alice, "drover", "token", *argv)
        assert refused.returncode != 0, refused.stdout
        assert f"only root and the cluster's operators {what}" in refused.stderr, refused.stderr
    listed = json.loads(system_cluster.as_root("token", "list", "--json").stdout)
    assert [(t["id"], t["uses_left"], t["state"]) for t in listed] == [(token_id, 3, "valid")]
    assert token not in json.dumps(listed) and token.split(".")[3] not in json.dumps(listed)  # no secret shown
