"""Colab fidelity: the pinned-stack run, the install cell, the timing budget and the Colab links."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from builder import cli, colab, execute, exits
from builder.contracts import environment
from tests.support import ROOT

COLAB_URL = re.compile(r"https://colab\.research\.google\.com/github/([^/\s)]+/[^/\s)]+)/blob/([^/\s)]+)/([^\s)\"'>]+)")


@pytest.mark.colab
def test_notebooks_pass_on_a_colab_pinned_kernel():
    """Colab's runtime (colab.RUNTIME: IPython 7.34.0, ipykernel 6.17.1, numpy 2.1.3, torch 2.11 CPU): every edition runs clean."""
    venv = ROOT / ".colab-venv"
    result = subprocess.run(
        [sys.executable, "-m", "builder", "colab", "--venv", str(venv)], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    versions = colab.installed_versions(venv)
    for name in ("ipykernel", "ipython", "ipywidgets", "numpy", "matplotlib"):
        assert versions[name] == colab.RUNTIME[name], (name, versions[name])
    exact = "run where python3.13 and PyTorch's CPU index are available (the weekly workflow's colab job)"
    assert versions["python"].rsplit(".", 1)[0] == colab.RUNTIME["python"].rsplit(".", 1)[0], f"Python {versions['python']}: {exact}"
    assert versions["torch"].split("+")[0] == colab.RUNTIME["torch"], f"torch {versions['torch']}: {exact}"
    assert "FAILED" not in result.stdout


def test_the_canary_pins_colabs_runtime_of_august_2026_in_one_place():
    """Python 3.13, torch 2.11 and numpy 2.1.3 (googlecolab/backend-info, "Upgrade to Python 3.13"); every install line reads RUNTIME."""
    assert colab.RUNTIME["python"].startswith("3.13.") and colab.RUNTIME["date"] == "2026-08-19"
    assert "googlecolab/backend-info" in colab.RUNTIME["source"]
    lines = [arg for line in colab.install_lines() for arg in line]
    assert "torch==2.11.0" in lines and "numpy==2.1.3" in lines and "ipywidgets==7.7.1" in lines
    assert not [arg for arg in lines if arg.startswith(("numpy==2.0", "torch==2.9"))], lines
    assert colab.TORCH_CPU_INDEX in lines


def test_the_canary_says_which_interpreter_it_uses_when_colabs_python_is_missing(monkeypatch):
    monkeypatch.setattr(colab.shutil, "which", lambda name: None)
    python, note = colab.default_python()
    assert python == sys.executable and "python3.13 is not on PATH" in note and "Colab runs 3.13.15" in note
    monkeypatch.setattr(colab.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(colab, "_runs_venv", lambda python: True)
    assert colab.default_python()[0] == "/usr/bin/python3.13"
    monkeypatch.setattr(colab, "_runs_venv", lambda python: False)  # a pyenv shim of a version not selected, say
    python, note = colab.default_python()
    assert python == sys.executable and "on PATH (/usr/bin/python3.13) does not run" in note


def test_a_shim_that_cannot_run_is_not_taken_for_an_interpreter(tmp_path):
    shim = tmp_path / "python3.13"
    shim.write_text("#!/bin/sh\necho 'pyenv: python3.13: command not found' >&2\nexit 127\n")
    shim.chmod(0o755)
    assert not colab._runs_venv(str(shim)) and colab._runs_venv(sys.executable)


def test_colab_links_point_to_notebooks_in_this_repository(course):
    """Every Open-in-Colab link names this repository, its branch and a notebook that exists."""
    slug = course.repository.removeprefix("https://github.com/")
    files = [ROOT / "README.md", *sorted((ROOT / "notebooks").rglob("*.py")), *sorted((ROOT / "notebooks").rglob("*.ipynb"))]
    links = [(f, m) for f in files for m in COLAB_URL.finditer(f.read_text(encoding="utf-8"))]
    assert len(links) >= 2 * len(course.notebooks), "each notebook and the README should carry a Colab link"
    for path, match in links:
        repo, branch, target = match.groups()
        where = f"{path.relative_to(ROOT)}: {match.group(0)}"
        assert (repo, branch) == (slug, course.branch), where
        assert target.endswith(".ipynb") and (ROOT / target).is_file(), where


@pytest.mark.slow
def test_a_breached_budget_fails_and_names_the_slowest_cells(tmp_path, capsys, course, executions, monkeypatch):
    """`execute --budget` on the session's runs of the first notebook (conftest's ``executions``: no run of its own)."""
    name = course.notebooks[0].name
    monkeypatch.setattr(execute, "run", executions.replaying([name]))
    assert cli.main(["execute", name, "--budget", "0.01", "--out", str(tmp_path)]) == exits.FAILED
    out = capsys.readouterr().out
    assert "OVER BUDGET" in out and re.search(r"Slowest cells: cell \d+ \(\d+\.\d+ s\)", out)


def test_a_generous_budget_passes():
    result = execute.RunResult("nb", 12.0, [execute.CellTiming(3, 4.0, "import torch")])
    assert "OVER BUDGET" not in execute.report(result, budget=48.0)
    assert "OVER BUDGET" in execute.report(result, budget=10.0)


def test_install_cell_rejects_packages_outside_the_allow_list():
    with pytest.raises(ValueError, match="allow-list"):
        environment.install_missing(["numpy", "requests"])


def test_install_cell_installs_nothing_that_is_present(capsys):
    assert environment.install_missing(["numpy", "torch", "matplotlib"]) == []
    assert capsys.readouterr().out == ""  # the notebook's cell says so, in the reader's language


def test_environment_report_warns_without_failing_on_old_torch(monkeypatch, capsys):
    import torch

    monkeypatch.setattr(torch, "__version__", "2.4.1+cpu")
    report = environment.report_environment()
    out = capsys.readouterr().out
    assert report == {"colab": False, "torch_has_enable_gqa": False}
    assert "WARNING: torch 2.4.1+cpu is older than 2.5" in out and "enable_gqa" in out
    assert re.search(r"Python \d+\.\d+\.\d+ \| numpy \S+ \| torch 2\.4\.1\+cpu \| matplotlib \S+ \| running in Colab: no", out)


def test_environment_report_on_current_torch_has_no_warning(capsys):
    assert environment.report_environment()["torch_has_enable_gqa"]
    assert "WARNING" not in capsys.readouterr().out


def test_where_colabs_torch_does_not_install_the_canary_falls_back_only_when_allowed_and_says_so(monkeypatch, tmp_path):
    calls = []

    def pip(command, **kwargs):
        calls.append(command)
        failed = colab.DEFAULT_TORCH in command  # Colab's torch: no wheel for this Python, or the CPU index unreachable
        return subprocess.CompletedProcess(command, 1 if failed else 0, "", "ERROR: No matching distribution found" if failed else "")

    monkeypatch.setattr(colab.subprocess, "run", pip)
    monkeypatch.setattr(colab, "installed_versions", lambda venv: {"python": "3.11.2", "torch": "2.13.0+cpu"})
    with pytest.raises(colab.SetupFailed, match="torch==2.11.0"):
        colab.create(tmp_path / "strict", python=sys.executable)
    (tmp_path / "approximate").mkdir()  # what `python -m venv` would have made
    versions = colab.create(tmp_path / "approximate", python=sys.executable, fallback_torch="torch==2.13.0")
    assert any("torch==2.13.0" in c and colab.TORCH_CPU_INDEX in c for c in calls)
    assert "torch==2.11.0 does not install here" in versions["torch_fallback"]
    line = colab.versions_line(versions)
    assert line.startswith("colab-pinned kernel: python 3.11.2, torch 2.13.0+cpu") and "colab: note: torch==2.11.0" in line
