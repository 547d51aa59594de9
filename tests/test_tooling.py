"""The ecosystem's own tools and the CLI's promises: pre-commit, the workflow schema, lazy imports, help, exit codes."""

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from builder import cli, commands, exits
from tools import cli as tools_cli
from tests import support
from tests.support import ROOT

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


def test_workflows_match_the_github_workflow_schema():
    """check-jsonschema ships the schema, so this runs offline; the schema checks no ``format``, so its checkers stay unloaded."""
    import check_jsonschema

    schema = Path(check_jsonschema.__file__).parent / "builtin_schemas" / "vendor" / "github-workflows.json"
    assert '"format"' not in schema.read_text(encoding="utf-8"), "the workflow schema checks formats now: load the format checkers"
    # A None entry in sys.modules makes an import fail, which jsonschema skips quietly: the checkers cost seconds here.
    skip = "rfc3987_syntax", "rfc3987", "rfc3986_validator", "rfc3339_validator", "fqdn", "isoduration", "webcolors"
    run = f"import sys; sys.modules.update(dict.fromkeys({skip!r})); from check_jsonschema import main; main()"
    result = subprocess.run([sys.executable, "-c", run, "--builtin-schema", "vendor.github-workflows", *map(str, WORKFLOWS)],
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_ci_job_uploads_what_it_produces():
    for path in WORKFLOWS:
        for name, job in yaml.safe_load(path.read_text())["jobs"].items():
            uploads = [s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact")]
            assert uploads and all(s.get("if") == "always()" for s in uploads), f"{path.name}: job {name} uploads nothing"


def tier_expressions(text: str) -> set[str]:
    """The ``-m EXPR`` of every ``python -m pytest`` line in ``text`` ("" for the default tier)."""
    found = set()
    for line in text.splitlines():
        if line.strip().removeprefix("run: ").startswith("python -m pytest"):  # a command line, not prose that names one
            args = shlex.split(line.split("#")[0].split("python -m pytest", 1)[1])
            found.add(args[args.index("-m") + 1] if "-m" in args else "")
    return found


def test_the_workflow_readme_and_ci_run_run_the_same_tiers():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci_run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    workflow = (ROOT / ".github" / "workflows" / "ci.yml").read_text(encoding="utf-8")
    tiers = tier_expressions(ci_run)
    assert len(tiers) == 2 and "" in tiers, tiers
    assert tier_expressions(readme) >= tiers and tier_expressions(workflow) == tiers
    for text in (readme, ci_run, workflow):
        assert "python -m builder colab" in text


def test_the_workflows_are_hardened():
    """Least permissions, cancelled when superseded, pip cached, actions pinned by SHA; ci.yml runs once per pull request."""
    for path in WORKFLOWS:
        text = path.read_text(encoding="utf-8")
        workflow = yaml.safe_load(text)
        assert workflow["permissions"] == {"contents": "read"}, path.name
        assert workflow["concurrency"]["cancel-in-progress"] is True, path.name
        for line in text.splitlines():
            if "uses:" in line:
                assert re.search(r"uses: [\w-]+/[\w-]+@[0-9a-f]{40}  # v\d+\.\d+\.\d+$", line), line
        for job in workflow["jobs"].values():
            setup = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/setup-python"))
            assert setup["with"]["cache"] == "pip"
    triggers = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text(encoding="utf-8"))[True]  # YAML 1.1 reads `on` as True
    assert "pull_request" in triggers and triggers["push"] == {"branches": ["main"]}


def workflow(name: str) -> dict:
    return yaml.safe_load((ROOT / ".github" / "workflows" / name).read_text(encoding="utf-8"))


def test_the_default_tier_runs_on_linux_macos_and_windows_and_on_python_3_11_to_3_14():
    matrix = workflow("ci.yml")["jobs"]["default"]["strategy"]["matrix"]
    cells = {(matrix["os"][0], py) for py in matrix["python"]} | {(extra["os"], extra["python"]) for extra in matrix["include"]}
    assert {py for _, py in cells} == {"3.11", "3.12", "3.13", "3.14"}
    assert {os for os, _ in cells} == {"ubuntu-latest", "macos-latest", "windows-latest"}


def test_the_lint_job_runs_ruff_check_and_format_on_the_code_with_the_dev_extras_ruff():
    import tomllib

    dev = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]["dev"]
    run = "\n".join(s.get("run", "") for s in workflow("ci.yml")["jobs"]["lint"]["steps"])
    assert "ruff check" in run and "ruff format --check" in run
    assert all("builder/ tests/" in line for line in run.splitlines() if "python -m ruff" in line), run
    assert any(r.startswith("ruff") for r in dev), "ruff belongs in the dev extra"


