"""The ClassAd expression evaluator of condor_q's -constraint, condor_submit's requirements and
request expressions: literals, attributes, operators, three-valued logic, functions."""

from __future__ import annotations

import pytest

from drover.compat.htcondor import classad
from drover.compat.htcondor.classad import ERROR, UNDEFINED, ClassAdError, evaluate, parse

AD = {"Owner": "ann", "ClusterId": 12, "ProcId": 3, "JobStatus": 2, "RequestMemory": 512, "Cmd": "/bin/sleep",
      "DaskWorkerMemory": 2147483648, "Ratio": 0.5}


@pytest.mark.parametrize(("text", "expected"), [
    ("1 + 2 * 3", 7), ("(1 + 2) * 3", 9), ("7 / 2", 3), ("7.0 / 2", 3.5), ("7 % 3", 1), ("-3 + 1", -2),
    ("ClusterId == 12", True), ("clusterid == 12 && ProcId >= 3", True), ("JobStatus != 2", False),
    ('Owner == "ANN"', True), ('Owner =?= "ANN"', False), ('Owner =?= "ann"', True), ('Owner =!= "bob"', True),
    ("JobStatus == 1 || JobStatus == 2", True), ("!(JobStatus == 2)", False), ("MY.ClusterId == 12", True),
    ("TARGET.ProcId < 4", True), ("JobStatus == 2 ? 10 : 20", 10),
    ("floor(DaskWorkerMemory / 1048576)", 2048), ("ceiling(Ratio)", 1), ("round(2.5)", 2),
    ('strcat(Owner, "-", ClusterId)', "ann-12"), ('regexp("sle+p", Cmd)', True), ('size(Owner)', 3),
    ('stringListMember("b", "a,b,c")', True), ('ifThenElse(ProcId > 1, "big", "small")', "big"),
    ('toUpper(Owner)', "ANN"), ("isUndefined(Nothing)", True), ("Owner is \"ann\"", True),
    ("1.5e3", 1500.0), ("true && false", False), ("min(3, 1, 2)", 1), ("int(3.7)", 3),
])
def test_expressions_evaluate_as_classads_do(text: str, expected: object) -> None:
    assert evaluate(text, AD) == expected


def test_an_undefined_attribute_makes_a_comparison_undefined_and_logic_is_three_valued() -> None:
    assert evaluate("Missing == 3", AD) is UNDEFINED
    assert evaluate("Missing == 3 && false", AD) is False
    assert evaluate("Missing == 3 || true", AD) is True
    assert evaluate("Missing == 3 || false", AD) is UNDEFINED
    assert evaluate("Missing =?= undefined", AD) is True
    assert not parse("Missing == 3").matches(AD)


def test_type_mismatches_and_division_by_zero_are_errors() -> None:
    assert evaluate('Owner + 1', AD) is ERROR
    assert evaluate("1 / 0", AD) is ERROR
    assert evaluate('Owner < 3', AD) is ERROR
    assert evaluate("nosuchfunction(1)", AD) is ERROR


@pytest.mark.parametrize("text", ["1 +", "(1", "Owner ==", "3 $ 4", '"open', "a ? b"])
def test_what_cannot_be_parsed_is_refused(text: str) -> None:
    with pytest.raises(ClassAdError):
        parse(text)


def test_the_attributes_an_expression_reads() -> None:
    assert parse('MY.Owner == "x" && TARGET.Memory > RequestMemory').attributes() == {"owner", "memory",
                                                                                      "requestmemory"}


def test_values_are_written_as_classads_write_them() -> None:
    assert classad.unparse("a \"b\"") == '"a \\"b\\""'
    assert classad.unparse(True) == "true"
    assert classad.unparse(3) == "3"
