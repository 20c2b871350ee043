"""The ``pypto`` command (also ``python -m pypto``): the demo, the tools, and cleaning up.

    pypto --version
    pypto demo [--trace] [--dump] [-o DIR] [--platform P] [--planner P] [--show-ir]
    pypto trace <build dir | OPPROF dir | visualize_data.bin> ... [-o DIR]   (the L0 trace as a page)
    pypto memory-map <build dir | passes_dump/ | dump.py> [-o FILE]        (the on-chip memory of a dump)
    pypto swimlane <build dir | dfx_outputs/> -o DIR                       (the chip's tasks, core by core)
    pypto critical-path <build dir | dfx_outputs/> [--gap-us 1]            (the tasks that set the makespan)
    pypto advise <build dir | dfx_outputs/ | pmu.csv>                      (the bottleneck, the lever, the gain)
    pypto ops [-o FILE | --check FILE]                                     (the op table)
    pypto fuzz [--examples N | --time T] [--jobs N] [--database D] ...     (a fuzz campaign)
    pypto clean [DIR] [--keep N] [--dry-run]                               (old builds out of build_output/)

Each subcommand is the module of the same name (``pypto.demo``, ``pypto.tools.*``) with its
own options (``pypto trace --help``).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

import pypto

# subcommand -> the module whose main(argv) it runs
COMMANDS = {"demo": "pypto.demo", "trace": "pypto.tools.clean_sim_trace", "memory-map": "pypto.tools.memory_map",
            "swimlane": "pypto.tools.swimlane", "ops": "pypto.tools.op_table", "fuzz": "pypto.fuzz.__main__",
            "critical-path": "pypto.tools.critical_path", "advise": "pypto.tools.advise"}



def clean(argv) -> int:
    # builds are what hold compiled_meta.json, the file a build writes last (pypto.runtime.build_dirs;
    # imported here: the runtime loads torch, which --version need not wait for)
    from pypto.runtime import build_dirs

    parser = argparse.ArgumentParser(prog="pypto clean", description="remove old builds (directories holding "
                                     "compiled_meta.json) from a build directory; a build a running program "
                                     "holds stays")
    parser.add_argument("root", nargs="?", type=Path, default=None,
                        help="the build directory (default: $PYPTO_PROG_BUILD_DIR or ./build_output)")
    parser.add_argument("--keep", type=int, default=0, metavar="N", help="keep the newest N builds of each kernel")
    parser.add_argument("--dry-run", action="store_true", help="list what would go, remove nothing")
    args = parser.parse_args(argv)
    root = args.root or build_dirs.default_root()
    if args.keep < 0:
        return _fail("--keep takes a count of 0 or more")
    if not root.exists():
        if args.root is None:  # no build was ever made here: nothing to do
            print(f"no builds: {root} does not exist")
            return 0
        return _fail(f"{root} does not exist: give the directory builds were written to "
                     "(default: $PYPTO_PROG_BUILD_DIR or ./build_output)")
    if not root.is_dir():
        return _fail(f"{root} is not a directory")
    by_kernel: dict[str, list[Path]] = {}
    gone = held = 0
    try:
        for d in build_dirs.builds(root):
            by_kernel.setdefault(_kernel_of(d.name), []).append(d)
        doomed = [d for ds in by_kernel.values() for d in ds[:max(0, len(ds) - args.keep)]]
        for d in doomed:
            if build_dirs.in_use(d) if args.dry_run else not build_dirs.remove(d):
                print(f"kept {d}: a running program holds it")
                held += 1
                continue
            print(("would remove " if args.dry_run else "removed ") + str(d))
            gone += 1
        # builds and removals a process left unfinished when it ended (hidden, and held by no one)
        for d in build_dirs.leftovers(root):
            if not args.dry_run and build_dirs.remove(d):
                print(f"removed {d} (left unfinished)")
        # a build directory this emptied goes too (never the current one, never one it found empty)
        if gone and not args.dry_run and not root.is_symlink() and root.resolve() != Path.cwd().resolve() \
                and not any(root.iterdir()):
            root.rmdir()
    except OSError as exc:
        return _fail(f"{exc.strerror or exc}: {exc.filename or root}")
    print(f"{gone} build(s) {'to remove' if args.dry_run else 'removed'} from {root}"
          + (f"; {held} kept, in use" if held else ""))
    return 0


def _kernel_of(name: str) -> str:
    from pypto.runtime.build_dirs import kernel_of  # (the runtime loads torch: not for --version)

    return kernel_of(name)


def _fail(message: str) -> int:
    print("error: " + message.replace("\n", "\\n"), file=sys.stderr)
    return 2


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    if argv[0] in ("-V", "--version"):
        print(f"pypto {pypto.__version__}")
        return 0
    command, rest = argv[0], argv[1:]
    if command == "clean":
        return clean(rest)
    if command not in COMMANDS:
        known = ", ".join([*COMMANDS, "clean"])
        return _fail(f"unknown command {command!r}; the commands are {known} (pypto --help)")
    try:
        module = importlib.import_module(COMMANDS[command])
    except ImportError as exc:  # an optional dependency (pypto fuzz: hypothesis) names its extra
        return _fail(str(exc))
    return module.main(rest) or 0


if __name__ == "__main__":
    sys.exit(main())
