"""Draw the on-chip memory of a pass dump: address across, lifetime (dump line) down.

    python -m pypto.tools.memory_map <dump.py | passes_dump/ | output_dir/>
        [-o OUTPUT] [-p PASS_NAME] [-b BACKEND]

One self-contained HTML page (no network): a collapsible card per compute function; per
memory space a pill with its high-water mark, capacity and usage (red at >= 95 %); one box
per tile over the lines it is live, chains of tiles that take over one slot in turn merged
(``name +N``: N more tiles, as the page's legend says), dashed boxes for views, red boxes
where two allocations overlap in address and lifetime; every space in the window at zoom 1
(each as wide as the others, or widths by bytes), a label too wide for its box beside it,
zoom, a limit/used x-axis switch, per-space toggles; the IR alongside, line for line, and
click-to-pin highlighting a tile's mentions. The dump is parsed, never run; every string
from it is escaped.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from pypto.errors import PyptoError
from pypto.ir import nodes as n
from pypto.ir.collector import collector_paused
from pypto.lang import parse
from pypto.ir.printer import expr
from pypto.ir.types import TileType
from pypto.backend import BACKENDS, MemorySpace
from pypto.tools.memory_map_page import PAGE
from pypto.tools import description

SPACE_ORDER = [MemorySpace.Vec, MemorySpace.Mat, MemorySpace.Left, MemorySpace.LeftScale, MemorySpace.Right,
               MemorySpace.RightScale, MemorySpace.Acc, MemorySpace.Bias]
NOTE = re.compile(r"^# ([\w ]+): (.*)$")


class MapError(Exception):
    """Why there is no map to draw: one line."""


# ----------------------------------------------------------------------------- finding the dump


# A pass dump is a few hundred KiB at most; a file far larger is not one, and parsing it
# would take minutes and gigabytes before saying so.
MAX_DUMP_BYTES = 16 * 1024 * 1024
# Pass names are identifiers (they are spliced into a glob: '*' or '/' would be a pattern or a path).
PASS_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def find_dump(path: Path, pass_name: str) -> Path:
    if not PASS_NAME.fullmatch(pass_name):
        raise MapError(f"-p {pass_name!r} is not a pass name: one identifier, as in the dump file names "
                       "(NN_after_<PassName>.py), e.g. -p AllocateMemoryAddr")
    try:
        exists = path.exists()
    except (OSError, ValueError) as exc:
        raise MapError(f"{path}: cannot look at it: {getattr(exc, 'strerror', None) or exc}") from None
    if not exists:
        raise MapError(f"{path}: no such file or directory")
    if path.is_file():
        return path
    if not path.is_dir():  # a FIFO or a device would be read forever
        raise MapError(f"{path}: not a regular file or a directory")
    directories = [d for d in (path, path / "passes_dump") if d.is_dir()]
    for directory in directories:
        dumps = sorted(p for p in directory.glob(f"*_after_{pass_name}.py") if p.is_file())
        if dumps:
            return dumps[-1]
    others = sorted(p for d in directories for p in d.glob("*_after_*.py") if p.is_file())
    for other in others:
        if notes(_head(other)).get("memory_planner") == "PTOAS":
            raise MapError(_ptoas(path))
    if others:
        have = ", ".join(p.name for p in others[:4]) + (", ..." if len(others) > 4 else "")
        raise MapError(f"no '*_after_{pass_name}.py' dump under {path} (it has {have}). Pass -p with one of "
                       "those pass names, or the dump file directly.")
    raise MapError(f"no '*_after_{pass_name}.py' dump under {path}. Compile with dump_passes enabled, or pass the "
                   "dump file directly.")


def read_dump(path: Path) -> str:
    """The dump's text. A file that is not UTF-8 text — binary data is, once it holds a NUL
    byte, whatever its other bytes happen to be — is not a dump."""
    try:
        if path.stat().st_size > MAX_DUMP_BYTES:
            raise MapError(f"{path}: not a pass dump: {path.stat().st_size} bytes, more than the "
                           f"{MAX_DUMP_BYTES // (1024 * 1024)} MiB this tool reads")
        data = path.read_bytes()
    except OSError as exc:
        raise MapError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is None or "\0" in text:
        raise MapError(f"{path}: not a pass dump (not UTF-8 text)")
    return text


def _head(path: Path) -> str:
    """The first lines of a file, when they are text: enough for its ``# key: value`` notes."""
    try:
        with path.open("rb") as f:
            return f.read(4096).decode("utf-8", errors="replace")
    except OSError:
        return ""


def notes(text: str) -> dict:
    """The ``# key: value`` lines heading a dump."""
    out = {}
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        m = NOTE.match(line)
        if m:
            out[m.group(1).strip()] = m.group(2).strip()
    return out


