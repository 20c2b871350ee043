"""The host-level collectives: ``pld.tensor.allreduce(data, signal, ...)`` (and the five
others) written in a host orchestrator is, as in the reference, a builtin per-device program
dispatched to every rank with the same window views — here, a one-task program whose InCore
function runs the InCore composite of the same name (one definition of the protocol, in
``pypto.sim.ops.comm``). The program is made as text and parsed, so it is an ordinary program:
its dumps, passes and both platforms are every other program's.

The host form's own rules (the reference's) are checked where the host calls it: the
operands are windows, ``signal`` may be left out of an allreduce only (one is made per call
site, ``[world_size(), core_num]``), ``core_num`` asks for at most the chip's vector cores
and a signal lane per core, and the ring path is ``Sum`` over ``FP32``.
"""

from __future__ import annotations

import functools

from pypto.ir.types import DataType, ReduceOp

# name -> its parameters in order: (name, is a window operand, default or REQUIRED)
REQUIRED = object()
PARAMS = {
    "allreduce": (("target", True, REQUIRED), ("signal", True, None), ("op", False, ReduceOp.Sum),
                  ("mode", False, "mesh"), ("core_num", False, 1)),
    "barrier": (("signal", True, REQUIRED),),
    "broadcast": (("target", True, REQUIRED), ("signal", True, REQUIRED), ("root", False, REQUIRED)),
    "allgather": (("input", True, REQUIRED), ("target", True, REQUIRED), ("signal", True, REQUIRED)),
    "reduce_scatter": (("target", True, REQUIRED), ("signal", True, REQUIRED), ("op", False, ReduceOp.Sum)),
    "all_to_all": (("input", True, REQUIRED), ("target", True, REQUIRED), ("signal", True, REQUIRED)),
    "all_to_all_v": (("input", True, REQUIRED), ("target", True, REQUIRED), ("signal", True, REQUIRED),
                     ("send_counts", True, REQUIRED), ("recv_counts", True, REQUIRED)),
}


def returned(name: str) -> str:
    """The operand a host call gives back (what ``data = pld.tensor.<name>(...)`` binds)."""
    return "signal" if name == "barrier" else "target"


def _type(shape: tuple, dtype: DataType) -> str:
    return f"pl.distributed.DistributedTensor[[{', '.join(map(str, shape))}], pl.{dtype.name}]"


def _literal(value) -> str:
    if isinstance(value, ReduceOp):
        return f"pl.distributed.ReduceOp.{value.name}"
    return repr(value)


def variant(name: str, options: dict, dtype: DataType | None) -> str:
    """The reference's name of the builtin one call uses (its sub-build's directory):
    ``allreduce__sum__fp32``, ``allreduce_ring__sum__fp32``, ``broadcast__root0__fp32``;
    a barrier moves no payload and is named with the FP32 the reference gives it."""
    parts = [name + ("_ring" if options.get("mode") == "ring" else "")]
    if isinstance(options.get("op"), ReduceOp):
        parts.append(options["op"].name.lower())
    if name == "broadcast" and options.get("root") is not None:
        parts.append(f"root{options['root']}")
    parts.append((dtype or DataType.FP32).name.lower())
    return "__".join(parts)


@functools.lru_cache(maxsize=256)
def text(name: str, operands: tuple, options: tuple) -> str:
    """The builtin program of one host call: ``operands`` ((name, shape, dtype) of each
    window, in order), ``options`` ((name, value) of each constant passed)."""
    params = ", ".join(f"{n}: pl.InOut[{_type(s, d)}]" for n, s, d in operands)
    args = ", ".join(n for n, _, _ in operands)
    kwargs = "".join(f", {n}={_literal(v)}" for n, v in options)
    out = returned(name)
    shape, dtype = next((s, d) for n, s, d in operands if n == out)
    ret = _type(shape, dtype)
    return (f"# pypto.program: builtin_{name}\nimport pypto.language as pl\n\n\n@pl.program\n"
            f"class builtin_{name}:\n"
            f"    @pl.function(type=pl.FunctionType.InCore)\n"
            f"    def {name}_step(self, {params}) -> {ret}:\n"
            f"        {out}_1 = pl.distributed.system.{name}({args}{kwargs})\n"
            f"        return {out}_1\n\n"
            f"    @pl.function(type=pl.FunctionType.Orchestration)\n"
            f"    def builtin_{name}(self, {params}) -> {ret}:\n"
            f"        done = self.{name}_step({args})  # task args: {', '.join('InOut' for _ in operands)}\n"
            f"        return done\n")


class TextProgram:
    """A per-device program the host made as text (a builtin, an inline chip scope), parsed
    and compiled once per config (the ranks' programs are alike)."""

    def __init__(self, name: str, program_text: str):
        self.__name__ = name
        self.program_text = program_text
        self._built: dict = {}

    def __repr__(self) -> str:
        return f"<pypto host builtin {self.__name__}>"

    def compile(self, *args, config=None):
        from pypto.backend import backend
        from pypto.lang.text import parse_program
        from pypto.runtime.build import entry_params
        from pypto.runtime.compiled import compile_program

        if config not in self._built:
            program = parse_program(self.program_text, f"<{self.__name__}>", backend(config.backend))
            self._built[config] = compile_program(program, entry_params(program), config, write=False)
        return self._built[config]


class Builtin(TextProgram):
    """What the host dispatches to each rank for one collective call."""

    def __init__(self, name: str, operands: tuple, options: tuple):
        super().__init__(f"builtin.tensor.{name}", text(name, operands, options))


@functools.lru_cache(maxsize=256)
def builtin(name: str, operands: tuple, options: tuple) -> Builtin:
    return Builtin(name, operands, options)


@functools.lru_cache(maxsize=256)
def text_program(name: str, program_text: str) -> TextProgram:
    return TextProgram(name, program_text)


def inline_chip(name: str, params: tuple, body: str) -> str:
    """The program of a host's ``with pl.at(level=pl.Level.CHIP)`` scope: its body as an
    orchestration whose parameters are the host tensors it names ((name, shape, dtype))."""
    args = ", ".join(f"{n}: pl.InOut[pl.Tensor[[{', '.join(map(str, s))}], pl.{d.name}]]" for n, s, d in params)
    lines = "".join(f"        {line}\n" for line in body.splitlines())
    return (f"# pypto.program: {name}\nimport pypto.language as pl\n\n\n@pl.program\nclass {name}:\n"
            f"    @pl.function(type=pl.FunctionType.Orchestration)\n    def {name}(self, {args}):\n{lines}")
