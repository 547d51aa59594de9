"""Nothing lost, nothing half-written: every way a build could discard an edit or leave files half-written.

Each test runs the builder in this process on a throwaway copy of the repository (``repo_copy``).
"""

import json
import os
import re

import pytest

from builder import exits
from tests.support import run_builder

M3, M5 = "notebooks/module3_basic_transformer", "notebooks/module5_1_exact_attention"


def tree(root):
    """Every file under ``root`` with its bytes: what `git status` would compare."""
    return {p.relative_to(root): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def edit_markdown_in_jupyter(path, new_text, *, keep_ids=True):
    """Change the first markdown cell after the header as Jupyter saves it (ids kept) or as Colab does (no ids)."""
    nb = json.loads(path.read_text())
    index = next(i for i, c in enumerate(nb["cells"]) if i > 0 and c["cell_type"] == "markdown")
    nb["cells"][index]["source"] = new_text
    nb["cells"][index]["metadata"]["colab"] = {"id": "abc"}
    if not keep_ids:
        for cell in nb["cells"]:
            cell.pop("id", None)
        nb["nbformat_minor"] = 4
    path.write_text(json.dumps(nb, indent=2) + "\n")
    return index


@pytest.mark.slow  # a subprocess or two full builds of a repository copy: the full tier runs it
@pytest.mark.parametrize("keep_ids", [True, False], ids=["jupyter", "colab"])
def test_an_edit_made_only_in_the_ipynb_is_refused_with_its_cell_then_adopted(repo_copy, keep_ids):
    ipynb = repo_copy / f"{M3}.ipynb"
    index = edit_markdown_in_jupyter(ipynb, "## A sentence an instructor wrote in Colab", keep_ids=keep_ids)
    before = tree(repo_copy)
    refused = run_builder(repo_copy, "build")
    assert refused.returncode == exits.IPYNB_EDIT, refused.stdout + refused.stderr
    assert f"module3_basic_transformer.ipynb cell {index} (markdown)" in refused.stderr
    assert "python -m builder adopt module3_basic_transformer" in refused.stderr
    assert tree(repo_copy) == before  # nothing written, the edit is still there
    adopted = run_builder(repo_copy, "adopt", "module3")
    assert adopted.returncode == exits.OK, adopted.stdout + adopted.stderr
    assert "# ## A sentence an instructor wrote in Colab" in (repo_copy / f"{M3}.py").read_text()
    assert "A sentence an instructor wrote in Colab" in ipynb.read_text()
    assert "A sentence an instructor wrote in Colab" in (repo_copy / "notebooks" / "ru" / "module3_basic_transformer.py").read_text()  # English until translated
    checked = run_builder(repo_copy, "check")
    problems = [line for line in checked.stdout.splitlines() if "): " in line]
    assert checked.returncode == exits.FAILED and problems, checked.stdout + checked.stderr
    assert all(line.startswith("translations/ru/") for line in problems), problems  # only the translation is behind


def test_adopt_refuses_when_the_py_changed_too(repo_copy):
    ipynb, source = repo_copy / f"{M3}.ipynb", repo_copy / f"{M3}.py"
    edit_markdown_in_jupyter(ipynb, "## Edited in Jupyter")
    source.write_text(source.read_text().replace("SEED = 18\n", "SEED = 18  # edited in the .py\n", 1))
    before = tree(repo_copy)
    result = run_builder(repo_copy, "adopt", "module3")
    assert result.returncode == exits.IPYNB_EDIT and "both" in result.stderr and "by hand" in result.stderr
    assert tree(repo_copy) == before


def test_an_ipynb_that_is_only_stale_is_rebuilt(repo_copy):
    """An edit in the .py (the normal way) rewrites the .ipynb: its cells match their ids, nothing is lost."""
    source = repo_copy / f"{M3}.py"
    source.write_text(source.read_text().replace("SEED = 18\n", "SEED = 18  # edited in the .py\n", 1))
    result = run_builder(repo_copy, "build")
    assert result.returncode == exits.OK, result.stderr
    assert "SEED = 18  # edited in the .py" in (repo_copy / f"{M3}.ipynb").read_text()


def test_a_failing_build_writes_nothing(repo_copy):
    """Module 3 needs a rewrite, Module 5.1 is malformed: nothing at all is written, Module 3's files included."""
    m3 = repo_copy / f"{M3}.py"
    m3.write_text(m3.read_text().replace("SEED = 18\n", "SEED = 19\n", 1))
    m5 = repo_copy / f"{M5}.py"
    m5.write_text(m5.read_text() + "\n# %%\n# builder:begin inline require_int\n")
    before = tree(repo_copy)
    result = run_builder(repo_copy, "build")
    assert result.returncode == exits.MALFORMED and "module5_1_exact_attention.py(" in result.stderr, result.stderr
    assert tree(repo_copy) == before


@pytest.mark.parametrize(("damage", "words"), [
    (lambda text: text[: len(text) // 2], r"references/module3\.json\(\d+\): not valid JSON at column \d+"),
    (lambda text: json.dumps(json.loads(text)), r"references/module3\.json\(1\): valid JSON but not in canonical form"),
], ids=["truncated", "not-canonical"])
def test_a_bad_reference_file_fails_build_with_exit_3(repo_copy, damage, words):
    path = repo_copy / "references/module3.json"
    path.write_text(damage(path.read_text()))
    before = tree(repo_copy)
    result = run_builder(repo_copy, "build")
    assert result.returncode == exits.MALFORMED, result.stdout + result.stderr
    assert re.search(words, result.stderr), result.stderr
    assert tree(repo_copy) == before


@pytest.mark.parametrize(("damage", "words"), [
    (lambda data: data.replace(b"SEED = 18\n", b"SEED = 18\r\n", 1), r"module3_basic_transformer\.py\((\d+)\): CR line ending"),
    (lambda data: data.replace(b"SEED = 18\n", b"SEED = 18  # \xe9\n", 1), r"module3_basic_transformer\.py\((\d+)\): byte 0xe9 at column 14 is not UTF-8"),
], ids=["crlf", "latin-1"])
def test_bad_bytes_in_a_source_are_reported_as_file_line(repo_copy, damage, words):
    path = repo_copy / f"{M3}.py"
    data = path.read_bytes()
    line = data[: data.index(b"SEED = 18\n")].count(b"\n") + 1
    path.write_bytes(damage(data))
    for command in ("build", "check"):
        result = run_builder(repo_copy, command)
        assert result.returncode == exits.MALFORMED, result.stdout + result.stderr
        found = re.search(words, result.stderr)
        assert found and int(found.group(1)) == line, result.stderr
        assert "Traceback" not in result.stderr


def test_a_broken_course_table_names_pyproject_and_its_line(repo_copy):
    path = repo_copy / "pyproject.toml"
    text = path.read_text()
    line = text[: text.index("[tool.course]")].count("\n") + 2
    path.write_text(text.replace('repository = "https://github.com', 'repository = "https://github.com\n', 1))
    result = run_builder(repo_copy, "check")
    assert result.returncode == exits.MALFORMED
    assert re.search(rf"pyproject\.toml\({line}\): ", result.stderr), result.stderr


def test_a_missing_notebook_source_is_named(repo_copy):
    (repo_copy / f"{M5}.py").unlink()
    result = run_builder(repo_copy, "check")
    assert result.returncode == exits.MALFORMED
    assert "notebooks/module5_1_exact_attention.py(1): source is missing" in result.stderr


def test_execute_that_cannot_write_fails_before_running_anything(repo_copy):
    blocker = repo_copy / "dist"
    blocker.write_text("a file where the output folder should be\n")
    result = run_builder(repo_copy, "execute", "module3")
    assert result.returncode == exits.FAILED
    assert "dist/executed" in result.stderr and "wall" not in result.stdout, result.stdout + result.stderr


@pytest.mark.parametrize("value", ["0", "-5"])
def test_a_timeout_that_is_not_positive_is_a_usage_error(repo_copy, value):
    result = run_builder(repo_copy, "execute", "--timeout", value)
    assert result.returncode == exits.USAGE
    assert "must be a positive number of seconds" in result.stderr


def test_root_uses_the_contracts_of_the_checkout_it_points_at(repo_copy):
    """--root reads that copy's builder/contracts, not the builder package that runs."""
    contract = repo_copy / "builder/contracts/environment.py"
    contract.write_text(contract.read_text().replace("Installing {module} ...", "Fetching {module} ..."))
    result = run_builder(repo_copy, "check")
    assert result.returncode == exits.FAILED
    assert re.search(r"module3_basic_transformer\.py\(\d+\): region 'inline install_missing' is stale", result.stdout)


def test_run_from_a_subdirectory_builds_that_checkout(repo_copy, monkeypatch, capsys):
    from builder import cli

    source = repo_copy / f"{M3}.py"
    source.write_text(source.read_text().replace("SEED = 18\n", "SEED = 19\n", 1))
    monkeypatch.chdir(repo_copy / "notebooks")
    assert cli.main(["check"]) == exits.FAILED
    assert "module3_basic_transformer.ipynb" in capsys.readouterr().out