def _ptoas(where) -> str:
    return (f"{where}: compiled with memory_planner=PTOAS, which skips AllocateMemoryAddr: the assembler places "
            "the tiles, so the dump carries no offsets and there is nothing to draw. Compare end to end instead.")


# ----------------------------------------------------------------------------- the model


def model(dump: Path, backend: str = "a2a3") -> dict:
    """The page's data: functions, their spaces and boxes, and the dump's text."""
    with collector_paused():  # the tiles' records, by the thousand, with no cycles among them
        return _model(dump, backend)


def _model(dump: Path, backend: str) -> dict:
    text = read_dump(dump)
    header = notes(text)
    if header.get("memory_planner") == "PTOAS":
        raise MapError(_ptoas(dump))
    try:
        program = parse(text, filename=str(dump))
    except PyptoError as exc:
        where = f" at {exc.span}" if exc.span is not None else ""
        reason = exc.message.split("; use sys.set_int_max_str_digits", 1)[0]  # advice for programmers, not users
        raise MapError(f"{dump}: not a pass dump this tool can read: {reason}{where}") from None
    except (RecursionError, MemoryError):  # Python's own parser gives up on deep nesting with these
        raise MapError(f"{dump}: not a pass dump this tool can read: nested too deeply") from None
    soc = BACKENDS[backend]
    functions = []
    for fn in program.functions:
        if fn.type.is_kernel:
            tiles = _tiles(fn)
            if tiles:
                functions.append((fn, tiles))
    for _, tiles in functions:
        placed = {}
        for t in (t for t in tiles if t["alloc_addr"] is not None):
            problem = impossible(t, soc)
            where = (t["space"], t["alloc_addr"], t["alloc_size"], t["slots"])
            first = placed.setdefault(t["memref"], (t["name"], where))
            if not problem and first[1] != where:
                problem = (f"MemRef {t['memref']!r} is {_where(where)} here but {_where(first[1])} for tile "
                           f"{first[0]!r}")
            if problem:
                raise MapError(f"{dump}: tile {t['name']!r}: {problem}")
    if not any(t["addr"] is not None for _, tiles in functions for t in tiles):
        has_tiles = any(isinstance(t, TileType) for fn in program.functions for t in n.symbols(fn).values())
        if not has_tiles:
            raise MapError(f"{dump}: no compute function has on-chip tiles, so there is nothing to draw")
        raise MapError(f"{dump}: no tile has an address yet: this dump is from before AllocateMemoryAddr. Use a "
                       "dump at or after AllocateMemoryAddr.")
    lines = text.splitlines()
    out = []
    for fn, tiles in functions:
        tiles = [t for t in tiles if t["addr"] is not None]
        boxes = _boxes(tiles)
        spaces = []
        for space in SPACE_ORDER:
            mine = [b for b in boxes if b["space"] == space.name]
            if not mine:
                continue
            hwm = max(b["addr"] + b["size"] for b in mine)
            capacity = soc.spec(space).capacity
            for b in mine:
                b["over"] = b["addr"] + b["size"] > capacity
            spaces.append({"name": space.name, "hwm": hwm, "capacity": capacity,
                           "usage": round(100.0 * hwm / capacity, 1), "over": hwm > capacity})
        first = fn.span.line if fn.span else 1
        last = max([t["end"] for t in tiles] + [first])
        last = max(last, _last_line(fn, first))
        out.append({"name": fn.name, "type": fn.type.name, "first": first, "last": last,
                    "source": lines[first - 1:last], "spaces": spaces, "boxes": boxes})
    # The pass comes from the dump's own "# after:" line: a file name can be anything.
    return {"dump": str(dump), "pass": header.get("after"), "backend": soc.name, "notes": header, "functions": out}


def _where(placement) -> str:
    space, addr, size, slots = placement
    return f"{size} B at {addr:#x} in {space}" + (f" in {slots} slots" if slots > 1 else "")


def impossible(tile: dict, soc) -> str | None:
    """Why no memory could hold this tile as its dump places it, or None. A tile running
    past the end of its space is possible to draw (and flagged); one starting past it, or
    larger than the space, is not."""
    m, where = f"MemRef {tile['memref']!r}", tile["space"]
    space = MemorySpace[where]
    if space not in SPACE_ORDER or space not in soc.spaces:
        return f"{m} is in {where}, which is not an on-chip space of {soc.name}"
    capacity = soc.spec(space).capacity
    if tile["alloc_size"] <= 0:
        return f"{m} has size {tile['alloc_size']}"
    if tile["alloc_addr"] < 0:
        return f"{m} at negative address {tile['alloc_addr']}"
    if tile["alloc_addr"] >= capacity:
        return f"{m} at address {tile['alloc_addr']:#x} starts past the end of {where} ({capacity} B)"
    if tile["alloc_size"] > capacity:
        return f"{m} of {tile['alloc_size']} B is larger than all of {where} ({capacity} B)"
    if tile["alloc_size"] % tile["slots"]:
        return f"{m} of {tile['alloc_size']} B does not split into {tile['slots']} equal slots"
    if tile["const_index"] is not None and not 0 <= tile["const_index"] < tile["slots"]:
        return f"slot index {tile['const_index']} of {m} with {tile['slots']} slot{'s' * (tile['slots'] > 1)}"
    if tile["bytes"] > tile["alloc_size"] // tile["slots"]:
        return f"needs {tile['bytes']} B, but its slot of {m} holds only {tile['alloc_size'] // tile['slots']} B"
    return None


