"""Run each notebook alone in an empty folder through a real Jupyter kernel, and time its cells."""

import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError
from traitlets.config import Config

from .cells import first_line


@dataclass(frozen=True)
class CellTiming:
    """How long one code cell took, and how to recognise it."""

    index: int
    seconds: float
    first_line: str

    def __str__(self) -> str:
        return f"cell {self.index} ({self.seconds:.2f} s): {self.first_line}"


@dataclass
class RunResult:
    """The outcome of executing one notebook."""

    name: str
    seconds: float
    cells: list[CellTiming] = field(default_factory=list)
    error: str | None = None
    failed_cell: int | None = None
    executed: Path | None = None
    errors: list[tuple[int, nbformat.NotebookNode]] = field(default_factory=list)
    where: str | None = None  # the first failure in a few lines: notebooks/<name>.py(line), that line, the message

    def slowest(self, count: int = 3) -> list[CellTiming]:
        """The ``count`` slowest code cells, slowest first."""
        return sorted(self.cells, key=lambda c: c.seconds, reverse=True)[:count]


def _cell_seconds(cell: nbformat.NotebookNode) -> float:
    """Wall time of one executed cell, from the timestamps nbclient records."""
    stamps = cell.get("metadata", {}).get("execution", {})
    try:
        start = datetime.fromisoformat(stamps["iopub.execute_input"])
        end = datetime.fromisoformat(stamps["shell.execute_reply"])
    except KeyError:
        return 0.0
    return (end - start).total_seconds()


def timings(nb: nbformat.NotebookNode) -> list[CellTiming]:
    """Per-cell wall times of an executed notebook."""
    return [
        CellTiming(i, _cell_seconds(cell), first_line(cell.source, 70, skip="builder:"))
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code" and "execution" in cell.get("metadata", {})
    ]


def error_outputs(nb: nbformat.NotebookNode) -> list[tuple[int, nbformat.NotebookNode]]:
    """(cell index, error output) for every error an executed notebook holds."""
    return [
        (i, out) for i, cell in enumerate(nb.cells) for out in cell.get("outputs", []) if out.get("output_type") == "error"
    ]


def failed_cell(nb: nbformat.NotebookNode) -> int | None:
    """Index of the first cell with an error output."""
    found = error_outputs(nb)
    return found[0][0] if found else None


def kernel_config(socket_dir: str) -> Config:
    """Talk to the kernel over Unix sockets: no TCP port races between parallel or rapid runs."""
    config = Config()
    config.KernelManager.transport = "ipc"
    config.KernelManager.ip = str(Path(socket_dir) / "kernel")
    return config


def run(
    ipynb: Path, out_dir: Path | None = None, *, timeout: int = 600, kernel_name: str = "python3", allow_errors: bool = False,
    coalesce_streams: bool = False,
) -> RunResult:
    """Execute a copy of ``ipynb`` alone in an empty temporary folder; optionally keep the executed copy.

    With ``allow_errors`` every cell runs even after one fails; the errors stay in the outputs.
    With ``coalesce_streams`` nbclient joins each cell's stdout (and stderr) chunks into one output,
    so two runs compare equal however the kernel happened to flush.
    """
    with tempfile.TemporaryDirectory(prefix="course-run-") as tmp, tempfile.TemporaryDirectory(prefix="kernel-") as sockets:
        lone = Path(tmp) / ipynb.name
        shutil.copyfile(ipynb, lone)
        nb = nbformat.read(lone, as_version=4)
        client = NotebookClient(
            nb, timeout=timeout, kernel_name=kernel_name, resources={"metadata": {"path": tmp}},
            record_timing=True, config=kernel_config(sockets), allow_errors=allow_errors, coalesce_streams=coalesce_streams,
        )
        start = time.perf_counter()
        error = None
        try:
            client.execute()
        except (CellExecutionError, CellTimeoutError, DeadKernelError) as exc:
            error = str(exc)
        result = RunResult(ipynb.stem, time.perf_counter() - start, timings(nb), error, failed_cell(nb), errors=error_outputs(nb))
        result.where = failure_summary(ipynb, nb, result.errors) if error else None
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        result.executed = out_dir / ipynb.name
        nbformat.write(nb, result.executed)
    return result


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# The failing line of a cell in a traceback: IPython 8 ("Cell In[3], line 7") or 7 ("----> 7 x = f()").
_CELL_LINE = (re.compile(r"Cell In\[\d+\], line (\d+)"), re.compile(r"^-+>\s*(\d+)", re.MULTILINE))


def plain(text: str) -> str:
    """``text`` without terminal colour codes."""
    return _ANSI.sub("", text)


def failure_summary(ipynb: Path, nb: nbformat.NotebookNode, errors: list) -> str:
    """Where the first error happened, as ``notebooks/<name>.py(line)`` when the paired source is there, with that line and the message."""
    from .pairing import cell_lines

    index, output = errors[0] if errors else (failed_cell(nb), {})
    message = plain(f"{output.get('ename', 'Error')}: {output.get('evalue', '')}").strip()
    if index is None:
        return message
    trace = plain("\n".join(output.get("traceback", [])))
    found = next((m for pattern in _CELL_LINE if (m := pattern.search(trace))), None)
    line_in_cell = int(found.group(1)) if found else None
    source = nb.cells[index].source.split("\n")
    where, py = f"cell {index}", ipynb.with_suffix(".py")
    if py.exists() and line_in_cell:
        start = cell_lines(py.read_text(encoding="utf-8"), len(nb.cells))[index]
        if start:
            where = f"{_from_notebooks(py)}({start + line_in_cell}) (cell {index})"
    failing = source[line_in_cell - 1].strip() if line_in_cell and line_in_cell <= len(source) else ""
    return f"{where}: {failing}\n    {message}" if failing else f"{where}: {message}"


def _from_notebooks(path: Path) -> str:
    """``path`` from its last ``notebooks`` folder on (``notebooks/ru/x.py``), as reports name sources."""
    parts = path.parts
    found = [i for i, part in enumerate(parts) if part == "notebooks"]
    return Path(*parts[found[-1]:]).as_posix() if found else str(path)


def last_seconds(executed: list[Path]) -> float | None:
    """The mean time per notebook of the executed copies a previous run left (their cell timings), or None when none is there."""
    totals = []
    for path in executed:
        try:
            totals.append(sum(cell.seconds for cell in timings(nbformat.read(path, as_version=4))))
        except (OSError, ValueError):  # absent, or not a readable notebook: no estimate from it
            continue
    return sum(totals) / len(totals) if totals else None


def report(result: RunResult, budget: float | None = None) -> str:
    """A short human report: wall time, the three slowest cells, and any failure or budget breach."""
    lines = [f"{result.name}: {result.seconds:.1f} s wall, {len(result.cells)} code cells"]
    lines += [f"  slow: {cell}" for cell in result.slowest()]
    if result.error:
        lines.append(f"  FAILED at {result.where or result.error}")
    if budget is not None and result.seconds > budget:
        names = "; ".join(str(c) for c in result.slowest())
        lines.append(f"  OVER BUDGET: {result.seconds:.1f} s > {budget:.1f} s. Slowest cells: {names}")
    return "\n".join(lines)
