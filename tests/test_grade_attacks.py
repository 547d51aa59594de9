"""The grader under attack: the channel carries data only, and attack submissions score 0 and harm nobody.

Fast tests cover the channel (``wire``), the output names and the recognition of every edition.
The slow tier grades one batch of Module 3: an attack per kind the issue lists, honest variants
written in unusual ways, a classmate holding a secret, two same-named files, a file whose name is
not UTF-8 and the Russian student edition, through the command line in a non-UTF-8 locale.
"""

import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import nbformat
import numpy
import pytest
import torch

from builder.grade import batch, integrity, sandbox, submission, wire
from tools import grade_variants as variants
from tests import grade_attacks as attacks
from tests.support import ROOT

TIMEOUT = 10  # seconds per exercise: far above any check here


def roundtrip(value, **options):
    """``value`` sent through a real socket pair and decoded."""
    ours, theirs = socket.socketpair()
    with ours, theirs:
        blobs: list = []
        wire.send(ours, {"value": wire.encode(value, blobs)}, blobs)
        header, got = wire.receive(theirs)
        return wire.decode(header["value"], got, **options)


def test_plain_data_crosses_the_channel_unchanged_strides_and_dtypes_included():
    base = torch.arange(24, dtype=torch.float64).reshape(2, 3, 4)
    value = {"t": base.transpose(1, 2), "s": base[:, 1], "b": torch.tensor([True, False]), "h": torch.ones(3, dtype=torch.bfloat16),
             "c": torch.tensor([1 + 2j]), "e": torch.empty(0, 3), "z": torch.tensor(7), "n": numpy.arange(6.0).reshape(2, 3),
             "nums": (float("nan"), float("inf"), -0.0, 10**30, 2j), "text": "\udc80 é", "bytes": b"\x00\xff",
             "dtype": torch.float16, "size": torch.Size([2, 3]), "none": None, "list": [1, [2, (3,)]]}
    back = roundtrip(value)
    assert back["t"].stride() == value["t"].stride() and not back["t"].is_contiguous() and torch.equal(back["t"], value["t"])
    for key in ("s", "b", "h", "c", "e", "z"):
        assert back[key].dtype == value[key].dtype and torch.equal(back[key], value[key]), key
    assert numpy.array_equal(back["n"], value["n"]) and type(back["n"]) is numpy.ndarray
    assert str(back["nums"]) == str(value["nums"]) and back["text"] == value["text"] and back["bytes"] == value["bytes"]
    assert (back["dtype"], back["size"], back["none"], back["list"]) == (torch.float16, torch.Size([2, 3]), None, [1, [2, (3,)]])


class Sneaky(torch.Tensor):
    """A tensor subclass: never allowed across."""


class OwnEq:
    """An object with its own __eq__."""

    def __eq__(self, other):
        return True


@pytest.mark.parametrize("value, says", [
    (torch.zeros(2).as_subclass(Sneaky), "Sneaky (a subclass of Tensor)"), (OwnEq(), "OwnEq"),
    (numpy.array([object()]), "Python objects"), (torch.nn.Parameter(torch.zeros(1)), "Parameter (a subclass of Tensor)"),
    ([OwnEq()], "OwnEq"), (lambda: 0, "function"),
])
def test_subclasses_and_objects_are_refused_by_name(value, says):
    with pytest.raises(wire.Refused, match=says.replace("(", r"\(").replace(")", r"\)")):
        wire.encode(value, [])


@pytest.mark.parametrize("part", [["pickle", "x"], ["T", "Tensor", [2], [1], 0], ["T", "float64", [4], [1], 0], ["dt", "__class__"],
                                  ["A", "|O", [1], 0], {"a": 1}, ["zzz"]])
def test_a_malformed_or_unknown_message_part_is_refused(part):
    with pytest.raises(wire.Refused):
        wire.decode(part, [b"\x00" * 8])


