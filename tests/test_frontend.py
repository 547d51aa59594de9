"""The solution notebooks run in a real notebook frontend: JupyterLab, driven through its menus.

Colab cannot be reached from here, and JupyterLab is the nearest real client: it renders
Markdown with marked and typesets math with MathJax, as Colab does, where the handouts use
mistune and latex2mathml. The fixture starts JupyterLab on 127.0.0.1 with a token and a free
port, in a temporary copy of the notebooks, and stops it by its PID. Each test opens one
notebook in headless Chromium (every request off 127.0.0.1 is blocked), runs *Run → Run All
Cells* from the real menu bar, waits for the kernel to go idle, saves, and then asserts:
no error output and no stray ``[]``; no MathJax error node (``mjx-merror``); no raw ``$`` or
``\\frac`` left in rendered Markdown; and, cell by cell, as many typeset formulas as the
course's own Markdown parser finds, so that dollars paired by one renderer and not the other
(an escaped ``\\$5``) are caught even when both make no error.
"""

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from builder import handout
from builder.config import load_course
from tests.test_html import browser  # noqa: F401  (the shared Chromium fixture)

pytestmark = pytest.mark.frontend

START_TIMEOUT_S = 90
RUN_TIMEOUT_S = 600

# JupyterLab user settings for the run: every cell attached to the page (so every formula is
# typeset and counted), and no news or update check (they would reach for the network).
SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false", "checkForUpdates": False},
}

# What the page shows once the run is over, cell by cell, in notebook order.
INSPECT = r"""() => {
  const cells = [...document.querySelectorAll('.jp-Notebook .jp-Cell')];
  const rawText = (root) => {
    const parts = [];
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
      const node = walker.currentNode;
      if (node.parentElement.closest('mjx-container, code, pre, style, script, .MathJax')) continue;
      parts.push(node.textContent);
    }
    return parts.join(' ');
  };
  return {
    merror: document.querySelectorAll('mjx-merror').length,
    cells: cells.map((cell, index) => {
      const markdown = cell.classList.contains('jp-MarkdownCell');
      const rendered = markdown ? cell.querySelector('.jp-MarkdownOutput') : null;
      return {
        index,
        markdown,
        rendered: markdown ? rendered !== null : null,
        formulas: rendered ? rendered.querySelectorAll('mjx-container').length : 0,
        merror: cell.querySelectorAll('mjx-merror').length,
        text: rendered ? rawText(rendered) : '',
        outputMarkdown: [...cell.querySelectorAll('.jp-OutputArea-output.jp-RenderedMarkdown')].map(rawText),
        prompt: (cell.querySelector('.jp-InputPrompt') || {}).textContent || '',
      };
    }),
  };
}"""

# Busy while the kernel works or any cell still waits in the queue ("[*]").
BUSY = r"""() => {
  const indicator = document.querySelector('.jp-Notebook-ExecutionIndicator');
  const status = indicator ? indicator.getAttribute('data-status') : null;
  const queued = [...document.querySelectorAll('.jp-Notebook .jp-InputPrompt')].some(p => p.textContent.includes('*'));
  const ran = [...document.querySelectorAll('.jp-Notebook .jp-InputPrompt')].some(p => /\d/.test(p.textContent));
  return {status, queued, ran};
}"""


@dataclass
class LabServer:
    """A JupyterLab server this test session started, and how to reach it."""

    process: subprocess.Popen
    url: str
    token: str
    root: Path
    log: Path

    def stop(self) -> None:
        """Stop the server by its PID (it shuts its kernels down), and kill it if it does not go."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)


@dataclass
class FrontendRun:
    """What one Run All Cells left in the page and in the saved notebook."""

    name: str
    page: dict
    saved: nbformat.NotebookNode
    expected_formulas: dict[int, int] = field(default_factory=dict)

    def problems(self) -> list[str]:
        """Everything a reader of this notebook in JupyterLab would see go wrong, each naming its cell."""
        found = []
        for index, cell in enumerate(self.saved.cells):
            for output in cell.get("outputs", []):
                if output.output_type == "error":
                    found.append(f"{self.name}: cell {index}: error output {output.ename}: {output.evalue}")
                elif output.get("data", {}).get("text/plain", "").strip() == "[]":
                    found.append(f"{self.name}: cell {index}: stray [] output")
        if self.page["merror"]:
            found.append(f"{self.name}: {self.page['merror']} MathJax error node(s) (mjx-merror)")
        for cell in self.page["cells"]:
            where = f"{self.name}: cell {cell['index']}"
            if cell["merror"]:
                found.append(f"{where}: MathJax error in a formula")
            if cell["markdown"] and not cell["rendered"]:
                found.append(f"{where}: Markdown cell not rendered")
            for text in [cell["text"], *cell["outputMarkdown"]]:
                for match in re.finditer(r"\$|\\frac", text):
                    found.append(f"{where}: raw {match.group()} in rendered Markdown: ...{text[max(match.start() - 40, 0):match.end() + 40]}...")
            expected = self.expected_formulas.get(cell["index"])
            if expected is not None and cell["formulas"] != expected:
                found.append(
                    f"{where}: JupyterLab typeset {cell['formulas']} formula(s), the Markdown holds {expected}: "
                    "dollars the renderers pair differently (an escaped \\$ in prose?)"
                )
        return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_lab(root: Path, home: Path) -> LabServer:
    """JupyterLab on 127.0.0.1, a random token and a free port, serving ``root``; its config in ``home``."""
    settings = home / "settings"
    for name, value in SETTINGS.items():
        target = settings / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(value), encoding="utf-8")
    token, port = secrets.token_hex(16), free_port()
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
    }
    log = home / "jupyterlab.log"
    command = [
        sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
        "--ServerApp.allow_root=True", "--LabApp.extension_manager=readonly",
    ]
    with log.open("w") as sink:
        process = subprocess.Popen(command, cwd=root, env=env, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    server = LabServer(process, f"http://127.0.0.1:{port}", token, root, log)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{server.url}/api/status?token={token}", timeout=2) as reply:
                if reply.status == 200:
                    return server
        except OSError:
            time.sleep(0.5)
    server.stop()
    raise RuntimeError(f"JupyterLab did not answer within {START_TIMEOUT_S} s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server over a temporary folder holding a copy of the solution notebooks."""
    if shutil.which("jupyter-lab") is None and not _has_jupyterlab():
        pytest.skip('jupyterlab is not installed; `pip install -e ".[dev,frontend]"` installs it')
    root = tmp_path_factory.mktemp("lab-notebooks")
    for nb in load_course().notebooks:
        shutil.copy2(nb.ipynb, root / nb.ipynb.name)
    server = start_lab(root, tmp_path_factory.mktemp("lab-home"))
    try:
        yield server
    finally:
        server.stop()
    assert server.process.poll() is not None, "the JupyterLab server is still running"


