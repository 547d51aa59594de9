"""The builder's commands on real copies of the repository: idempotence and drift detection."""

import json
import re

import pytest

from builder import cli, exits, inline, pairing
from builder.contracts import registry
from tests.support import ROOT, run_builder

M3 = "notebooks/module3_basic_transformer.py"
M3_IPYNB = "notebooks/module3_basic_transformer.ipynb"


def snapshot(root):
    """Every file's bytes under notebooks/ and references/."""
    return {p: p.read_bytes() for folder in ("notebooks", "references") for p in sorted((root / folder).rglob("*")) if p.is_file()}


def test_check_passes_on_this_checkout(capsys):
    assert cli.main(["check"]) == exits.OK
    assert "in sync" in capsys.readouterr().out


def test_build_twice_changes_nothing(repo_copy):
    before = snapshot(repo_copy)
    first = run_builder(repo_copy, "build")
    assert first.returncode == 0, first.stderr
    assert "wrote" not in first.stdout, "the committed notebooks were not built: run `python -m builder build`"
    assert run_builder(repo_copy, "build").stdout.count("wrote") == 0
    assert snapshot(repo_copy) == before


def test_hand_edit_inside_a_region_fails_check_naming_file_and_region(repo_copy):
    path = repo_copy / M3
    text = path.read_text()
    path.write_text(text.replace("    return missing\n", "    return missing or []\n", 1))
    result = run_builder(repo_copy, "check")
    assert result.returncode == 1
    assert re.search(r"notebooks/module3_basic_transformer\.py\(\d+\): region 'inline install_missing' was edited by hand", result.stdout)


@pytest.mark.slow  # a subprocess or two full builds of a repository copy: the full tier runs it
def test_build_refuses_to_overwrite_a_hand_edit_unless_forced(repo_copy):
    path = repo_copy / M3
    edited = path.read_text().replace("    return missing\n", "    return missing or []\n", 1)
    path.write_text(edited)
    refused = run_builder(repo_copy, "build")
    assert refused.returncode == exits.HAND_EDIT and "hand-edited" in refused.stderr
    assert path.read_text() == edited
    assert run_builder(repo_copy, "build", "--force").returncode == 0
    assert run_builder(repo_copy, "check").returncode == 0


@pytest.mark.slow  # a subprocess or two full builds of a repository copy: the full tier runs it
def test_changing_the_shared_function_makes_the_region_stale(repo_copy):
    source = repo_copy / "builder/contracts/environment.py"
    source.write_text(source.read_text().replace("Installing {module} ...", "Fetching {module} ..."))
    result = run_builder(repo_copy, "check")
    assert result.returncode == 1
    assert re.search(r"module3_basic_transformer\.py\(\d+\): region 'inline install_missing' is stale", result.stdout)
    assert "+        print(f\"Fetching {module} ...\", flush=True)" in result.stdout  # the unified diff shows the fix
    assert run_builder(repo_copy, "build").returncode == 0
    assert run_builder(repo_copy, "check").returncode == 0


def test_an_ipynb_edited_in_jupyter_is_out_of_sync(repo_copy):
    path = repo_copy / M3_IPYNB
    nb = json.loads(path.read_text())
    nb["cells"][1]["source"] = ["edited in Colab"]
    path.write_text(json.dumps(nb, indent=1) + "\n")
    result = run_builder(repo_copy, "check")
    assert result.returncode == 1
    assert "module3_basic_transformer.ipynb(" in result.stdout and "edited in Jupyter or Colab" in result.stdout
    assert "python -m builder adopt module3_basic_transformer" in result.stdout


@pytest.mark.parametrize(
    ("insert", "words"),
    [
        ("# builder:begin inline require_int\n", "has no end marker"),
        ("# builder:begin inline no_such_function\n# builder:end\n", "unknown function 'no_such_function'"),
        ("# builder:begin inline require_int\n# builder:begin inline require_real\n# builder:end\n# builder:end\n", "nested region"),
        ("# builder:begin inline install_missing\n# builder:end\n", "duplicate region 'inline install_missing'"),
        ("# builder:begin inline contract_close\n# builder:end\n", "uses ContractViolation"),
    ],
)
def test_malformed_region_exits_3_naming_file_line_and_writes_nothing(repo_copy, insert, words):
    path = repo_copy / M3
    text = path.read_text()
    if words.startswith("uses "):  # move the region up, ahead of what it uses, rather than duplicate it
        text = re.sub(r"# builder:begin inline contract_close\n.*?# builder:end[^\n]*\n", "", text, count=1, flags=re.S)
    broken = text.replace("SEED = 18\n", insert + "SEED = 18\n", 1)
    path.write_text(broken)
    before = snapshot(repo_copy)
    for command in ("build", "check"):
        result = run_builder(repo_copy, command)
        assert result.returncode == exits.MALFORMED, result.stdout + result.stderr
        assert re.search(rf"notebooks/module3_basic_transformer\.py\(\d+\): .*{re.escape(words)}", result.stderr)
    assert snapshot(repo_copy) == before


def test_reference_region_must_name_this_notebooks_reference(repo_copy):
    path = repo_copy / M3
    path.write_text(path.read_text().replace("# builder:begin frozen module3", "# builder:begin frozen module5_1"))
    result = run_builder(repo_copy, "check")
    assert result.returncode == exits.MALFORMED and "not 'module5_1'" in result.stderr


def test_every_inlinable_name_is_self_contained():
    """Inlined code may read only builtins, its own imports and other inlinable names."""
    known = registry()
    for name in known:
        assert inline.dependencies(name) <= set(known), name


def test_inlined_source_is_the_package_source():
    from builder.contracts.attention import check_attention_contract
    import inspect

    assert inline.source_of("check_attention_contract") == inspect.getsource(check_attention_contract)
    assert inline.source_of("ALLOWED_PACKAGES").lstrip().startswith("# import name")


def test_paired_ipynb_has_no_outputs_and_the_python3_kernel():
    nb = json.loads(pairing.to_ipynb((ROOT / M3).read_text()))
    assert all(cell.get("outputs", []) == [] for cell in nb["cells"])
    assert nb["metadata"]["kernelspec"]["name"] == "python3"


def test_header_has_title_colab_badge_and_provenance(course):
    from builder import __version__

    for nb in course.notebooks:
        first = json.loads(nb.ipynb.read_text())["cells"][0]
        text = "".join(first["source"])
        assert first["cell_type"] == "markdown"
        assert f"# {nb.title}" in text
        assert f"(https://colab.research.google.com/github/" in text and f"/notebooks/{nb.name}.ipynb)" in text
        assert f"course builder {__version__}" in text and nb.reference_sha256 in text


def test_unknown_notebook_name_is_a_clear_error(capsys):
    assert cli.main(["execute", "module9"]) == exits.USAGE
    assert "unknown notebook 'module9'" in capsys.readouterr().err


def test_no_new_exercise_stub_is_left_unwritten(course):
    """`python -m builder new-exercise` leaves a contract and a bug-catalog stub; each must be written before the tier is green."""
    from builder import authoring

    left = authoring.stubs_left(course)
    assert not left, "write these stubs that `new-exercise` left (see the README's checklist for adding an exercise):\n" + "\n".join(left)