def test_a_weekly_schedule_runs_the_full_tier_the_canary_the_network_tests_and_the_wrong_answer_sweep():
    weekly = workflow("weekly.yml")
    assert weekly[True]["schedule"] and "workflow_dispatch" in weekly[True]
    run = "\n".join(s.get("run", "") for job in weekly["jobs"].values() for s in job["steps"])
    full = next(e for e in tier_expressions((ROOT / ".ci" / "run").read_text(encoding="utf-8")) if e)
    assert tier_expressions(run) == {full, "network", "colab", "wrong_answer"}


def test_every_job_installs_torch_as_ci_run_does_and_none_pins_colabs_torch_but_the_canary_itself():
    """One CPU torch line everywhere (PyPI's macOS wheel is already the CPU build); Colab's pins live in builder/colab.py alone."""
    ci_run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    torch_line = next(line for line in ci_run.splitlines() if "pip install" in line and "torch==" in line)
    wanted = [a for a in shlex.split(torch_line) if a != "--quiet"]
    on_macos = wanted[:4] + [wanted[4].replace("+cpu", "")]
    for path in WORKFLOWS:
        for name, job in yaml.safe_load(path.read_text(encoding="utf-8"))["jobs"].items():
            installs = [(step.get("if", ""), shlex.split(line)) for step in job["steps"] for line in step.get("run", "").splitlines()
                        if "pip install" in line and "torch" in line]
            run = "\n".join(s.get("run", "") for s in job["steps"])
            assert "--torch " not in run, f"{path.name} job {name}: Colab's torch pin belongs to builder/colab.py"
            if name == "lint":
                assert installs == [], installs
                continue
            assert installs, f"{path.name} job {name} installs no torch"
            for condition, command in installs:
                assert command == (on_macos if "== 'macOS'" in condition else wanted), f"{path.name} job {name}: {command}"


@pytest.mark.slow  # a subprocess or two full builds of a repository copy: the full tier runs it
def test_the_pre_commit_hook_entry_passes_on_this_checkout():
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    hook = next(h for repo in config["repos"] for h in repo["hooks"] if h["id"] == "builder-check")
    command = shlex.split(hook["entry"])
    assert command[:3] == ["python", "-m", "builder"]
    result = subprocess.run([sys.executable, *command[1:]], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0 and "in sync" in result.stdout, result.stdout + result.stderr


def test_the_pre_commit_hook_runs_on_a_change_to_any_input_of_check():
    """Its ``files`` pattern matches the notebooks and every shared input check's record is keyed by (a catalog included)."""
    from builder.check_cache import SHARED

    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    pattern = re.compile(next(h for repo in config["repos"] for h in repo["hooks"] if h["id"] == "builder-check")["files"])
    inputs = ["notebooks/module3_basic_transformer.py", *(f"{name}/x" if (ROOT / name).is_dir() else name for name in SHARED)]
    assert [path for path in inputs if not pattern.search(path)] == []


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


def test_the_cli_reference_lists_every_exit_code():
    reference = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for code in exits.MEANINGS:
        assert re.search(rf"^\| `{code}` \|", reference, re.M), code


def command_help(name: str, capsys) -> str:
    assert cli.main([name, "--help"]) == exits.OK
    return capsys.readouterr().out


def test_every_commands_help_shows_what_a_user_needs_and_no_internals(capsys):
    """No reST markup, no parameter of the Python function behind it; 130 everywhere, 4 and 5 only where a build runs."""
    for name in cli.COMMANDS:
        text = command_help(name, capsys)
        assert "``" not in text and ":func:" not in text and "sources" not in text.split("exit codes:")[0].split("options:")[0], name
        codes = {int(m) for m in re.findall(r"^  (\d+) ", text.split("exit codes:")[1], re.M)}
        assert exits.INTERRUPTED in codes and exits.INTERNAL in codes, name
        assert ({exits.HAND_EDIT, exits.IPYNB_EDIT} <= codes) == (name in exits.BUILDING), (name, codes)


def test_build_help_is_the_users_description(capsys):
    text = command_help("build", capsys)
    assert "re-pair every edition" in text and "``sources``" not in text and "adopt)" not in text
    assert "\n    A build" not in text  # the docstring's indentation is not the description's


@pytest.mark.parametrize("value", ["-3", "0", "nan", "inf", "soon"])
def test_a_budget_that_is_not_a_positive_number_of_seconds_is_refused_before_anything_runs(value, capsys, monkeypatch):
    monkeypatch.setattr(commands, "run_notebooks", lambda *a, **k: pytest.fail("ran notebooks"))
    for name in ("execute", "html", "all", "colab"):
        assert cli.main([name, "--budget", value]) == exits.USAGE, (name, value)
        assert "--budget" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["-1", "0"])