def test_a_zero_stride_tensor_is_refused_by_what_it_shows_not_what_it_sends():
    huge = torch.zeros(1).expand(40000, 40000)  # 4 bytes sent, 6.4 GB once a contract touches it
    blobs: list = []
    encoded = wire.encode(huge, blobs)
    assert sum(map(len, blobs)) == 4
    with pytest.raises(wire.Refused, match="numel x itemsize"):
        wire.decode(encoded, blobs)
    many = [torch.zeros(1).expand(4096, 4096)] * 5  # 64 MiB each, 320 MiB together: past the budget of one message
    blobs = []
    with pytest.raises(wire.Refused, match="numel x itemsize"):
        wire.decode(wire.encode(many, blobs), blobs)
    assert roundtrip(torch.zeros(1).expand(3, 4)).shape == (3, 4)  # a small broadcast view still crosses


def _raw(header: bytes, parts: list[bytes] = ()) -> bytes:
    """A message as bytes, written by hand (a hostile sender)."""
    import struct

    pack = struct.Struct("!Q").pack
    return pack(len(header)) + header + b"".join(pack(len(p)) + p for p in parts)


@pytest.mark.parametrize("message, says", [
    (_raw(b'{"blobs": 100000}'), "at most 4096 parts"),
    (_raw(b"[" * 200_000 + b"]" * 200_000), "not JSON, or nested too deeply"),
    (struct_header := __import__("struct").pack("!Q", 100 << 20), "more than"),  # a 100 MB JSON header is never read
    (_raw(b'{"blobs": 2}') + __import__("struct").pack("!Q", 300 << 20), "more than"),  # parts past 256 MiB in all
])
def test_the_judge_refuses_a_flood_a_json_bomb_and_too_many_parts_before_reading_them(message, says):
    import threading

    ours, theirs = socket.socketpair()
    with ours, theirs:
        def send():
            with contextlib.suppress(OSError):
                ours.sendall(message[:1 << 20])
                ours.shutdown(socket.SHUT_WR)

        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        with pytest.raises(wire.Refused, match=says):
            wire.receive(theirs)
        theirs.shutdown(socket.SHUT_RDWR)
        sender.join(5)


def test_a_value_nested_too_deeply_is_refused_when_decoded():
    deep: list = ["l", []]
    for _ in range(200):
        deep = ["l", [deep]]
    with pytest.raises(wire.Refused, match="nested more than"):
        wire.decode(deep, [])


def test_same_named_submissions_get_distinct_stable_folders_and_odd_names_are_safe(tmp_path):
    paths = [tmp_path / "x" / "alice.ipynb", tmp_path / "y" / "alice.ipynb", tmp_path / "bob.ipynb",
             Path(os.fsdecode(bytes(tmp_path / "caf") + b"\xe9.ipynb")), tmp_path / "=evil.ipynb"]
    found = [submission.Submission(p, p.stem) for p in paths]
    batch.stems(found)
    again = [submission.Submission(p, p.stem) for p in reversed(paths)]
    batch.stems(again)
    names = [s.stem for s in found]
    assert len(set(names)) == 5 and names[2] == "bob" and names[0].startswith("alice-") and names[1].startswith("alice-")
    assert names == [s.stem for s in reversed(again)]  # stable: the same path, the same folder, whatever the order
    assert names[3] == "caf_xe9" and names[3].encode("utf-8")


def test_every_edition_is_recognised_by_metadata_or_by_a_title_in_any_language(course):
    for book in course.notebooks:
        for edition in (book, book.translated("ru")):
            for path in (edition.ipynb, edition.student_ipynb):
                nb = nbformat.read(path, as_version=4)
                assert nb.metadata["course"]["module"] == book.name
                assert submission.module_of(nb, course) == [book.name]
                del nb.metadata["course"]
                assert submission.module_of(nb, course) == [book.name], path  # by the title, English or Russian


def test_exercise_cells_are_found_whatever_their_first_lines(course):
    book = course.select(["module3"])[0]
    labels = variants.labels(variants.solved(book))
    for name in attacks.HONEST:
        nb = attacks.honest(book, name)
        cells = submission.exercise_cells(nb, labels, course.root)
        assert list(cells) == labels and "def causal_allowed" in cells["Exercise 2"], name
        own = submission.own_cells(nb, cells, course.root)
        assert own == ([attacks.HONEST[name][1]] if attacks.HONEST[name][1] else []), name


# ---- slow: one attacked batch through the command line ------------------------------------------------------


