"""What a user types that ends up in a URL's path (a node's name, a staged file's name) reaches
the controller as typed: percent-encoded, it can neither end the path nor break the request."""

from __future__ import annotations

from tests.helpers.cluster import LocalCluster


def test_a_node_name_with_a_space_a_question_mark_and_a_hash_is_looked_up_as_typed(cluster: LocalCluster) -> None:
    result = cluster.drover("nodes", "--resume", "no such?node#1", check=False)
    assert result.returncode != 0
    assert "node no such?node#1 does not exist" in result.stderr


def test_a_staged_out_file_with_spaces_hashes_and_question_marks_is_fetched(cluster: LocalCluster) -> None:
    name = "out #1? 100%.txt"
    job = cluster.submit("--stage-out", "out*", "--", "bash", "-c", f"echo kept > '{name}'")
    cluster.drover("wait", str(job))
    target = cluster.workdir / "fetched"
    cluster.drover("fetch", str(job), "--to", str(target))
    assert (target / name).read_text() == "kept\n"