def test_a_mutant_sample_below_one_is_a_usage_error_not_an_internal_one(value, capsys):
    assert tools_cli.main(["mutants", "--sample", value]) == exits.USAGE
    err = capsys.readouterr().err
    assert "--sample" in err and "internal error" not in err


def test_a_gradescope_bundle_into_a_missing_folder_names_the_folder(tmp_path, capsys):
    target = tmp_path / "missing" / "bundle.zip"
    assert cli.main(["grade", "--gradescope-bundle", str(target)]) == exits.FAILED
    err = capsys.readouterr().err
    assert f"the folder {target.parent} does not exist" in err and ".partial" not in err and "Errno" not in err, err
    assert not target.parent.exists()


def test_an_interrupt_is_130_with_one_line_from_every_command(monkeypatch, capsys):
    def interrupted(course, args):
        raise KeyboardInterrupt

    monkeypatch.setitem(cli.COMMANDS, "check", (cli.check_options, interrupted))
    assert cli.main(["check"]) == exits.INTERRUPTED == 130
    assert capsys.readouterr().err == "interrupted\n"


def test_an_interrupt_while_the_builder_loads_is_130_and_one_line(tmp_path):
    """Ctrl-C before main() runs (Python still importing the builder's libraries): no traceback, exit 130.

    A sitecustomize raises KeyboardInterrupt at the first import of builder.cli, the first thing ``python -m builder`` imports,
    exactly where a Ctrl-C in the first hundredths of a second lands.
    """
    (tmp_path / "sitecustomize.py").write_text(
        "import builtins\n_real = builtins.__import__\n"
        "def _imp(name, *a, **k):\n"
        "    if name in ('cli', 'builder.cli') or (a and len(a) > 2 and a[2] and 'main' in a[2] and a[3:4] == (1,)):\n"
        "        raise KeyboardInterrupt\n"
        "    return _real(name, *a, **k)\n"
        "builtins.__import__ = _imp\n")
    env = {**__import__("os").environ, "PYTHONPATH": f"{tmp_path}{__import__('os').pathsep}{ROOT}"}
    result = subprocess.run([sys.executable, "-m", "builder", "check"], cwd=ROOT, capture_output=True, text=True, env=env)
    assert result.returncode == 130 and result.stderr == "interrupted\n", (result.returncode, result.stderr)


def test_the_cli_reference_is_generated_from_the_parser():
    """docs/cli.md is what `python -m builder docs` writes: it cannot drift from the parser."""
    assert (ROOT / "docs" / "cli.md").read_text(encoding="utf-8") == cli.reference(), "docs/cli.md is stale: run `python -m builder docs`"
    for name in cli.COMMANDS:
        assert f"\n## {name}\n" in cli.reference(), name


def test_no_traceback_escapes_main(monkeypatch, capsys):
    def broken(course, args):
        raise KeyError("a bug")

    monkeypatch.setitem(cli.COMMANDS, "check", (cli.check_options, broken))
    assert cli.main(["check"]) == exits.INTERNAL
    err = capsys.readouterr().err
    assert "internal error: KeyError" in err and "please report" in err and "Traceback" not in err


def test_a_notebook_that_fails_under_bench_is_exit_1(monkeypatch, capsys):
    from tools import bench

    def failing(course, names, repeats=3):
        raise bench.NotebookFailed("module3_basic_transformer failed at cell 7")

    monkeypatch.setitem(bench.BENCHES, "speed", failing)
    assert tools_cli.main(["bench", "speed"]) == exits.FAILED
    assert "failed at cell 7" in capsys.readouterr().err


def test_all_passes_its_names_to_every_step(monkeypatch):
    seen = []
    for step in ("build", "check", "execute", "html"):
        monkeypatch.setattr(commands, step, lambda course, args, _step=step, **kw: seen.append((_step, args.names)) or exits.OK)
    assert cli.main(["all", "module5_1"]) == exits.OK
    assert seen == [(s, ["module5_1"]) for s in ("build", "check", "execute", "html")]


