"""A Colab-like kernel: a virtual environment pinned to Colab's current runtime (RUNTIME), registered as a kernel."""

import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

from . import exits
from .diagnostics import BuilderError

KERNEL_NAME = "colab-pinned"
DEFAULT_VENV = Path(".colab-venv")  # relative to the checkout

# Colab's default CPU runtime, the one place that pins it: googlecolab/backend-info at commit a724079 ("Upgrade to
# Python 3.13", 2026-08-19; pip-freeze.txt and os-info.txt). Update all of it together, from one such commit.
RUNTIME = {
    "date": "2026-08-19",
    "source": "https://github.com/googlecolab/backend-info/commit/a72407924822ea377410b69f0a290150bcb5c9c2",
    "python": "3.13.15",
    "torch": "2.11.0",  # Colab installs torch-2.11.0+cpu from PyTorch's CPU index
    "numpy": "2.1.3",
    "matplotlib": "3.10.0",
    "ipython": "7.34.0",
    "ipykernel": "6.17.1",
    "ipywidgets": "7.7.1",
    "transformers": "5.15.0",  # on Colab; not installed here, since no notebook imports it
}
# What the pinned environment installs besides torch: the kernel stack and every library the notebooks import.
COLAB_PINS = tuple(f"{name}=={RUNTIME[name]}" for name in ("ipykernel", "ipython", "ipywidgets", "numpy", "matplotlib"))
# Colab's own torch, the CPU build from PyTorch's CPU index (PyPI's Linux torch is the CUDA build, several GB of nvidia-* wheels).
DEFAULT_TORCH = f"torch=={RUNTIME['torch']}"
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def runtime_line() -> str:
    """The runtime the canary copies, for its first line of output and the docs."""
    return (f"Colab's CPU runtime of {RUNTIME['date']}: Python {RUNTIME['python']}, torch {RUNTIME['torch']}+cpu, "
            f"numpy {RUNTIME['numpy']}, matplotlib {RUNTIME['matplotlib']}, IPython {RUNTIME['ipython']}, "
            f"ipykernel {RUNTIME['ipykernel']}, ipywidgets {RUNTIME['ipywidgets']} (source: {RUNTIME['source']})")


def default_python() -> tuple[str, str]:
    """(interpreter, note): Colab's Python minor version when one on PATH runs and has venv, else this interpreter, saying so."""
    minor = ".".join(RUNTIME["python"].split(".")[:2])
    found = shutil.which(f"python{minor}")
    if found and _runs_venv(found):
        return found, f"using python{minor} ({found}), Colab's Python minor version"
    why = "is not on PATH" if not found else f"on PATH ({found}) does not run or lacks venv"
    return sys.executable, (f"python{minor} {why}: building the pinned environment with Python "
                            f"{platform.python_version()} ({sys.executable}); Colab runs {RUNTIME['python']}. "
                            "Pass --python to choose another interpreter")


def _runs_venv(python: str) -> bool:
    """Whether ``python`` starts and can make a virtual environment (a pyenv shim of an unselected version cannot)."""
    try:
        return subprocess.run([python, "-c", "import venv, ensurepip"], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


class SetupFailed(BuilderError, RuntimeError):
    """Building the pinned environment failed (pip, venv or the kernel spec): an environment problem, exit 1."""

    exit_code = exits.FAILED


def _python(venv: Path) -> Path:
    """The interpreter inside a virtual environment."""
    return venv / "bin" / "python"


def pins_file(venv: Path) -> Path:
    """Where the environment records what it was built with, so a rebuild happens only on change."""
    return venv / "colab-pins.json"


def install_lines(torch: str = DEFAULT_TORCH, torch_index: str | None = TORCH_CPU_INDEX) -> list[list[str]]:
    """The arguments of each ``pip install`` that builds the environment, in order (tests/test_tooling.py resolves them)."""
    return [["--upgrade", "pip"], [torch, *(["--index-url", torch_index] if torch_index else [])], list(COLAB_PINS)]


def _run(command: list[str], what: str) -> None:
    """Run one setup step; SetupFailed naming the step and pip's last words when it fails."""
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-8:])
        raise SetupFailed(f"colab: {what} failed (exit {done.returncode}):\n{tail}\n"
                          "check the network and the package index, then rerun; the environment is rebuilt from scratch")


