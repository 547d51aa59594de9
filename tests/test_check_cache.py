"""``check``'s record (build/check-cache.json): an unchanged checkout is not derived again, and no drift hides behind it.

Each drift is planted in a copy whose record is current, and ``check`` must report exactly what
``check --no-cache`` (every edition derived again) reports.
"""

import contextlib
import json
import re

import pytest

from builder import editions, exits
from builder.check_cache import FORMAT, RECORD, Record
from builder.config import load_course
from tests.support import copy_repo, run_builder, run_builder_process

M3, M5 = "notebooks/module3_basic_transformer", "notebooks/module5_1_exact_attention"


QUICK = ("module5_1",)  # the default tier checks one notebook (and the course-wide catalogs); the full tier all of them


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    """A copy of the repository whose record is current for ``QUICK``: one ``check`` has run in it."""
    root = copy_repo(tmp_path_factory.mktemp("warm") / "repo")
    first = run_builder(root, "check", *QUICK)
    assert first.returncode == exits.OK and (root / RECORD).is_file(), first.stdout + first.stderr
    return root


@contextlib.contextmanager
def planted(root, relative, change):
    """``change(bytes) -> bytes`` applied to one file (None deletes it), put back afterwards."""
    path = root / relative
    before = path.read_bytes()
    after = change(before)
    if after is None:
        path.unlink()
    else:
        path.write_bytes(after)
    try:
        yield
    finally:
        path.write_bytes(before)


def _ipynb_cell_edit(data: bytes) -> bytes:
    """A markdown cell edited in Jupyter: its text changes, its id stays."""
    nb = json.loads(data)
    cell = next(c for c in nb["cells"][1:] if c["cell_type"] == "markdown")
    cell["source"] = "".join(cell["source"]) + "\nAn edit made in Jupyter."
    return (json.dumps(nb, indent=1, ensure_ascii=False) + "\n").encode()


def _translation_edit(data: bytes) -> bytes:
    """The first translated entry of a catalog changes its Russian."""
    return re.sub(rb'\nmsgstr "(?=[^"])', lambda found: found.group(0) + "Х".encode(), data, count=1)


def _contract_edit(data: bytes) -> bytes:
    return data.replace(b"Installing {module} ...", b"Fetching {module} ...")


# (file, change, words the report must hold, notebooks checked): each is drift a stale record could hide.
DRIFTS = [
    pytest.param(f"{M5}.ipynb".replace("notebooks/", "notebooks/student/"), _ipynb_cell_edit, "notebooks/student/module5_1_exact_attention.ipynb",
                 QUICK, id="generated-ipynb-edited"),
    pytest.param(f"{M5}.py".replace("notebooks/", "notebooks/ru/student/"), lambda b: b + b"# an edit by hand\n",
                 "notebooks/ru/student/module5_1_exact_attention.py", (), id="generated-py-edited", marks=pytest.mark.slow),
    pytest.param(f"{M5}.ipynb".replace("notebooks/", "notebooks/ru/"), lambda b: None, "notebooks/ru/module5_1_exact_attention.ipynb(1): generated file is missing",
                 (), id="generated-missing", marks=pytest.mark.slow),
    pytest.param(f"{M3}.py", lambda b: b.replace(b"SEED = 18\n", b"SEED = 19\n", 1), "notebooks/module3_basic_transformer.ipynb",
                 (), id="source-edited", marks=pytest.mark.slow),
    pytest.param("translations/ru/module5_1_exact_attention.po", _translation_edit, "notebooks/ru/module5_1_exact_attention",
                 (), id="catalog-edited", marks=pytest.mark.slow),
    pytest.param("references/module5_1.json", lambda b: b.replace(b"0", b"1", 1), "references/module5_1.json",
                 (), id="reference-edited", marks=pytest.mark.slow),
    pytest.param("builder/contracts/environment.py", _contract_edit, "region 'inline install_missing' is stale",
                 (), id="contract-edited", marks=pytest.mark.slow),
]