@pytest.mark.parametrize("flags, student_too, reinserted, said", [
    ([], True, False, "and 6 student edition(s) as shipped"),
    (["--student"], True, True, "also with its solutions re-inserted"),
    (["--solutions-only"], False, False, "--solutions-only leaves out the student editions"),
])
def test_all_executes_the_student_editions_students_open_and_says_which_it_runs(monkeypatch, capsys, flags, student_too, reinserted, said):
    seen = {}
    for step in ("build", "check", "html"):
        monkeypatch.setattr(commands, step, lambda course, args, **kw: exits.OK)
    monkeypatch.setattr(commands, "execute", lambda course, args, **kw: seen.update(kw) or exits.OK)
    assert cli.main(["all", *flags]) == exits.OK
    assert seen == {"student_too": student_too, "reinserted": reinserted}
    err = capsys.readouterr().err
    assert "stage 3/4, execute: 6 solution edition(s)" in err and said in err, err


def install_lines() -> list[tuple[str, list[str]]]:
    """(where, pip install arguments) for every ``pip install`` the project runs: the README, docs/, .ci/run, the workflows, builder colab.

    A line for macOS alone (a workflow step with ``runner.os == 'macOS'``, or a README line that says ``# macOS``) is named
    "... (macOS)"; an argument that is a shell variable (the lint job's ruff, read from pyproject.toml) is left out.
    """
    from builder import colab

    found = []
    texts = {"README.md": (ROOT / "README.md").read_text(encoding="utf-8"), ".ci/run": (ROOT / ".ci" / "run").read_text(encoding="utf-8")}
    texts |= {f"docs/{p.name}": p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md")) if p.name != "cli.md"}
    for path in WORKFLOWS:
        for job in yaml.safe_load(path.read_text(encoding="utf-8"))["jobs"].values():
            for step in job["steps"]:
                where = f"{path.name} (macOS)" if "== 'macOS'" in step.get("if", "") else path.name
                texts[where] = texts.get(where, "") + step.get("run", "") + "\n"
    for where, text in texts.items():
        for line in text.splitlines():
            command = (shlex.split(line.split("&&")[0].split("#")[0].strip().rstrip("\\"), posix=True)
                       if line.strip().startswith("python -m pip install") else [])  # a command line, not prose that names one
            if command[:4] == ["python", "-m", "pip", "install"]:
                args = [a for a in command[4:] if a != "--quiet" and "$" not in a]
                found.append((f"{where} (macOS)" if "# macOS" in line and "(macOS)" not in where else where, args))
        for line in text.replace(">\n", " ").replace("\n  ", " ").splitlines():  # `builder colab --torch X --torch-index Y`
            if "builder colab" in line and "--torch " in line:
                args = shlex.split(line.split("builder colab", 1)[1])
                index = args[args.index("--torch-index") + 1] if "--torch-index" in args else colab.TORCH_CPU_INDEX
                found.append((f"{where} (builder colab)", [args[args.index("--torch") + 1], *(["--index-url", index] if index else [])]))
    found += [("builder colab", line) for line in colab.install_lines()]
    unique = {}
    for where, args in found:
        if args and args != ["--upgrade", "pip"]:
            unique.setdefault((tuple(args), where.endswith("(macOS)")), where)
    return [(where, list(args)) for (args, _), where in unique.items()]


def test_the_install_lines_cover_every_place_that_installs():
    places = {where for where, _ in install_lines()}
    assert {"README.md", ".ci/run", "ci.yml", "builder colab"} <= places, places
    assert any(a[0].startswith("torch") and "https://download.pytorch.org/whl/cpu" in a for w, a in install_lines() if w == "builder colab")


@pytest.mark.network
@pytest.mark.parametrize("where, args", install_lines(), ids=lambda v: v if isinstance(v, str) else " ".join(v)[:60])
def test_every_install_line_the_project_runs_pulls_no_nvidia_wheels(tmp_path, where, args):
    """Resolve each pip install line with pip's dry run: no nvidia-* package comes with it.

    A torch line is resolved as on a machine without torch (--ignore-installed). The project's own line (-e .) runs
    after the CPU torch line everywhere, so it is resolved against this environment, whose torch must be a CPU build.
    """
    import torch

    if where.endswith("(macOS)"):
        pytest.skip("a macOS-only line (PyPI's CPU wheel there); the macOS job of ci.yml installs it")
    project = any(a.startswith("-e") or a.startswith(".") for a in args)
    if project:
        assert torch.version.cuda is None, f"this environment's torch {torch.__version__} is a CUDA build"
    report = tmp_path / "report.json"
    result = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", *([] if project else ["--ignore-installed"]),
                             "--quiet", "--retries", "0", "--report", str(report), *args],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{where}: pip install {' '.join(args)}\n{result.stderr[-3000:]}"
    names = [item["metadata"]["name"].lower() for item in json.loads(report.read_text())["install"]]
    assert not [n for n in names if n.startswith("nvidia")], f"{where}: pip install {' '.join(args)} pulls {names}"
    if any(a.startswith("torch") for a in args):
        assert "torch" in names, f"{where}: {args} resolved without torch: {names}"


