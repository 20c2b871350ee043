"""The tools' pages inline, for a notebook: the L0 trace, the memory map and the swimlane —
the same self-contained pages ``pypto trace`` / ``memory-map`` / ``swimlane`` write — as
objects a cell displays (``_repr_html_``) or ``.show()`` puts on screen.

    from pypto.tools import show
    compiled = kernel.compile(a, out, config=RunConfig(output_dir="b", dump_passes=True,
                                                       enable_l0_trace=True, enable_chip_swimlane=True))
    report = compiled.run(a, out)
    show.trace(report)        # or show.trace(compiled), show.trace("b")
    show.memory_map(compiled)
    show.swimlane(compiled).show()

Each reads the build's artifacts on disk, as the commands do (never runs them); the page
sits in a sandboxed iframe whose ``srcdoc`` is the escaped page, so nothing the artifacts
hold becomes markup of the notebook's. Outside a notebook ``.show()`` writes the page to a
file and says where; ``.save(path)`` writes it where you say.
"""

from __future__ import annotations

import html
import sys
import tempfile
from pathlib import Path

HEIGHT = 560  # px of the inline frame


class ShowError(Exception):
    """Nothing to show: one line saying what to turn on."""


class Page:
    """One self-contained HTML page, shown inline."""

    def __init__(self, page: str, title: str):
        self.page = page
        self.title = title

    def __repr__(self) -> str:
        return f"<pypto page {self.title!r}: {len(self.page)} bytes of HTML; .show() or .save(path)>"

    def _repr_html_(self) -> str:
        return (f"<iframe title='{html.escape(self.title, quote=True)}' sandbox='allow-scripts' "
                f"style='width:100%;box-sizing:border-box;height:{HEIGHT}px;border:1px solid #ccc' "
                f"srcdoc='{html.escape(self.page, quote=True)}'></iframe>")

    def save(self, path) -> Path:
        path = Path(path)
        path.write_text(self.page)
        return path

    def show(self):
        """In a notebook: displayed in the cell's output. Elsewhere: the page in a file,
        whose path is printed and returned."""
        # a notebook has IPython loaded already; importing it here would change the process
        # (it raises the recursion limit to 3000) for a script that never uses it
        ipython = sys.modules.get("IPython")
        if ipython is not None and ipython.get_ipython() is not None:
            from IPython.display import display

            display(self)
            return None
        fd, name = tempfile.mkstemp(prefix="pypto_", suffix=".html")
        with open(fd, "w") as f:
            f.write(self.page)
        print(f"wrote {name} (open it in a browser)")
        return Path(name)


def _build(source) -> Path:
    """The build directory of a CompiledProgram, a RunReport's L0 trace, or a path."""
    directory = getattr(source, "output_dir", None)
    if directory is None and not isinstance(source, (str, Path)):
        raise ShowError(f"{type(source).__name__} has no build directory to read: compile with "
                        "RunConfig(output_dir=...) or kernel.compile(...)")
    return Path(directory if directory is not None else source)


def trace(source, index: int = -1) -> Page:
    """The L0 trace page of one launch (``index``: the last by default): from a RunReport's
    trace directories, a build's sim/, or an OPPROF directory / visualize_data.bin."""
    from pypto.tools import clean_sim_trace, trace_page

    dirs = getattr(source, "trace_dirs", None)
    if dirs is not None:
        if not dirs:
            raise ShowError("this run wrote no L0 trace: run on platform='a2a3sim' with "
                            "RunConfig(enable_l0_trace=True) and an output_dir")
        path = Path(dirs[index])
    else:
        path = _build(source)
    try:
        bins, _ = clean_sim_trace.locate(path)
        bin_path = bins[index]
        cleaned, _, _ = clean_sim_trace.prepare(bin_path, keep_scalar=False, raw_metrics=False)
    except clean_sim_trace.CleanError as exc:
        raise ShowError(str(exc)) from None
    return Page(trace_page.render(cleaned, f"trace: {clean_sim_trace.name_of(bin_path)}"),
                f"L0 trace {clean_sim_trace.name_of(bin_path)}")


def memory_map(source, pass_name: str = "AllocateMemoryAddr") -> Page:
    """The memory map of a build's pass dump (compiled with ``dump_passes``), or of a dump file."""
    from pypto.tools import memory_map as mm

    try:
        dump = mm.find_dump(_build(source), pass_name)
        backend = mm.notes(mm.read_dump(dump)).get("backend", "a2a3")
        return Page(mm.render(mm.model(dump, backend)), f"memory map {dump.name}")
    except mm.MapError as exc:
        raise ShowError(str(exc)) from None


def swimlane(source) -> Page:
    """The chip's swimlane of a build's last run (``enable_chip_swimlane``)."""
    from pypto.tools import swimlane as lane
    from pypto.tools.swimlane_page import page_data, render

    build = _build(source)
    try:
        records, deps, names = lane._inputs(build, None)
    except lane.SwimlaneError as exc:
        raise ShowError(str(exc)) from None
    data = page_data(records, lane._names(deps, names), lane._edges(deps), 1e6 / records["hz"])
    return Page(render(data, f"swimlane: {build.name}"), f"swimlane {build.name}")