@pytest.fixture(scope="module")
def attacked(tmp_path_factory, course):
    """Grade attacks, honest variants, a classmate and awkward file names of Module 3 in one batch, in the C locale."""
    book = course.select(["module3"])[0]
    folder = tmp_path_factory.mktemp("attacked")
    out, marker = folder / "out", folder / "escaped.txt"
    paths = {}
    for name in attacks.ATTACKS:
        paths[f"attack_{name}"] = folder / f"attack_{name}.ipynb"
        nbformat.write(attacks.attack(book, name, out=str(out), marker=str(marker), folder=str(folder)), paths[f"attack_{name}"])
    for name in attacks.HONEST:
        paths[f"honest_{name}"] = folder / f"honest_{name}.ipynb"
        nbformat.write(attacks.honest(book, name), paths[f"honest_{name}"])
    for name in attacks.OTHER_HONEST:
        paths[f"honest_{name}"] = folder / f"honest_{name}.ipynb"
        nbformat.write(attacks.other_honest(book, name), paths[f"honest_{name}"])
    for name in ("grades.csv", "summary.html", "naïve"):  # names of the batch's own outputs, and one an ASCII locale cannot write
        paths[name] = folder / f"{name}.ipynb"
        shutil.copyfile(book.ipynb, paths[name])
    paths["classmate"] = folder / "classmate.ipynb"
    nbformat.write(attacks.classmate(book), paths["classmate"])
    paths["russian"] = folder / "russian.ipynb"
    nbformat.write(variants.solved(book.translated("ru")), paths["russian"])
    for sub in ("x", "y"):
        (folder / sub).mkdir()
        shutil.copyfile(book.ipynb, folder / sub / "alice.ipynb")
    odd = os.fsencode(folder) + b"/caf\xe9.ipynb"
    shutil.copyfile(book.ipynb, odd)
    scratch = Path(tempfile.mkdtemp(prefix="course-grade-tmp-"))  # the grader's TMPDIR: empty again once it is done
    scratch.chmod(0o755)  # the student processes, dropped to nobody, enter their folders here
    env = dict(os.environ, LC_ALL="C", LANG="C", PYTHONUTF8="0", PYTHONIOENCODING="", TMPDIR=str(scratch))
    argv = [sys.executable, "-m", "builder", "--root", str(ROOT), "grade", *map(str, paths.values()), str(folder / "x" / "alice.ipynb"),
            str(folder / "y" / "alice.ipynb"), odd, "--out", str(out), "--timeout", str(TIMEOUT), "--jobs", "2"]
    start, code = time.monotonic(), integrity.digest()
    done = subprocess.run(argv, env=env, capture_output=True, timeout=1800)
    time.sleep(max(0.0, 5 - (time.monotonic() - start)))  # longer than the double-forked survivor waits before it writes
    results = {p.parent.name: json.loads(p.read_text(encoding="utf-8")) for p in out.glob("*/results.json")}
    left = sorted(p.name for p in scratch.iterdir())
    shutil.rmtree(scratch, ignore_errors=True)
    return {"done": done, "results": results, "out": out, "marker": marker, "labels": variants.graded(book),
            "left": left, "grader_unchanged": integrity.digest() == code}


def scores(result):
    return {t["name"].split(":")[0]: t["score"] for t in result["tests"]}


@pytest.mark.slow
def test_every_attack_scores_0_on_its_exercise_and_full_marks_elsewhere(attacked):
    full = dict.fromkeys(attacked["labels"], 1.0)
    for name in attacks.ATTACKS:
        result = attacked["results"][f"attack_{name}"]
        assert scores(result) == dict(full, **{attacks.LABEL: 0.0}), (name, result["tests"][1]["output"])


@pytest.mark.slow
def test_honest_variants_and_the_russian_edition_score_full_marks(attacked):
    full = dict.fromkeys(attacked["labels"], 1.0)
    for name in [f"honest_{n}" for n in [*attacks.HONEST, *attacks.OTHER_HONEST]] + ["russian", "classmate"]:
        assert scores(attacked["results"][name]) == full, (name, [t["output"][:300] for t in attacked["results"][name]["tests"]])
    assert "shares a name with the course's" in attacked["results"]["honest_helper_named_like_a_course_variable"]["tests"][1]["output"]