# Installed by jsonschema's format checkers (jsonschema[format-nongpl]); importing nbformat imports every one present.
FORMAT_CHECKERS = ("rfc3987-syntax", "fqdn", "isoduration", "uri-template", "webcolors", "rfc3339-validator")


def test_the_dev_extra_brings_no_format_checker_that_taxes_every_nbformat_import():
    """jupyterlab -> jupyter-events -> jsonschema[format-nongpl] -> rfc3987-syntax compiles Lark grammars on `import nbformat` (~2 s).

    This reads the dependency closure of `.[dev]` from pyproject.toml and the installed packages' metadata, so it holds in
    an environment that also has the frontend extra (where the modules are installed and imported); it proves what a
    fresh `pip install -e ".[dev]"` would bring with today's versions, not what this environment imports.
    """
    closure = support.dependency_closure("dev")
    assert "nbformat" in closure and "jsonschema" in closure  # the walk reaches through the runtime dependencies
    assert not [name for name in FORMAT_CHECKERS if name in closure], sorted(closure)


def test_the_frontend_extra_is_where_the_format_checkers_come_from():
    """The same walk finds rfc3987-syntax through jupyterlab, so the dev test above would see it if dev brought jupyterlab."""
    pytest.importorskip("jupyterlab", reason="the frontend extra is not installed: `pip install -e \".[dev,frontend]\"`")
    assert "rfc3987-syntax" in support.dependency_closure("frontend")


def test_the_bench_check_floor_is_the_plain_import_check_pays_too():
    """`bench check`'s floor imports nbformat and jupytext as this environment installs them, as `check` itself does."""
    from tools import bench

    assert bench.CHECK_FLOOR_CODE == "import nbformat, jupytext"


def test_bench_passes_repeats_only_when_given_and_mutants_refuses_it(monkeypatch, capsys):
    from tools import bench

    seen = []
    monkeypatch.setitem(bench.BENCHES, "tiled", lambda course, names, **kw: seen.append(kw) or [{"ok": True}])
    assert tools_cli.main(["bench", "tiled"]) == exits.OK and seen == [{}]  # tiled keeps its own 7
    assert tools_cli.main(["bench", "tiled", "--repeats", "2"]) == exits.OK and seen[-1] == {"repeats": 2}
    assert tools_cli.main(["bench", "mutants", "--repeats", "2"]) == exits.USAGE
    assert "--repeats does not apply" in capsys.readouterr().err


def test_a_submission_that_fails_to_grade_under_bench_is_exit_1(monkeypatch, capsys):
    from tools import bench

    def failing(course, names, repeats):
        raise ValueError("student03: not graded")

    monkeypatch.setattr(bench, "grade_batches", failing)
    assert tools_cli.main(["bench", "grade"]) == exits.FAILED
    assert "student03: not graded" in capsys.readouterr().err
    assert tools_cli.main(["bench", "grade", "--repeats", "0"]) == exits.USAGE


def test_mutants_refuses_zero_jobs_and_a_failing_baseline_is_exit_1(monkeypatch, capsys, course):
    from tools import mutants

    assert tools_cli.main(["mutants", "--jobs", "0"]) == exits.USAGE
    monkeypatch.setattr(mutants, "generate", lambda name, text, path, skip, **options: [])  # the baseline fails before any mutant matters
    monkeypatch.setattr(mutants, "run_script", lambda source, filename, timeout: ("killed", 1.0))
    assert tools_cli.main(["mutants", course.notebooks[0].name, "--sample", "1"]) == exits.FAILED
    err = capsys.readouterr().err
    assert "does not pass as a script" in err and "internal error" not in err


def test_a_pip_failure_in_colab_is_exit_1_naming_the_step(monkeypatch, capsys, tmp_path):
    from builder import colab

    def pip_fails(command, **kwargs):
        failed = "pip" in command and "install" in command
        return subprocess.CompletedProcess(command, 1 if failed else 0, "", "ERROR: No matching distribution found for torch" if failed else "")

    monkeypatch.setattr(colab.subprocess, "run", pip_fails)
    assert cli.main(["colab", "--venv", str(tmp_path / "venv")]) == exits.FAILED
    err = capsys.readouterr().err
    assert "colab: pip install --upgrade pip failed (exit 1)" in err and "No matching distribution" in err
