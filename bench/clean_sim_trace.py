"""clean_sim_trace figures: wall time and events per second for synthetic L0 traces of N
load -> compute steps (each a TLOAD slice, a set_flag/wait_flag pair and a VEXP slice), so
the flow matching has N arrows to place. Reading, cleaning and writing are timed apart
(with Python's cyclic collector on, as a library caller has it), then the command line end
to end (which switches the collector off while it works).

    python bench/clean_sim_trace.py [--sizes 1000 4000 20000] [--repeat N]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import tempfile
from pathlib import Path

from pypto.tools import clean_sim_trace, trace_page
from pypto.sim.reports.insight_format import TRACE, encode_block
from timing import median_time  # bench/timing.py: scripts run as python bench/<name>.py


def synthetic(n: int) -> dict:
    """One vector core: MTE2 loads, each signalling VECTOR, which computes on it."""
    events = [{"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "core0.veccore0"}}]
    events += [{"ph": "M", "name": "thread_name", "pid": 0, "tid": k, "args": {"name": lane}}
               for k, lane in enumerate(("MTE2", "VECTOR", "MTE3"))]
    detail = {"detail": "PIPE:MTE2,TRIGGERPIPE:VECTOR,FLAGID:0,"}
    for k in range(n):
        t = k * 30
        events += [
            {"ph": "X", "name": "TLOAD", "ts": t, "dur": 10, "pid": 0, "tid": 0},
            {"ph": "B", "name": "SET_FLAG", "ts": t + 10, "pid": 0, "tid": 0, "args": detail},
            {"ph": "E", "name": "SET_FLAG", "ts": t + 11, "pid": 0, "tid": 0},
            {"ph": "B", "name": "WAIT_FLAG", "ts": t + 11, "pid": 0, "tid": 1, "args": detail},
            {"ph": "E", "name": "WAIT_FLAG", "ts": t + 12, "pid": 0, "tid": 1},
            {"ph": "X", "name": "VEXP", "ts": t + 12, "dur": 10, "pid": 0, "tid": 1},
        ]
    return {"traceEvents": events}



def row(n: int, repeat: int, tmp: Path) -> str:
    trace = synthetic(n)
    path = Path(tmp) / f"trace{n}.bin"
    path.write_bytes(encode_block(TRACE, trace))
    read_s, (traces, _) = median_time(lambda: clean_sim_trace.load(path), repeat)
    clean_s, (cleaned, stats) = median_time(lambda: clean_sim_trace.clean(traces), repeat)
    write_s, _ = median_time(lambda: (clean_sim_trace.dumps(cleaned), trace_page.render(cleaned, "bench")), repeat)
    argv = [str(path), "-o", str(Path(tmp) / f"out{n}"), "--no-copy-raw"]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        cli_s, _ = median_time(lambda: clean_sim_trace.main(argv), repeat)
    count = len(trace["traceEvents"])
    return (f"{n:>7} {count:>8} {read_s:>7.2f} {clean_s:>8.2f} {write_s:>8.2f} {read_s + clean_s + write_s:>6.2f} "
            f"{cli_s:>6.2f} {count / cli_s:>9,.0f} {stats['flows']:>6}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 4000, 20000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'N':>7} {'events':>8} {'read s':>7} {'clean s':>8} {'write s':>8} {'sum s':>6} {'CLI s':>6} "
          f"{'events/s':>9} {'flows':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            print(row(n, args.repeat, Path(tmp)), flush=True)


if __name__ == "__main__":
    main()
