"""Reference files: one canonical byte form, reproduced exactly by independent generators."""

import json

import pytest

from builder import canonical, frozen
from builder.refgen import GENERATORS

from tests.support import ROOT, run_builder


def test_canonical_form_sorts_keys_and_keeps_scalar_lists_on_one_line():
    text = canonical.dumps({"b": [1, 2.5, None, True], "a": {"z": "x", "y": [[1, 2], [3, 4]]}})
    assert text == (
        '{\n  "a": {\n    "y": [\n      [1, 2],\n      [3, 4]\n    ],\n    "z": "x"\n  },\n'
        '  "b": [1, 2.5, null, true]\n}\n'
    )
    assert canonical.is_canonical(text)
    assert not canonical.is_canonical(json.dumps(json.loads(text)))


def test_canonical_form_keeps_the_shortest_round_trip_float():
    assert canonical.dumps([0.1 + 0.2]) == "[0.30000000000000004]\n"


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), (1, 2), {1, 2}])
def test_canonical_form_rejects_what_json_cannot_hold(bad):
    with pytest.raises(canonical.CanonicalError):
        canonical.dumps({"x": bad})


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_committed_reference_bytes_reproduce(course, name):
    nb = next(nb for nb in course.notebooks if nb.reference == name)
    assert nb.reference_path.read_text(encoding="utf-8") == frozen.expected_text(name)
    assert frozen.check(nb.reference_path, name) == []


def test_seed_values_are_kept(course):
    """Spot values from the seeds' frozen JSON, typed exactly as the seeds had them."""
    m3 = json.loads((ROOT / "references/module3.json").read_text())
    m5 = json.loads((ROOT / "references/module5_1.json").read_text())
    assert m3["attention"]["weights"][2] == [0.2482550782577231, 0.2482550782577231, 0.5034898434845538]
    assert m3["next_token_nll"]["nll"] == 0.5439104980979277
    assert m3["parameter_floor"]["decoder_layer"] == 4194304
    assert m5["online_softmax_trace"]["u2"] == 3.966890002140263
    assert m5["mla"]["raw_element_ratio"] == 56.888888888888886
    assert m5["gpt_oss_hybrid"]["hybrid_total_bytes"] == 4836556800


def test_compare_names_the_key_path_and_both_values():
    found = frozen.compare({"a": {"b": [1.0, 2.0]}, "gone": 1}, {"a": {"b": [1.0, 2.5]}, "new": 2})
    assert ("a.b[1]", "committed 2.0 != generated 2.5") in found
    assert any(key == "gone" and "no longer produces" in msg for key, msg in found)
    assert any(key == "new" and "lacks this key" in msg for key, msg in found)


def test_compare_distinguishes_int_from_float_and_bool():
    assert frozen.compare({"x": 1}, {"x": 1.0}) and frozen.compare({"x": True}, {"x": 1})


def test_check_fails_on_a_changed_value_naming_key_and_values(repo_copy):
    path = repo_copy / "references/module3.json"
    path.write_text(path.read_text().replace("0.5439104980979277", "0.5439104980979278"))
    result = run_builder(repo_copy, "check")
    assert result.returncode == 1
    assert "next_token_nll.nll: committed 0.5439104980979278 != generated 0.5439104980979277" in result.stdout


def test_check_fails_on_non_canonical_bytes(repo_copy):
    path = repo_copy / "references/module5_1.json"
    path.write_text(json.dumps(json.loads(path.read_text()), indent=4) + "\n")
    result = run_builder(repo_copy, "refs", "--check")
    assert result.returncode == 1
    assert "not canonical" in result.stdout


def test_refs_update_rewrites_only_when_asked(repo_copy):
    path = repo_copy / "references/module3.json"
    path.write_text(json.dumps(json.loads(path.read_text())))
    assert run_builder(repo_copy, "refs", "--check").returncode == 1
    assert path.read_text() != frozen.expected_text("module3")
    assert run_builder(repo_copy, "refs", "--update").returncode == 0
    assert path.read_text() == frozen.expected_text("module3")