def _last_line(fn: n.Function, default: int) -> int:
    return max([s.span.end_line for s in n.walk_stmts(fn.body) if getattr(s, "span", None)] + [default])


def _tiles(fn: n.Function) -> list[dict]:
    """Every tile bound in ``fn`` with its MemRef, and the dump lines it is live over (a
    tile read in a loop it was defined before, or carried by, lives over the whole loop)."""
    defs, uses, loops = {}, {}, []
    named: dict[str, list] = {}  # lines printing a loop's or if's result: its yields

    def line(stmt):
        return stmt.span.line if stmt.span else 0

    def read(stmt, names):
        for name in names:
            uses.setdefault(name, []).append(line(stmt))

    def walk(body, enclosing):
        for stmt in body:
            if isinstance(stmt, n.Assign):
                read(stmt, _names(stmt.value))
                defs[stmt.target] = (line(stmt), stmt.type, _op(stmt.value), enclosing)
            elif isinstance(stmt, n.Eval):
                read(stmt, _names(stmt.value))
            elif isinstance(stmt, (n.Yield, n.Return)):
                read(stmt, [v.name for v in stmt.values if isinstance(v, n.Var)])
            elif isinstance(stmt, n.LOOPS):
                read(stmt, [a.init.name for a in stmt.iter_args if isinstance(a.init, n.Var)])
                end = max([s.span.end_line for s in n.walk_stmts(stmt.body) if s.span] + [line(stmt)])
                loop = (line(stmt), end, {a.name for a in stmt.iter_args} | {b.name for b in stmt.results})
                loops.append(loop)
                for a in stmt.iter_args:
                    defs[a.name] = (line(stmt), a.type, "iter_arg", enclosing)
                walk(stmt.body, (*enclosing, loop))
                for b in stmt.results:
                    defs[b.name] = (end, b.type, "loop result", enclosing)
                    named.setdefault(b.name, []).extend(_yield_lines(stmt.body))  # printed `b = pl.yield_(...)`
            elif isinstance(stmt, n.If):
                read(stmt, [])
                walk(stmt.then_body, enclosing)
                walk(stmt.else_body, enclosing)
                for b in stmt.results:
                    defs[b.name] = (line(stmt), b.type, "if result", enclosing)
                    named.setdefault(b.name, []).extend(_yield_lines(stmt.then_body) + _yield_lines(stmt.else_body))
            elif isinstance(stmt, n.BLOCKS):
                walk(stmt.body, enclosing)

    walk(fn.body, ())
    tiles = []
    for name, (start, t, op, enclosing) in defs.items():
        if not isinstance(t, TileType) or t.memref is None or t.space is None:
            continue
        # The lines naming this tile, from the IR: what the page highlights when it is pinned.
        mentions = sorted({start, *uses.get(name, []), *named.get(name, [])} - {0})
        end = max(uses.get(name, [start]) + [start])
        for lo, hi, carried in loops:
            touched = [u for u in uses.get(name, []) if lo < u <= hi]
            if touched and (start < lo or name in carried):
                start, end = min(start, lo), max(end, hi)
        m = t.memref
        const = m.index.value if isinstance(m.index, n.Const) and isinstance(m.index.value, int) else None
        # A constant slot index places the tile in its slot; a dynamic one (i % 2) rotates
        # through all of them, so the tile is drawn over the whole allocation.
        dynamic = m.index is not None and const is None
        slot = None if m.size is None else m.size // m.slots
        addr, size = None, slot
        if m.addr is not None:
            if dynamic:
                addr, size = m.addr, m.size
            else:
                addr = m.addr + (const or 0) * slot
        tiles.append({"name": name, "space": t.space.name, "memref": m.name, "slots": m.slots,
                      "index": None if m.index is None else expr(m.index), "const_index": const,
                      "dynamic": dynamic, "alloc_addr": m.addr, "alloc_size": m.size, "addr": addr,
                      "size": size, "bytes": t.nbytes, "shape": list(t.shape), "dtype": t.dtype.short, "op": op,
                      "start": start, "end": end, "lines": mentions})
    return tiles