def test_an_unchanged_checkout_is_checked_from_its_record(warm, monkeypatch):
    """The shortcut is taken: nothing is derived, and the report is the one a full derivation gives."""
    derived = run_builder(warm, "check", "--no-cache", *QUICK)

    def refuse(*args, **kwargs):
        pytest.fail("check derived an edition although nothing changed since its record")

    for name in ("editions", "message_findings"):
        monkeypatch.setattr(editions, name, refuse)
    replayed = run_builder(warm, "check", *QUICK)
    assert replayed.returncode == exits.OK, replayed.stdout + replayed.stderr
    assert (replayed.stdout, replayed.stderr) == (derived.stdout, derived.stderr)


@pytest.mark.parametrize("relative, change, words, names", DRIFTS)
def test_drift_behind_a_current_record_is_reported_as_without_it(warm, relative, change, words, names):
    assert run_builder(warm, "check", *names).returncode == exits.OK  # the record is current for these notebooks
    with planted(warm, relative, change):
        recorded = run_builder(warm, "check", *names)
        derived = run_builder(warm, "check", "--no-cache", *names)
    assert recorded.returncode != exits.OK and words in recorded.stdout + recorded.stderr, recorded.stdout + recorded.stderr
    assert (recorded.returncode, recorded.stdout, recorded.stderr) == (derived.returncode, derived.stdout, derived.stderr)


@pytest.mark.slow  # the default tier keeps the replay, a hand edit and a build's entries; the full tier all of these
def test_a_source_saved_while_check_runs_keeps_its_entry_out_of_the_record(warm, monkeypatch):
    """Findings derived from a source that changed before they were kept would be replayed for text they never saw."""
    record_path, source = warm / RECORD, warm / f"{M5}.py"
    kept, text = record_path.read_bytes(), source.read_bytes()
    derive = editions.editions

    def save_while_deriving(course, nb, *args):
        result = derive(course, nb, *args)
        source.write_bytes(text + b"# saved while check ran\n")
        return result

    monkeypatch.setattr(editions, "editions", save_while_deriving)
    record_path.unlink()
    try:
        run_builder(warm, "check", *QUICK)
        source.write_bytes(text)
        course = load_course(warm)
        record = Record(course)
        assert record_path.is_file() and record.notebook_findings(record.notebook_key(course.select(QUICK)[0])) is None
    finally:
        source.write_bytes(text)
        record_path.write_bytes(kept)


@contextlib.contextmanager
def notebooks_kept(root):
    """Every file under notebooks/ put back as it was afterwards (a build rewrites several)."""
    kept = {p: p.read_bytes() for p in (root / "notebooks").rglob("*") if p.is_file()}
    try:
        yield
    finally:
        for path, data in kept.items():
            path.write_bytes(data)


def derivations(monkeypatch) -> list[str]:
    """The notebooks ``check`` derives from here on, by name (it still derives them)."""
    seen, derive = [], editions.editions
    monkeypatch.setattr(editions, "editions", lambda course, nb, *args: seen.append(nb.name) or derive(course, nb, *args))
    return seen


@pytest.mark.parametrize("added, derived", [
    (b"\n# %%\nunused = 1\n", []),
    pytest.param(b"# %%\nunused = 2\n", ["module5_1_exact_attention"], marks=pytest.mark.slow),
], ids=["source-kept", "source-rewritten"])
def test_a_build_leaves_check_nothing_to_derive_unless_it_rewrote_the_source(warm, monkeypatch, added, derived):
    """A build keeps what it derived, as check would; a source the build rewrote (here: into jupytext's layout) was derived before it."""
    source = warm / f"{M5}.py"
    with notebooks_kept(warm):
        source.write_bytes(source.read_bytes() + added)
        built = run_builder(warm, "build", *QUICK)
        assert built.returncode == exits.OK and ("wrote notebooks/module5_1_exact_attention.py" in built.stdout) == bool(derived), built.stdout
        seen = derivations(monkeypatch)
        checked = run_builder(warm, "check", *QUICK)
    assert checked.returncode == exits.OK and seen == derived, checked.stdout + checked.stderr


