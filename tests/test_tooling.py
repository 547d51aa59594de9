"""The ecosystem's own tools and the CLI's promises: pre-commit, the workflow schema, lazy imports, help, exit codes."""

import json
import re
import shlex
import subprocess
import sys

import pytest
import yaml

from builder import cli, commands, exits
from tests.support import ROOT

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


def test_workflows_match_the_github_workflow_schema():
    """check-jsonschema ships the schema, so this runs offline."""
    result = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows", *map(str, WORKFLOWS)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_ci_job_uploads_what_it_produces():
    for path in WORKFLOWS:
        for name, job in yaml.safe_load(path.read_text())["jobs"].items():
            uploads = [s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact")]
            assert uploads and all(s.get("if") == "always()" for s in uploads), f"{path.name}: job {name} uploads nothing"


@pytest.mark.slow  # a subprocess or two full builds of a repository copy: the full tier runs it
def test_the_pre_commit_hook_entry_passes_on_this_checkout():
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    hook = next(h for repo in config["repos"] for h in repo["hooks"] if h["id"] == "builder-check")
    command = shlex.split(hook["entry"])
    assert command[:3] == ["python", "-m", "builder"]
    result = subprocess.run([sys.executable, *command[1:]], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0 and "in sync" in result.stdout, result.stdout + result.stderr


@pytest.mark.slow  # a subprocess or two full builds of a repository copy: the full tier runs it
def test_check_imports_no_export_execution_or_browser_library():
    probe = ("import sys; from builder import cli; code = cli.main(['check']); "
             "print(sorted({m.split('.')[0] for m in sys.modules} & {'nbconvert', 'bs4', 'playwright', 'nbclient', 'latex2mathml'})); "
             "sys.exit(code)")
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_help_lists_the_exit_codes_without_rest_markup(capsys):
    assert cli.main(["--help"]) == exits.OK
    text = capsys.readouterr().out
    assert "``" not in text and ":func:" not in text
    for code, meaning in exits.MEANINGS.items():
        assert f"{code:<3} {meaning}" in text


def test_every_command_has_a_description_and_only_its_own_flags():
    sub = next(a for a in cli.parser()._actions if a.dest == "command")
    for name, parser in sub.choices.items():
        assert parser.description, name
    flags = {name: {o for a in p._actions for o in a.option_strings} for name, p in sub.choices.items()}
    assert "--student" not in flags["html"] and "--student" not in flags["colab"]
    assert "--timeout" not in flags["build"] and "--force" not in flags["check"]


def test_the_readme_lists_every_exit_code():
    readme = (ROOT / "README.md").read_text()
    for code in exits.MEANINGS:
        assert re.search(rf"^\| `{code}` \|", readme, re.M), code


def test_no_traceback_escapes_main(monkeypatch, capsys):
    def broken(course, args):
        raise KeyError("a bug")

    monkeypatch.setitem(cli.COMMANDS, "check", (cli.check_options, broken))
    assert cli.main(["check"]) == exits.INTERNAL
    err = capsys.readouterr().err
    assert "internal error: KeyError" in err and "please report" in err and "Traceback" not in err


def test_a_notebook_that_fails_under_bench_is_exit_1(monkeypatch, capsys):
    from builder import bench

    def failing(course, names, repeats):
        raise bench.NotebookFailed("module3_basic_transformer failed at cell 7")

    monkeypatch.setitem(bench.BENCHES, "speed", failing)
    assert cli.main(["bench", "speed"]) == exits.FAILED
    assert "failed at cell 7" in capsys.readouterr().err


def test_all_passes_its_names_to_every_step(monkeypatch):
    seen = []
    for step in ("build", "check", "execute", "html"):
        monkeypatch.setattr(commands, step, lambda course, args, _step=step, **kw: seen.append((_step, args.names)) or exits.OK)
    assert cli.main(["all", "module5_1"]) == exits.OK
    assert seen == [(s, ["module5_1"]) for s in ("build", "check", "execute", "html")]


@pytest.mark.network
def test_the_readme_setup_pulls_no_nvidia_wheels(tmp_path):
    """Resolve the README's torch line with pip's dry run, as on a machine without torch: no nvidia-* package."""
    line = next(l for l in (ROOT / "README.md").read_text().splitlines() if l.startswith("python -m pip install \"torch"))
    report = tmp_path / "report.json"
    args = shlex.split(line)[4:]  # after "python -m pip install"
    result = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet", "--retries", "0",
                             "--report", str(report), *args], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    names = [item["metadata"]["name"].lower() for item in json.loads(report.read_text())["install"]]
    assert "torch" in names and not [n for n in names if n.startswith("nvidia")], names