@pytest.mark.slow
def test_nobody_is_harmed_nothing_outlives_the_batch_and_no_secret_leaks(attacked):
    assert not attacked["marker"].exists()  # the double-forked survivor was killed before it could write
    assert attacked["left"] == [], "the grader left its temporary folders behind"
    for name, result in attacked["results"].items():
        assert result.get("tests"), name  # every results.json intact, none rewritten to {"score": 0}
        assert attacks.SECRET not in json.dumps(result) or name == "classmate"
    assert "found: \n" in attacked["results"]["attack_read_classmates"]["tests"][1]["output"] + "\n"
    surrogate = attacked["results"]["attack_surrogate_message"]["tests"][1]["output"]
    assert "\\udc80 broken \\ud800 text" in surrogate
    assert attacked["grader_unchanged"], "a submission changed the grader's own files"
    spoofed = attacked["results"]["attack_spoofed_verdict"]["tests"][1]["output"]
    assert spoofed.startswith("ERROR: defining your Exercise 2 code failed") and "    | PASS" in spoofed  # quoted, never a verdict
    assert attacked["results"]["attack_sigstop"]["tests"][1]["output"].startswith("TIMED OUT")


@pytest.mark.slow
def test_a_batch_with_odd_names_and_same_names_grades_everyone(attacked):
    done, results = attacked["done"], attacked["results"]
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    alices = [k for k in results if k.startswith("alice-")]
    full = len(attacked["labels"])
    named = [*alices, "caf_xe9", "grades.csv-submission", "summary.html-submission", "na_xefve"]  # ASCII locale: ï is \xef
    assert len(alices) == 2 and all(sum(scores(results[k]).values()) == full for k in named), sorted(results)
    lines = (attacked["out"] / "grades.csv").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1 + len(results) and lines[0].endswith("total,max,status,error")
    summary = (attacked["out"] / "summary.csv").read_text(encoding="utf-8").splitlines()
    assert summary[2].startswith(f"{attacks.LABEL},{len(results) - len(attacks.ATTACKS)},")
    assert b"grade: " in done.stderr and b"exercise checks of" in done.stderr  # progress, as it happened
    assert (attacked["out"] / "summary.html").read_text(encoding="utf-8").count("<svg") == 1