def _yield_lines(body) -> list[int]:
    return [s.span.line for s in body if isinstance(s, n.Yield) and s.span]


def _names(value) -> list[str]:
    return [name for e in n.value_exprs(value) for name in sorted(n.expr_vars(e))]


def _op(value) -> str:
    if isinstance(value, n.Call):
        return value.op
    if isinstance(value, n.FuncCall):
        return value.callee
    return "value"


def _boxes(tiles: list[dict]) -> list[dict]:
    """Tiles of one slot whose lifetimes touch become one box (a chain computed in place);
    boxes of different allocations overlapping in address and lifetime are conflicts; a
    box inside a larger one of the same allocation, live at the same time, is a view."""
    groups: dict[tuple, list] = {}
    for t in sorted(tiles, key=lambda t: (t["start"], t["name"])):
        key = (t["space"], t["memref"], t["addr"], t["index"] if t["dynamic"] else None)
        chains = groups.setdefault(key, [])
        for chain in chains:
            if t["start"] <= chain[-1]["end"] and t["size"] == chain[0]["size"]:
                chain.append(t)
                break
        else:
            chains.append([t])
    boxes = []
    for chains in groups.values():
        for chain in chains:
            head = chain[0]
            boxes.append({"name": head["name"], "aliases": [t["name"] for t in chain[1:]], "space": head["space"],
                          "memref": head["memref"], "addr": head["addr"], "size": head["size"],
                          "start": min(t["start"] for t in chain), "end": max(t["end"] for t in chain),
                          "slots": head["slots"], "index": head["index"], "dynamic": head["dynamic"],
                          "shape": head["shape"], "dtype": head["dtype"], "op": head["op"], "kind": "tile",
                          "lines": sorted({x for t in chain for x in t["lines"]})})
    for a in boxes:
        for b in boxes:
            if a is b or a["space"] != b["space"]:
                continue
            overlap = a["addr"] < b["addr"] + b["size"] and b["addr"] < a["addr"] + a["size"] and \
                a["start"] <= b["end"] and b["start"] <= a["end"]
            if not overlap:
                continue
            if a["memref"] != b["memref"]:
                a["kind"] = "conflict"
            elif a["size"] < b["size"] and a["kind"] != "conflict" and not (a["dynamic"] or b["dynamic"]):
                a["kind"] = "view"  # a rotating allocation covers its slots: not a view of them
    return sorted(boxes, key=lambda b: (SPACE_ORDER.index(MemorySpace[b["space"]]), b["addr"], b["start"]))


# ----------------------------------------------------------------------------- the page


def render(data: dict) -> str:
    """The self-contained page. The data goes in as JSON whose every '<' is escaped, and
    the page's script writes every string with textContent: nothing from the dump is markup."""
    payload = json.dumps(data, ensure_ascii=True).replace("<", "\\u003c").replace(">", "\\u003e")
    title = json.dumps(f"memory map: {Path(data['dump']).name}").replace("<", "\\u003c")
    return PAGE.replace("/*__DATA__*/null", payload).replace("/*__TITLE__*/\"\"", title)


def run(argv=None) -> Path:
    parser = argparse.ArgumentParser(prog="pypto memory-map", description=description(__doc__))
    parser.add_argument("path", help="a pass dump, a passes_dump/ directory or an output directory")
    parser.add_argument("-o", "--output", help="the HTML file (default: <dump>.memory_map.html)")
    parser.add_argument("-p", "--pass-name", default="AllocateMemoryAddr", help="which pass's dump, in a directory")
    parser.add_argument("-b", "--backend", default=None, help=f"one of: {', '.join(sorted(BACKENDS))}")
    parser.error = lambda message: (_ for _ in ()).throw(MapError(message))
    args = parser.parse_args(argv)
    dump = find_dump(Path(args.path), args.pass_name)
    backend = args.backend or notes(read_dump(dump)).get("backend", "a2a3")
    if backend not in BACKENDS:
        raise MapError(f"unknown backend {backend!r}; known backends: {', '.join(sorted(BACKENDS))}")
    page = render(model(dump, backend))
    out = Path(args.output) if args.output else dump.with_suffix(".memory_map.html")
    try:
        out.write_text(page)
    except OSError as exc:
        raise MapError(f"{out}: cannot write the page: {exc.strerror or exc}") from None
    print(f"wrote {out}")
    return out


def main(argv=None) -> int:
    try:
        run(argv)
    except (MapError, OSError) as exc:
        return _fail(str(exc))
    except PyptoError as exc:  # anything the IR layer refuses: its message and place
        return _fail(exc.message + (f" (at {exc.span})" if exc.span is not None else ""))
    return 0


def _fail(message: str) -> int:
    # One line, whatever a file name or a message holds.
    print("error: " + message.replace("\r", "\\r").replace("\n", "\\n"), file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