def _broken_entries(text: str) -> str:
    """The record with each entry's fields of the wrong shape."""
    data = json.loads(text)
    data["entries"] = {key: {"findings": "nonsense", "outputs": [1]} for key in data["entries"]}
    return json.dumps(data)


@pytest.mark.parametrize("damage", [
    pytest.param(lambda text: "not json {", marks=pytest.mark.slow),
    pytest.param(_broken_entries, marks=pytest.mark.slow),
    pytest.param(lambda text: json.dumps({"format": FORMAT, "entries": []}), marks=pytest.mark.slow),
], ids=["corrupt", "wrong-entry", "wrong-entries"])
def test_a_corrupt_record_only_means_deriving_again(warm, damage):
    path = warm / RECORD
    kept = path.read_bytes()
    path.write_text(damage(kept.decode()))
    try:
        result = run_builder(warm, "check", *QUICK)
        assert result.returncode == exits.OK and "in sync" in result.stdout, result.stdout + result.stderr
        assert json.loads(path.read_text())["format"] == FORMAT  # rewritten whole
    finally:
        path.write_bytes(kept)


@pytest.mark.slow  # the course-wide findings derived twice
def test_the_course_wide_findings_read_no_notebook_source(repo_copy):
    """The record keeps them under a key without the sources: so no source may change them, even one that no longer parses."""
    from builder.commands import course_wide_findings

    course = load_course(repo_copy)
    before = [str(f) for f in course_wide_findings(course)]
    for nb in course.notebooks:
        nb.source.write_text("this is not Python (\n", encoding="utf-8")
    assert [str(f) for f in course_wide_findings(course)] == before


@pytest.mark.slow  # two checks in fresh interpreters of a repository copy
def test_an_edit_to_the_builder_itself_is_not_hidden_by_the_record(repo_copy):
    """The builder package's own code is an input: a change to what it writes is drift, though no source changed."""
    assert run_builder_process(repo_copy, "check").returncode == exits.OK
    config = repo_copy / "builder" / "config.py"
    config.write_text(config.read_text().replace('"en": "Student edition"', '"en": "Student copy"', 1))
    result = run_builder_process(repo_copy, "check")
    assert result.returncode == exits.FAILED and "notebooks/student/module3_basic_transformer.ipynb" in result.stdout, result.stdout + result.stderr


@pytest.mark.slow  # a build and three checks of a repository copy
def test_warnings_replayed_from_the_record_read_as_derived_ones(repo_copy):
    """Findings kept in the record (here: a unit not translated yet) are printed and counted exactly as derived ones."""
    english = repo_copy / f"{M3}.py"
    english.write_text(english.read_text(encoding="utf-8").replace("# %% [markdown]\n# ## ", "# %% [markdown]\n# A new paragraph.\n#\n# ## ", 1),
                       encoding="utf-8")
    assert run_builder(repo_copy, "build").returncode == exits.OK
    derived = run_builder(repo_copy, "check", "--no-cache", "--no-strict-translations")  # the build's record is not read
    replayed = run_builder(repo_copy, "check", "--no-strict-translations")
    strict = run_builder(repo_copy, "check")
    assert derived.returncode == replayed.returncode == exits.OK and "1 unit(s) not translated yet" in replayed.stdout, replayed.stdout
    assert (replayed.stdout, replayed.stderr) == (derived.stdout, derived.stderr)
    assert strict.returncode == exits.FAILED and "translations are strict here" in strict.stderr, strict.stdout + strict.stderr


def test_a_failing_check_writes_no_record(tmp_path):
    root = copy_repo(tmp_path / "repo")
    with planted(root, f"{M5}.ipynb", _ipynb_cell_edit):
        failed = run_builder(root, "check", *QUICK)
    assert failed.returncode == exits.FAILED, failed.stdout + failed.stderr
    assert not (root / RECORD).exists(), "a check that fails writes nothing, not even its record"