def _has_jupyterlab() -> bool:
    try:
        import jupyterlab  # noqa: F401
    except ImportError:
        return False
    return True




def expected_formulas(nb: nbformat.NotebookNode) -> dict[int, int]:
    """Per Markdown cell, how many formulas the course's Markdown parser (the handouts') finds."""
    return {
        index: len(handout.markdown_to_html(cell.source, f"cell {index}", strict=False)[1].expressions)
        for index, cell in enumerate(nb.cells)
        if cell.cell_type == "markdown"
    }


def wait_for_idle_after_run(page, name: str) -> None:
    """Wait until the run has started (a busy kernel, a queued or a numbered cell) and the kernel stayed idle 2 s."""
    deadline, started, idle_since = time.monotonic() + RUN_TIMEOUT_S, False, None
    while time.monotonic() < deadline:
        state = page.evaluate(BUSY)
        started = started or state["status"] == "busy" or state["queued"] or state["ran"]
        if started and state["status"] == "idle" and not state["queued"]:
            idle_since = idle_since or time.monotonic()
            if time.monotonic() - idle_since > 2:
                return
        else:
            idle_since = None
        time.sleep(0.25)
    raise AssertionError(f"{name}: the kernel was still busy after {RUN_TIMEOUT_S} s")


def wait_for_typesetting(page, settle_s: float = 2.0) -> None:
    """MathJax typesets asynchronously: wait until the number of typeset formulas stops changing."""
    last, since = -1, time.monotonic()
    deadline = since + 60
    while time.monotonic() < deadline:
        count = page.evaluate("() => document.querySelectorAll('mjx-container').length")
        if count != last:
            last, since = count, time.monotonic()
        elif time.monotonic() - since > settle_s:
            return
        time.sleep(0.25)


def run_all_cells(browser, lab: LabServer, name: str) -> FrontendRun:
    """Open ``name`` in JupyterLab, click Run → Run All Cells, wait for the kernel to go idle, save."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(lab.url) or route.request.url.startswith("data:") else route.abort())
    try:
        page.goto(f"{lab.url}/lab/tree/{name}?reset&token={lab.token}", wait_until="domcontentloaded")
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=START_TIMEOUT_S * 1000)
        page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=START_TIMEOUT_S * 1000)
        page.get_by_text(re.compile(r"^Python 3 \| Idle$")).wait_for(timeout=START_TIMEOUT_S * 1000)
        page.wait_for_timeout(2000)  # the session is connected; give the kernel a moment
        page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
        page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
        wait_for_idle_after_run(page, name)
        wait_for_typesetting(page)
        seen = page.evaluate(INSPECT)
        page.keyboard.press("Control+s")
        page.wait_for_function("() => !document.querySelector('.jp-mod-dirty')", timeout=30_000)
    finally:
        context.close()
    saved = nbformat.read(lab.root / name, as_version=4)
    return FrontendRun(name, seen, saved, expected_formulas(saved))


COURSE = [nb.ipynb.name for nb in load_course().notebooks]


@pytest.mark.parametrize("name", COURSE)
def test_solution_notebook_runs_clean_in_jupyterlab(browser, lab, name):
    run = run_all_cells(browser, lab, name)
    code_cells = [c for c in run.saved.cells if c.cell_type == "code"]
    assert code_cells and all(c.execution_count for c in code_cells), f"{name}: not every code cell ran"
    assert len(run.page["cells"]) == len(run.saved.cells), "the page does not show every cell"
    assert sum(c["formulas"] for c in run.page["cells"]) > 50, "MathJax typeset (almost) nothing"
    assert run.problems() == [], "\n".join(run.problems())


def test_escaped_dollar_fails_in_jupyterlab(browser, lab):
    """The checks catch what the issue saw: JupyterLab pairs \\$5 ... \\$0.50 and typesets the prose as math."""
    nb = new_notebook(cells=[
        new_markdown_cell("# Money\n\nFine: USD 5 and $x_1$ here."),
        new_markdown_cell(r"At an illustrative \$5 per million input tokens, a prompt costs \$0.50 each time."),
        new_code_cell("print('ok')"),
    ])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, lab.root / "escaped_dollar.ipynb")
    problems = run_all_cells(browser, lab, "escaped_dollar.ipynb").problems()
    assert problems, "an escaped dollar in a Markdown cell went unnoticed"
    assert all(p.startswith("escaped_dollar.ipynb: cell 1:") for p in problems), problems
