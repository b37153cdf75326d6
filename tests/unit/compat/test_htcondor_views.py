"""How condor_q, condor_history and condor_status show ads, on plain data: -af with its
modifiers, -format's conversions, -long, -json, the batch and -nobatch tables, and the
selection by operands and constraints."""

from __future__ import annotations

import json
from typing import Any

import pytest

from drover.compat.htcondor import views
from drover.compat.htcondor.common import CondorUsageError

NOW = 1795800000.0


def ad(cluster: int, proc: int, status: int, owner: str = "ann", **more: Any) -> dict[str, Any]:
    return {"ClusterId": cluster, "ProcId": proc, "JobStatus": status, "Owner": owner, "QDate": int(NOW) - 60,
            "JobPrio": 0, "Cmd": "/bin/sleep", "Args": "30", **more}


ADS = [ad(7, 0, 2, JobCurrentStartDate=int(NOW) - 30), ad(7, 1, 1), ad(8, 0, 5, "bob", JobBatchName="nightly")]


def test_autoformat_and_its_modifiers() -> None:
    assert views.autoformat(ADS, ["ClusterId", "Owner"], "") == ["7 ann", "7 ann", "8 bob"]
    assert views.autoformat(ADS[:1], ["JobStatus"], "jr") == ["7.0 2"]
    assert views.autoformat(ADS[:1], ["Owner", "Missing"], "V,") == ['"ann",undefined']
    assert views.autoformat(ADS[:1], ["Owner", "ProcId"], "lh") == ["Owner ProcId", "Owner = ann ProcId = 0"]
    assert views.autoformat(ADS[:1], ["ClusterId * 2", "JobStatus == 2"], "") == ["14 true"]


def test_format_pairs_as_printf_with_v_and_undefined_attributes_skipped() -> None:
    text = views.format_pairs(ADS, [("%d.", "ClusterId"), ("%-3d|", "ProcId"), ("%s", "JobBatchName"),
                                    ("%V\\n", "Owner")])
    assert text == '7.0  |"ann"\n7.1  |"ann"\n8.0  |nightly"bob"\n'


def test_long_and_json_write_every_attribute() -> None:
    lines = views.long(ADS[:1])
    assert "Owner = \"ann\"" in lines and "ClusterId = 7" in lines and lines[-1] == ""
    parsed = json.loads(views.as_json(views.projected(ADS[:2], ["ClusterId", "ProcId"])))
    assert parsed == [{"ClusterId": 7, "ProcId": 0}, {"ClusterId": 7, "ProcId": 1}]


def test_the_batch_table_counts_each_batch_by_state() -> None:
    lines = views.batch(ADS)
    assert lines[0].split() == ["OWNER", "BATCH_NAME", "SUBMITTED", "DONE", "RUN", "IDLE", "HOLD", "TOTAL",
                                "JOB_IDS"]
    assert lines[1].split()[:3] == ["ann", "ID:", "7"] and lines[1].split()[-5:] == ["1", "1", "_", "2", "7.0-1"]
    assert lines[2].split()[:2] == ["bob", "nightly"] and lines[2].split()[-3:] == ["1", "1", "8.0"]
    assert views.totals(ADS, "query") == ("Total for query: 3 jobs; 0 completed, 0 removed, 1 idle, 1 running, "
                                          "1 held, 0 suspended")


def test_nobatch_one_line_per_job() -> None:
    lines = views.nobatch(ADS, NOW)
    assert lines[1].split()[:2] == ["7.0", "ann"] and lines[1].split()[4:] == ["0+00:00:30", "R", "0", "0.0",
                                                                              "sleep", "30"]
    assert lines[3].split()[5] == "H"


def test_the_held_table_says_since_when_and_why() -> None:
    lines = views.held([ad(8, 0, 5, "bob", EnteredCurrentStatus=int(NOW), HoldReason="via condor_hold (by user bob)")])
    assert lines[0].split() == ["ID", "OWNER", "HELD_SINCE", "HOLD_REASON"]
    assert lines[1].split()[:2] == ["8.0", "bob"] and lines[1].endswith(" via condor_hold (by user bob)")


def test_operands_and_constraints_select() -> None:
    chosen = views.selection("condor_q", ["7.1", "bob"], ["JobStatus != 2"])
    assert [(a["ClusterId"], a["ProcId"]) for a in ADS if chosen.matches(a)] == [(7, 1), (8, 0)]
    with pytest.raises(CondorUsageError, match="Invalid constraint expression"):
        views.selection("condor_q", [], ["JobStatus =="])
    with pytest.raises(CondorUsageError, match="unrecognized argument 7.x"):
        views.selection("condor_q", ["7.x"], [])
