"""How a ``RunReport`` reads: its repr, the one-line summary ``RunConfig(report=True)``
prints after a call, and the small table a notebook shows. The kernel's cycles come
first — what tuning an InCore function shrinks — then the makespan, which on the chip
adds the orchestration, dispatch and pickup around the tasks; both with µs."""

from __future__ import annotations

import html

# more cores than this and the busy cycles are summed per pipe (a chip has 72)
_CORES_SHOWN = 2


def microseconds(cycles: int, clock_hz: int) -> str:
    return f"{cycles * 1e6 / clock_hz:.3f} µs" if clock_hz else "? µs"


def _timed(report) -> bool:
    return report.platform != "ref" and (report.cycles > 0 or report.launches > 0)


def _busy(report) -> str:
    cores = report.pipe_cycles
    if len(cores) <= _CORES_SHOWN:
        return ", ".join(f"{core} {' '.join(f'{p}={c}' for p, c in sorted(pipes.items()))}"
                         for core, pipes in sorted(cores.items()))
    total: dict = {}
    for pipes in cores.values():
        for p, c in pipes.items():
            total[p] = total.get(p, 0) + c
    return f"{len(cores)} cores: " + " ".join(f"{p}={c}" for p, c in sorted(total.items()))


def summary_fields(report) -> list[str]:
    """The repr's fields, in reading order."""
    if not _timed(report):
        why = "ref keeps no time" if report.platform == "ref" else "no launch"
        return [f"platform={report.platform or '?'!s}", f"cycles=0 ({why})", f"prints={len(report.prints)}"]
    hz = report.clock_hz
    fields = [f"kernel_cycles={report.kernel_cycles} ({microseconds(report.kernel_cycles, hz)})",
              f"cycles={report.cycles} ({microseconds(report.cycles, hz)} makespan)"]
    if report.tasks:
        fields.append(f"tasks={len(report.tasks)}")
    fields += [f"instructions={report.instructions}", f"sync_instructions={report.sync_instructions}",
               f"launches={report.launches}", f"busy=[{_busy(report)}]", f"wall_seconds={report.wall_seconds:.3f}"]
    return fields


def summary_line(report, name: str = "") -> str:
    """``[pypto] add on a2a3sim: kernel 1666 cycles (0.926 µs), makespan 3946 cycles
    (2.192 µs), 1 task`` — what ``RunConfig(report=True)`` / ``PYPTO_REPORT=1`` print."""
    head = f"[pypto] {name + ' ' if name else ''}on {report.platform or '?'}"
    if not _timed(report):
        return f"{head}: ran (ref is the interpreter: no cycles; platform='a2a3sim' times it)"
    hz = report.clock_hz
    tasks = len(report.tasks)
    return (f"{head}: kernel {report.kernel_cycles} cycles ({microseconds(report.kernel_cycles, hz)}), "
            f"makespan {report.cycles} cycles ({microseconds(report.cycles, hz)})"
            + (f", {tasks} task{'s' * (tasks != 1)}" if tasks else ""))


def html_table(report) -> str:
    """A small table for a notebook; every value escaped."""
    rows = [("platform", report.platform or "?")]
    if _timed(report):
        hz = report.clock_hz
        rows += [("kernel_cycles", f"{report.kernel_cycles} ({microseconds(report.kernel_cycles, hz)})"),
                 ("cycles (makespan)", f"{report.cycles} ({microseconds(report.cycles, hz)})"),
                 ("tasks", str(len(report.tasks))), ("instructions", str(report.instructions)),
                 ("sync instructions", str(report.sync_instructions)), ("launches", str(report.launches)),
                 ("busy cycles", _busy(report))]
    else:
        rows.append(("cycles", "none: the ref platform interprets the IR and keeps no time"))
    if report.prints:
        rows.append(("pl.debug_print lines", str(len(report.prints))))
    body = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th><td style='text-align:left'>"
                   f"{html.escape(v)}</td></tr>" for k, v in rows)
    return f"<table class='pypto-run-report'><caption>RunReport</caption>{body}</table>"