@pytest.mark.slow
@pytest.mark.parametrize("seal", ["on", "off"])
def test_a_parent_killer_costs_only_itself_and_is_named(tmp_path, course, seal):
    """Sealed, a student process cannot even see the course process; unsealed (GRADE_SEAL=off, as the grading user),
    it can kill it, and the course process is restarted."""
    book = course.select(["module3"])[0]
    killer, other = tmp_path / "killer.ipynb", tmp_path / "other.ipynb"
    nbformat.write(attacks.attack(book, "parent_killer"), killer)
    shutil.copyfile(book.ipynb, other)
    env = dict(os.environ, GRADE_STUDENT_USER="", GRADE_SEAL=seal)
    done = subprocess.run([sys.executable, "-m", "builder", "--root", str(ROOT), "grade", str(killer), str(other), "--out",
                           str(tmp_path / "out"), "--timeout", str(TIMEOUT), "--jobs", "1"], env=env, capture_output=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads((tmp_path / "out" / "killer" / "results.json").read_text(encoding="utf-8"))
    full = len(variants.graded(book))
    assert scores(result)[attacks.LABEL] == 0 and sum(scores(result).values()) == full - 1
    if seal == "off":
        assert result["tests"][1]["output"].startswith("ERROR: your code killed the process that runs it")
        assert b"killed its grading process at Exercise 2" in done.stdout
    else:
        assert result["tests"][1]["output"].startswith("FAIL"), result["tests"][1]["output"]  # its kill reached nobody
    assert sum(scores(json.loads((tmp_path / "out" / "other" / "results.json").read_text(encoding="utf-8"))).values()) == full


# ---- slow: contract mining in every module, and the shortcuts a measurement in the judge would let through ---


MINED = re.compile(r"mined: (.*?) \(end\)")


def mined_names(output: str) -> list[str]:
    """What a mining submission found to rebuild (it lists it in its error): the course's generic helpers at most."""
    found = MINED.search(output)
    assert found, output[:400]
    return [n for n in found.group(1).split() if n not in ("check_exercise", "contract_close")]


@pytest.fixture(scope="module")
def mined(tmp_path_factory, course):
    """A mining submission of every module and the dense answers of Module 5.1's Exercise 6, graded in one batch."""
    folder = tmp_path_factory.mktemp("mined")
    paths = {}
    for book in course.notebooks:
        paths[f"mining_{book.reference}"] = folder / f"mining_{book.reference}.ipynb"
        nbformat.write(attacks.mining(book), paths[f"mining_{book.reference}"])
    m51 = course.select(["module5_1"])[0]
    for name in attacks.DENSE:
        paths[name] = folder / f"{name}.ipynb"
        nbformat.write(attacks.dense(m51, name), paths[name])
    done = subprocess.run([sys.executable, "-m", "builder", "--root", str(ROOT), "grade", *map(str, paths.values()), "--out",
                           str(folder / "out"), "--timeout", str(TIMEOUT), "--jobs", "2"], capture_output=True, timeout=1800)
    results = {p.parent.name: json.loads(p.read_text(encoding="utf-8")) for p in (folder / "out").glob("*/results.json")}
    return {"done": done, "results": results, "paths": paths}


@pytest.mark.slow
def test_contract_mining_finds_nothing_and_scores_0_in_every_module(mined, course):
    assert mined["done"].returncode == 0, mined["done"].stderr[-2000:]
    for book in course.notebooks:
        result = mined["results"][f"mining_{book.reference}"]
        assert result["score"] == 0 and len(result["tests"]) == len(variants.graded(book))
        for test in result["tests"]:
            assert mined_names(test["output"]) == [], (book.name, test["name"], test["output"][:600])


@pytest.mark.slow
def test_a_dense_answer_to_the_tiled_exercise_fails_its_memory_property(mined):
    for name in attacks.DENSE:
        result = scores(mined["results"][name])
        assert result["Exercise 6"] == 0 and sum(result.values()) == len(result) - 1, (name, result)
        output = mined["results"][name]["tests"][5]["output"]
        assert "never holds a T_q x T_k score matrix" in output, output[:600]


@pytest.mark.slow
def test_contract_mining_scores_0_in_the_gradescope_bundle(mined, course, tmp_path):
    from builder.grade import gradescope

    book = course.select(["module5_2"])[0]
    bundle = gradescope.bundle(course, tmp_path / "bundle.zip")
    root = tmp_path / "autograder"
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(root / "source")
    (root / "submission").mkdir()
    shutil.copyfile(mined["paths"][f"mining_{book.reference}"], root / "submission" / "submission.ipynb")
    env = dict(os.environ, AUTOGRADER_ROOT=str(root), AUTOGRADER_PYTHON=sys.executable, PYTHONPATH="")
    subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env, capture_output=True, timeout=1200)
    result = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    assert result["score"] == 0 and result["tests"]
    for test in result["tests"]:
        assert mined_names(test["output"]) == [], (test["name"], test["output"][:600])


# ---- slow: one student process sealed off, as the grading user and (when root) as another user ------------------


SEALED_PROBE = '''
import os, json
def probe(kind, root):
    if kind == "see":
        found = {"pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()), "cwd": os.getcwd()}
        for path in (root + "/builder/grade/remote.py", root + "/notebooks/module3_basic_transformer.py"):
            try:
                open(path).read(1)
                found[path] = "read"
            except OSError as exc:
                found[path] = type(exc).__name__
        for path in (root + "/planted.txt", root + "/builder/planted.txt", "/var/tmp/planted.txt", "/planted.txt"):
            try:
                open(path, "w").write("x")
                found[path] = "written"
            except OSError as exc:
                found[path] = type(exc).__name__
        return json.dumps(found)
    if kind == "forks":
        started, pids = 0, []
        try:
            for _ in range(300):
                pid = os.fork()
                if pid == 0:
                    import time
                    time.sleep(30)
                    os._exit(0)
                pids.append(pid)
        except OSError:
            pass
        return len(pids)
    if kind == "fork_memory":
        for _ in range(6):
            if os.fork() == 0:
                block = b"x" * (120 << 20)
                import time
                time.sleep(30)
                os._exit(len(block) & 1)
        import time
        time.sleep(30)
        return "survived"
    if kind == "fill_tmp":
        written = 0
        try:
            with open("/tmp/fill", "wb") as handle:
                for _ in range(400):
                    handle.write(b"x" * (1 << 20))
                    written += 1
        except OSError:
            pass
        return written
'''


