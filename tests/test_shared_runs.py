"""The test run's shared results (conftest's ``Once``): made once across pytest-xdist workers, waited for or skipped."""

import subprocess
import sys
import time

from tests.conftest import Once
from tests.support import ROOT

WORKER = """
import sys, time
from pathlib import Path
from tests.conftest import Once

folder = Path(sys.argv[1])
def make():
    with open(folder / "made.txt", "a") as log:
        log.write("made\\n")
    time.sleep(1.0)
    return {"value": 42}
print(Once(folder / "once").get("run", make)["value"])
"""


def test_two_workers_asking_at_once_make_the_result_once_and_both_get_it(tmp_path):
    workers = [subprocess.Popen([sys.executable, "-c", WORKER, str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
               for _ in range(2)]
    outputs = [w.communicate(timeout=120)[0].strip() for w in workers]
    assert outputs == ["42", "42"]
    assert (tmp_path / "made.txt").read_text() == "made\n"


def test_a_busy_result_is_missing_without_waiting_and_a_failed_make_leaves_nothing(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", WORKER, str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    once = Once(tmp_path / "once")
    while not (tmp_path / "made.txt").exists():  # the other process holds the lock while it makes the result
        time.sleep(0.05)
    assert once.get("run", lambda: {"value": 0}, wait=False) is Once.MISSING
    assert holder.communicate(timeout=120)[0].strip() == "42"
    assert once.get("run", lambda: {"value": 0}) == {"value": 42}  # made by the other process, read here

    def broken():
        raise RuntimeError("the run failed")
    try:
        once.get("broken", broken)
    except RuntimeError:
        pass
    assert not list((tmp_path / "once").glob("broken.pickle")), "a failed make writes no result"
    assert once.get("broken", lambda: "second try") == "second try"