def create(venv: Path, *, python: str, torch: str = DEFAULT_TORCH, torch_index: str | None = TORCH_CPU_INDEX,
           fallback_torch: str | None = None) -> dict:
    """Create (or reuse) the pinned environment and register its kernel; return its versions.

    With ``fallback_torch``, a ``torch`` that pip cannot install (the CPU index unreachable, no wheel for this Python)
    gives way to that one, and the versions say ``torch_fallback``: for a machine that cannot copy Colab exactly anyway.
    """
    wanted = {"python": python, "pins": list(COLAB_PINS), "torch": torch, "torch_index": torch_index, "fallback_torch": fallback_torch}
    if not (pins_file(venv).exists() and json.loads(pins_file(venv).read_text()).get("wanted") == wanted):
        _run([python, "-m", "venv", "--clear", str(venv)], f"creating the virtual environment {venv}")
        fell_back = None
        for line in install_lines(torch, torch_index):
            try:
                _run([str(_python(venv)), "-m", "pip", "install", "--quiet", *line], f"pip install {' '.join(line)}")
            except SetupFailed:
                if not (fallback_torch and line and line[0] == torch):
                    raise
                fell_back = (f"{torch} does not install here ({torch_index or 'PyPI'}); "
                             f"the environment has {fallback_torch} instead, the CPU build the builder runs")
                _run([str(_python(venv)), "-m", "pip", "install", "--quiet", fallback_torch, *line[1:]], f"pip install {fallback_torch}")
        _run([str(_python(venv)), "-m", "ipykernel", "install", "--sys-prefix", "--name", KERNEL_NAME,
              "--display-name", "Python 3 (Colab-pinned)"], "registering the colab-pinned kernel spec")
        versions = installed_versions(venv) | ({"torch_fallback": fell_back} if fell_back else {})
        pins_file(venv).write_text(json.dumps({"wanted": wanted, "versions": versions}, indent=2) + "\n")
    return json.loads(pins_file(venv).read_text())["versions"]


def own_torch() -> str:
    """The requirement of the torch this builder runs on (its CPU build): the canary's fallback off Colab's Python."""
    from importlib.metadata import version

    return f"torch=={version('torch').split('+')[0]}"


def versions_line(versions: dict) -> str:
    """The line that says which pinned stack a run used (and, on a new line, any torch it fell back to)."""
    shown = {name: version for name, version in versions.items() if name != "torch_fallback"}
    line = "colab-pinned kernel: " + ", ".join(f"{name} {version}" for name, version in shown.items())
    return line + (f"\ncolab: note: {versions['torch_fallback']}" if versions.get("torch_fallback") else "")


def installed_versions(venv: Path) -> dict:
    """Python, IPython, ipykernel, ipywidgets, numpy, matplotlib and torch versions inside the environment."""
    probe = (
        "import json, platform, IPython, ipykernel, ipywidgets, numpy, matplotlib, torch; "
        "print(json.dumps({'python': platform.python_version(), 'ipython': IPython.__version__, "
        "'ipykernel': ipykernel.__version__, 'ipywidgets': ipywidgets.__version__, 'numpy': numpy.__version__, "
        "'matplotlib': matplotlib.__version__, 'torch': torch.__version__}))"
    )
    out = subprocess.run([str(_python(venv)), "-c", probe], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def use_kernel(venv: Path) -> str:
    """Make the environment's kernel spec visible to this process; return its name."""
    share = str(venv / "share" / "jupyter")
    paths = [p for p in os.environ.get("JUPYTER_PATH", "").split(os.pathsep) if p]
    if share not in paths:
        os.environ["JUPYTER_PATH"] = os.pathsep.join([share, *paths])
    # ipykernel 6.17's debugger warns about Python's frozen modules at every kernel start; nothing here debugs
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    return KERNEL_NAME