def _probe(kind: str, memory_mb: int = 256):
    """One sealed student process answering ``probe(kind, ROOT)``."""
    from builder.grade import remote, sandbox

    host = sandbox.Host({"memory_mb": memory_mb, "cpu_seconds": 60, "user": "slot", "slot": 3, "hide": [str(ROOT)]})
    try:
        ours, theirs = socket.socketpair()
        host.fork(theirs)
        theirs.close()
        channel = remote.Channel(ours, {})
        assert channel.define("Exercise 1", ("probe",), [], SEALED_PROBE)["failed"] is None
        try:
            return remote.proxy(channel, "probe")(kind, str(ROOT))
        except ConnectionError as exc:
            return exc
        finally:
            ours.close()
            host.reap()
    finally:
        host.close()


@pytest.mark.slow
def test_a_sealed_student_sees_only_itself_writes_nothing_of_ours_and_is_bounded_as_a_tree():
    seen = json.loads(_probe("see"))
    assert seen["pids"] == [1, 2], seen  # a private /proc: its init and itself, no classmate, no grader
    assert seen[f"{ROOT}/builder/grade/remote.py"] == seen[f"{ROOT}/notebooks/module3_basic_transformer.py"] == "FileNotFoundError"
    assert all(seen[p] in ("OSError", "FileNotFoundError", "PermissionError") for p in seen if p.endswith("planted.txt")), seen
    assert not (ROOT / "planted.txt").exists()
    assert _probe("forks") < sandbox.TREE_PROCESSES or os.geteuid() == 0 and os.environ.get("GRADE_STUDENT_USER") == ""
    assert isinstance(_probe("fork_memory", memory_mb=256), ConnectionError)  # 6 x 120 MiB forked: the tree is killed
    assert _probe("fill_tmp") < 200  # a private tmpfs of 128 MiB, gone with the process
    assert not list(Path(tempfile.gettempdir()).glob("fill"))


def _config_course(tmp_path, extra: str):
    """A course of one notebook, two exercises, whose pyproject.toml ends with ``extra``."""
    from types import SimpleNamespace

    source = tmp_path / "nb.py"
    source.write_text("# %%\n# Exercise 1: one\n# %%\n# Exercise 2: two\n", encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text('[tool.course]\n\n[[tool.course.notebooks]]\nname = "nb"\n' + extra, encoding="utf-8")
    book = SimpleNamespace(name="nb", source=source)
    return SimpleNamespace(root=tmp_path, notebooks=[book], shown=lambda path: Path(path).name)


@pytest.mark.parametrize("extra, says", [
    ('points = { "Exercise 2" = -1 }\n', "pyproject.toml(5): points of nb 'Exercise 2' must be a number >= 0, got -1"),
    ('points = { "Exercise 9" = 1 }\n', "pyproject.toml(5): points of nb name ['Exercise 9'], which it does not have"),
    ('points = 3\n', "pyproject.toml(5): points of nb must be a table"),
    ('\n[tool.course.grade]\ncpu_seconds = 1.5\n', "pyproject.toml(7): [tool.course.grade] cpu_seconds must be a whole number >= 1"),
    ('\n[tool.course.grade]\nmemory_mb = 512\nmemroy_mb = 4\n', "pyproject.toml(8): [tool.course.grade] has no setting 'memroy_mb'"),
])
def test_invalid_grading_config_is_named_with_its_file_and_line(tmp_path, extra, says):
    from builder.grade import report

    problems = report.config_problems(_config_course(tmp_path, extra))
    assert len(problems) == 1 and problems[0].startswith(says), problems


def test_valid_grading_config_has_no_problem_and_the_course_s_own_is_valid(tmp_path, course):
    from builder.grade import report

    assert report.config_problems(_config_course(tmp_path, 'points = { "Exercise 2" = 2.5 }\n[tool.course.grade]\nmemory_mb = 512\n')) == []
    assert report.config_problems(course) == []
    for book in course.notebooks:  # the labels config_problems reads by pattern are the exercises the grader finds
        labels = [f"Exercise {n}" for n in dict.fromkeys(report._EXERCISE.findall(book.source.read_text(encoding="utf-8")))]
        assert labels == variants.labels(variants.solved(book)), book.name
