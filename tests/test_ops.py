"""Every registered op, once: built, verified, printed and parsed back, interpreted, and
compared with torch. The registry, the printer/parser and the semantics table agree."""

import pytest
import torch

from pypto.sim.ops.numerics import FROM_TORCH

from pypto.ir import nodes as n
from pypto.lang import parse
from pypto.ir.builder import FunctionBuilder
from pypto.ir.ops import UNIFIED, all_ops, lookup
from pypto.ir.types import DataType as D
from pypto.ir.types import FunctionType, MaskPattern, PadValue, ParamDirection, TensorType
from pypto.ir.verifier import verify
from pypto.runtime import RunConfig
from pypto.runtime.compiled import compile_program
from pypto.sim.reference import interpreter
from pypto.sim.ops.semantics import IMPLS
from pypto.backend import A2A3, MemorySpace as M

R, C = 8, 16
X = torch.linspace(-3, 5, R * C).reshape(R, C)  # no zeros: div/recip/log stay finite or NaN alike
Y = torch.linspace(2, 9, R * C).reshape(R, C).flip(1).contiguous()


def case(name, build, expect, inputs=(X, Y), out_shape=(R, C), out_dtype=torch.float32):
    return pytest.param(build, expect, inputs, out_shape, out_dtype, id=name)


def tile2(op, **kw):
    def build(b, a, c):
        return b.op(op, b.op("tile.load", a, [0, 0], [R, C]), b.op("tile.load", c, [0, 0], [R, C]), **kw)
    return build


def tile1(op, *extra, **kw):
    def build(b, a, c):
        return b.op(op, b.op("tile.load", a, [0, 0], [R, C]), *extra, **kw)
    return build


def tensor1(op, *extra, **kw):
    return lambda b, a, c: b.op(op, a, *extra, **kw)


def tensor2(op, **kw):
    return lambda b, a, c: b.op(op, a, c, **kw)


def rowvec(b, c, reduce="tile.row_max"):
    return b.op(reduce, b.op("tile.load", c, [0, 0], [R, C]))


UNARY = {"neg": torch.neg, "abs": torch.abs, "relu": torch.relu, "exp": torch.exp, "log": torch.log,
         "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "recip": torch.reciprocal}
BINARY = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "maximum": torch.maximum,
          "minimum": torch.minimum}
SCALARS = {"adds": "add", "subs": "sub", "muls": "mul", "divs": "div", "maximums": "maximum", "minimums": "minimum"}
ROWMAX = Y.amax(dim=1, keepdim=True)
COLMIN = Y.amin(dim=0, keepdim=True)

CASES = [
    *[case(f"tile.{k}", tile1(f"tile.{k}"), lambda x, y, f=f: f(x)) for k, f in UNARY.items()],
    *[case(f"tensor.{k}", tensor1(f"tensor.{k}"), lambda x, y, f=f: f(x)) for k, f in UNARY.items()],
    *[case(f"tile.{k}", tile2(f"tile.{k}"), lambda x, y, f=f: f(x, y)) for k, f in BINARY.items()],
    *[case(f"tensor.{k}", tensor2(f"tensor.{k}"), lambda x, y, f=f: f(x, y)) for k, f in BINARY.items()],
    *[case(f"tile.{k}", tile1(f"tile.{k}", 1.5), lambda x, y, f=BINARY[v]: f(x, torch.tensor(1.5)))
      for k, v in SCALARS.items()],
    *[case(f"tensor.{k}", tensor1(f"tensor.{k}", 1.5), lambda x, y, f=BINARY[v]: f(x, torch.tensor(1.5)))
      for k, v in SCALARS.items()],
    *[case(f"tile.row_{k}", tile1(f"tile.row_{k}"), lambda x, y, k=k: getattr(torch, f"a{k}" if k != "sum" else k)(
        x.double() if k == "sum" else x, dim=1, keepdim=True), out_shape=(R, 1)) for k in ("sum", "max", "min")],
    *[case(f"tile.col_{k}", tile1(f"tile.col_{k}"), lambda x, y, k=k: getattr(torch, f"a{k}" if k != "sum" else k)(
        x, dim=0, keepdim=True), out_shape=(1, C)) for k in ("sum", "max", "min")],
    *[case(f"tensor.row_{k}", tensor1(f"tensor.row_{k}"), lambda x, y, k=k: getattr(
        torch, f"a{k}" if k != "sum" else k)(x.double() if k == "sum" else x, dim=1, keepdim=True), out_shape=(R, 1)) for k in ("sum", "max", "min")],
    *[case(f"tensor.col_{k}", tensor1(f"tensor.col_{k}"), lambda x, y, k=k: getattr(
        torch, f"a{k}" if k != "sum" else k)(x, dim=0, keepdim=True), out_shape=(1, C)) for k in ("sum", "max", "min")],
    *[case(f"tile.row_expand_{k}", lambda b, a, c, k=k: b.op(f"tile.row_expand_{k}", b.op("tile.load", a, [0, 0], [R, C]),
                                                               rowvec(b, c)),
           lambda x, y, f=BINARY[k]: f(x, ROWMAX)) for k in ("add", "sub", "mul", "div")],
    *[case(f"tile.col_expand_{k}", lambda b, a, c, k=k: b.op(f"tile.col_expand_{k}", b.op("tile.load", a, [0, 0], [R, C]),
                                                               rowvec(b, c, "tile.col_min")),
           lambda x, y, f=BINARY[k]: f(x, COLMIN)) for k in ("add", "sub", "mul", "div")],
    *[case(f"tensor.row_expand_{k}", lambda b, a, c, k=k: b.op(f"tensor.row_expand_{k}", a, b.op("tensor.row_max", c)),
           lambda x, y, f=BINARY[k]: f(x, ROWMAX)) for k in ("add", "sub", "mul", "div")],
    *[case(f"tensor.col_expand_{k}", lambda b, a, c, k=k: b.op(f"tensor.col_expand_{k}", a, b.op("tensor.col_min", c)),
           lambda x, y, f=BINARY[k]: f(x, COLMIN)) for k in ("add", "sub", "mul", "div")],
    case("tile.row_expand_expdif", lambda b, a, c: b.op("tile.row_expand_expdif", b.op("tile.load", a, [0, 0], [R, C]),
                                                         rowvec(b, c)), lambda x, y: torch.exp(x - ROWMAX)),
    case("tensor.row_expand_expdif", lambda b, a, c: b.op("tensor.row_expand_expdif", a, b.op("tensor.row_max", c)),
         lambda x, y: torch.exp(x - ROWMAX)),
    case("tile.row_expand", lambda b, a, c: b.op("tile.row_expand", b.op("tile.load", a, [0, 0], [R, C]), rowvec(b, c)),
         lambda x, y: ROWMAX.expand(R, C)),
    case("tile.col_expand", lambda b, a, c: b.op("tile.col_expand", b.op("tile.load", a, [0, 0], [R, C]),
                                                 rowvec(b, c, "tile.col_min")), lambda x, y: COLMIN.expand(R, C)),
    case("tensor.row_expand", lambda b, a, c: b.op("tensor.row_expand", a, b.op("tensor.row_max", c)),
         lambda x, y: ROWMAX.expand(R, C)),
    case("tensor.col_expand", lambda b, a, c: b.op("tensor.col_expand", a, b.op("tensor.col_min", c)),
         lambda x, y: COLMIN.expand(R, C)),
    case("tile.cmp+sel", lambda b, a, c: b.op("tile.sel", b.op("tile.cmp", b.op("tile.load", a, [0, 0], [R, C]),
                                                                b.op("tile.load", c, [0, 0], [R, C]), cmp_type=2),
                                               b.op("tile.load", a, [0, 0], [R, C]), b.op("tile.load", c, [0, 0], [R, C])),
         lambda x, y: torch.where(x < y, x, y)),
    case("tile.cmps+sel", lambda b, a, c: b.op("tile.sel", b.op("tile.cmps", b.op("tile.load", a, [0, 0], [R, C]), 1.0,
                                                                 cmp_type=5),
                                                b.op("tile.load", a, [0, 0], [R, C]), b.op("tile.load", c, [0, 0], [R, C])),
         lambda x, y: torch.where(x >= 1.0, x, y)),
    case("tile.cast", lambda b, a, c: b.op("tile.cast", b.op("tile.cast", b.op("tile.load", a, [0, 0], [R, C]),
                                                             target_type=D.INT32, mode="floor"), target_type=D.FP32),
         lambda x, y: torch.floor(x)),
    case("tensor.cast", tensor1("tensor.cast", target_type=D.FP16), lambda x, y: x.half(), out_dtype=torch.float16),
    case("tensor.fillpad", tensor1("tensor.fillpad"), lambda x, y: x),
    case("tile.reshape", tile1("tile.reshape", [C, R]), lambda x, y: x.reshape(C, R), out_shape=(C, R)),
    case("tensor.reshape", tensor1("tensor.reshape", [C, R]), lambda x, y: x.reshape(C, R), out_shape=(C, R)),
    case("tile.transpose", tile1("tile.transpose", 0, 1), lambda x, y: x.T, out_shape=(C, R)),
    case("tensor.transpose", tensor1("tensor.transpose", 1, 0), lambda x, y: x.T, out_shape=(C, R)),
    case("tile.set_validshape+fillpad",
         lambda b, a, c: b.op("tile.fillpad", b.op("tile.set_validshape", b.op("tile.load", a, [0, 0], [R, C]), 3, 5),
                              pad_value=PadValue.min),
         lambda x, y: torch.where((torch.arange(R)[:, None] < 3) & (torch.arange(C)[None, :] < 5), x,
                                  torch.tensor(float("-inf")))),
    case("tile.create", lambda b, a, c: b.op("tile.create", [R, C], D.FP32), lambda x, y: torch.zeros(R, C)),
    case("tile.full", lambda b, a, c: b.op("tile.full", [R, C], D.FP32, 2.5), lambda x, y: torch.full((R, C), 2.5)),
    case("tensor.full", lambda b, a, c: b.op("tensor.full", [R, C], D.FP32, -1.0), lambda x, y: torch.full((R, C), -1.0)),
    case("tensor.create", lambda b, a, c: b.op("tensor.create", [R, C], D.FP32), lambda x, y: torch.zeros(R, C)),
    case("tensor.slice", lambda b, a, c: b.op("tensor.slice", a, [4, C], [2, 0]), lambda x, y: x[2:6],
         out_shape=(4, C)),
    case("tensor.matmul", lambda b, a, c: b.op("tensor.matmul", a, c, out_dtype=D.FP32, a_trans=False, b_trans=True),
         lambda x, y: x.double() @ y.double().T, inputs=(X.half(), Y.half()), out_shape=(R, R)),
    case("tensor.matmul_acc", lambda b, a, c: b.op("tensor.matmul_acc", b.op("tensor.matmul", a, c, b_trans=True),
                                                   a, c, b_trans=True),
         lambda x, y: 2 * (x.double() @ y.double().T), inputs=(X.half(), Y.half()), out_shape=(R, R)),
    case("tile.move+matmul+matmul_acc", lambda b, a, c: _mm(b, a, c),
         lambda x, y: 2 * (x.double() @ y.double()), inputs=(X.half(), Y.T.contiguous().half()), out_shape=(R, R)),
    case("tile.extract", lambda b, a, c: _mm_pieces(b, a, c),
         lambda x, y: x.double() @ y.double(), inputs=(X.half(), Y.T.contiguous().half()), out_shape=(R, R)),
]

# The catalog's trigonometric, remainder and bitwise families, on the inputs they take.
XI = torch.arange(R * C, dtype=torch.int32).reshape(R, C) * 37 - 1500
YI = torch.arange(R * C, dtype=torch.int32).reshape(R, C).flip(1) * 53 + 7
XS = (torch.arange(R * C, dtype=torch.int16).reshape(R, C) * 411 - 9000).contiguous()
BITWISE = {"and": torch.bitwise_and, "or": torch.bitwise_or, "xor": torch.bitwise_xor}
AMOUNTS = (torch.arange(R * C, dtype=torch.int32).reshape(R, C) * 7) % 32  # every amount 0..31
PICKS = (torch.arange(R * C, dtype=torch.int32).reshape(R, C) * 29) % (R * C)  # every element, shuffled

CASES += [
    case("tile.gather", lambda b, a, c: b.op("tile.gather", b.op("tile.load", a, [0, 0], [R, C]),
                                             b.op("tile.load", c, [0, 0], [R, C]), b.op("tile.create", [R, C], D.INT32)),
         lambda x, y: x.reshape(-1)[y.long()], inputs=(X, PICKS)),
    case("tile.scatter", lambda b, a, c: b.op("tile.scatter", b.op("tile.load", a, [0, 0], [R, C]),
                                              b.op("tile.load", a, [0, 0], [R, C]), b.op("tile.load", c, [0, 0], [R, C])),
         lambda x, y: x.reshape(-1).clone().index_put_((y.reshape(-1).long(),), x.reshape(-1)).reshape(R, C),
         inputs=(X, PICKS)),
    *[case(f"tile.mgather.{mode}", lambda b, a, c, mode=mode, shape=shape: b.op(
        "tile.mgather", a, b.op("tile.load", c, [0, 0], list(shape)), coalesce=mode, gather_oob="wrap"),
           lambda x, y, mode=mode: x.reshape(-1)[y.long() % (R * C)] if mode == "elem" else x[y.reshape(-1).long() % R],
           inputs=(X, PICKS * 3 - 7 if mode == "elem" else PICKS[:, :1] - 40), out_shape=(R, C))
      for mode, shape in (("elem", (R, C)), ("row", (R, 1)))],
    *[case(f"{level}.{k}", (tile2 if level == "tile" else tensor2)(f"{level}.{k}"), lambda x, y, f=f: f(x, y),
           inputs=(XI, AMOUNTS), out_dtype=torch.int32)
      for k, f in (("shl", torch.bitwise_left_shift), ("shr", torch.bitwise_right_shift)) for level in ("tile", "tensor")],
    *[case(f"{level}.{k}s", (tile1 if level == "tile" else tensor1)(f"{level}.{k}s", 5), lambda x, y, f=f: f(x, 5),
           inputs=(XI, YI), out_dtype=torch.int32)
      for k, f in (("shl", torch.bitwise_left_shift), ("shr", torch.bitwise_right_shift)) for level in ("tile", "tensor")],
    *[case(f"{level}.{k}", (tile1 if level == "tile" else tensor1)(f"{level}.{k}"), lambda x, y, f=f: f(x))
      for k, f in (("sin", torch.sin), ("cos", torch.cos)) for level in ("tile", "tensor")],
    *[case(f"{level}.fmod", (tile2 if level == "tile" else tensor2)(f"{level}.fmod"), lambda x, y: torch.fmod(x, y))
      for level in ("tile", "tensor")],
    *[case(f"{level}.rem", (tile2 if level == "tile" else tensor2)(f"{level}.rem"),
           lambda x, y: torch.remainder(x, y)) for level in ("tile", "tensor")],
    *[case(f"{level}.rems", (tile1 if level == "tile" else tensor1)(f"{level}.rems", -1.25),
           lambda x, y: torch.remainder(x, torch.tensor(-1.25))) for level in ("tile", "tensor")],
    *[case(f"{level}.rem.int", (tile2 if level == "tile" else tensor2)(f"{level}.rem"),
           lambda x, y: torch.remainder(x, y), inputs=(XI, YI), out_dtype=torch.int32) for level in ("tile", "tensor")],
    *[case(f"{level}.fmods", (tile1 if level == "tile" else tensor1)(f"{level}.fmods", -1.25),
           lambda x, y: torch.fmod(x, torch.tensor(-1.25))) for level in ("tile", "tensor")],
    *[case(f"{level}.{k}", (tile2 if level == "tile" else tensor2)(f"{level}.{k}"), lambda x, y, f=f: f(x, y),
           inputs=(XI, YI), out_dtype=torch.int32) for k, f in BITWISE.items() for level in ("tile", "tensor")],
    *[case(f"{level}.{k}s", (tile1 if level == "tile" else tensor1)(f"{level}.{k}s", 0x5A5), lambda x, y, f=f: f(x, 0x5A5),
           inputs=(XI, YI), out_dtype=torch.int32) for k, f in BITWISE.items() for level in ("tile", "tensor")],
    *[case(f"{level}.not", (tile1 if level == "tile" else tensor1)(f"{level}.not"), lambda x, y: ~x,
           inputs=(XS, XS), out_dtype=torch.int16) for level in ("tile", "tensor")],
    *[case(f"tile.row_expand_{k}", lambda b, a, c, k=k: b.op(f"tile.row_expand_{k}", b.op("tile.load", a, [0, 0], [R, C]),
                                                               rowvec(b, c)),
           lambda x, y, f=f: f(x, ROWMAX)) for k, f in (("max", torch.maximum), ("min", torch.minimum))],
    *[case(f"tile.col_expand_{k}", lambda b, a, c, k=k: b.op(f"tile.col_expand_{k}", b.op("tile.load", a, [0, 0], [R, C]),
                                                               rowvec(b, c, "tile.col_min")),
           lambda x, y, f=f: f(x, COLMIN)) for k, f in (("max", torch.maximum), ("min", torch.minimum))],
    *[case(f"tensor.{axis}_expand_{k}", lambda b, a, c, k=k, axis=axis: b.op(
        f"tensor.{axis}_expand_{k}", a, b.op("tensor.row_max" if axis == "row" else "tensor.col_min", c)),
        lambda x, y, f=f, axis=axis: f(x, ROWMAX if axis == "row" else COLMIN))
      for k, f in (("max", torch.maximum), ("min", torch.minimum)) for axis in ("row", "col")],
    # one element of a tile written, and another read back, by the scalar unit
    case("tile.write", lambda b, a, c: b.op("tile.adds", t := b.op("tile.write", b.op("tile.load", a, [0, 0], [R, C]),
                                                                    [1, 2], b.op("tensor.read", c, [2, 3])),
                                             b.op("tile.read", t, [1, 2])),
         lambda x, y: (lambda z: z + y[2, 3])(x.index_put((torch.tensor(1), torch.tensor(2)), y[2, 3]))),
    # an element of GM read by the kernel's scalar unit, as a scalar operand
    case("tensor.read", lambda b, a, c: b.op("tile.adds", b.op("tile.load", a, [0, 0], [R, C]),
                                              b.op("tensor.read", c, [2, 3])), lambda x, y: x + y[2, 3]),
    *[case(f"{level}.{axis}_prod", (tile1 if level == "tile" else tensor1)(f"{level}.{axis}_prod"),
           lambda x, y, d=d: x.double().prod(dim=d, keepdim=True), out_shape=(R, 1) if d == 1 else (1, C))
      for level in ("tile", "tensor") for axis, d in (("row", 1), ("col", 0))],
    *[case(f"tile.{axis}_arg{k}", tile1(f"tile.{axis}_arg{k}"),
           lambda x, y, d=d, k=k: getattr(torch, f"arg{k}")(x, dim=d, keepdim=True).int(),
           inputs=(torch.sin(X * 7), Y), out_shape=(R, 1) if d == 1 else (1, C), out_dtype=torch.int32)
      for k in ("max", "min") for axis, d in (("row", 1), ("col", 0))],
    case("tile.fillpad_expand", lambda b, a, c: b.op("tile.fillpad_expand", b.op("tile.load", a, [0, 0], [R, C],
                                                                                  valid_shape=[R - 2, C - 3]),
                                                      [R + 8, C + 16], pad_value=PadValue.min),
         lambda x, y: torch.nn.functional.pad(x[:R - 2, :C - 3], (0, 19, 0, 10), value=float("-inf")),
         out_shape=(R + 8, C + 16)),
    *[case(f"tile.ci{'.down' if down else ''}", lambda b, a, c, down=down: b.op("tile.ci", 5, [1, C], dtype=D.INT32,
                                                                               descending=down),
           lambda x, y, down=down: (5 - torch.arange(C) if down else 5 + torch.arange(C)).int().reshape(1, C),
           out_shape=(1, C), out_dtype=torch.int32) for down in (False, True)],
    *[case(f"tensor.ci{'.down' if down else ''}", lambda b, a, c, down=down: b.op("tensor.ci", -2, [1, C],
                                                                                 dtype=D.INT16, descending=down),
           lambda x, y, down=down: (-2 - torch.arange(C) if down else -2 + torch.arange(C)).short().reshape(1, C),
           out_shape=(1, C), out_dtype=torch.int16) for down in (False, True)],
    *[case(f"tile.tri{'.upper' if up else ''}", lambda b, a, c, up=up: b.op("tile.cast", b.op(
        "tile.tri", -1 if up else 2, [R, C], dtype=D.INT32, upper=up), target_type=D.FP32),
           lambda x, y, up=up: (torch.triu(torch.ones(R, C), -1) if up else torch.tril(torch.ones(R, C), 2)))
      for up in (False, True)],
    *[case(f"tile.part_{k}", lambda b, a, c, k=k: b.op(f"tile.part_{k}",
                                                       b.op("tile.load", a, [0, 0], [R, C], valid_shape=[R, C - 5]),
                                                       b.op("tile.load", c, [0, 0], [R, C], valid_shape=[R - 3, C])),
           lambda x, y, f=f: torch.cat([torch.cat([f(x[:R - 3, :C - 5], y[:R - 3, :C - 5]), y[:R - 3, C - 5:]], 1),
                                        torch.cat([x[R - 3:, :C - 5], torch.zeros(3, 5)], 1)]))
      for k, f in (("add", torch.add), ("mul", torch.mul), ("max", torch.maximum), ("min", torch.minimum))],
    case("tile.matmul_bias", lambda b, a, c: _mm_bias(b, a, c), lambda x, y: x.double() @ y.reshape(C, R).double() + y.reshape(-1)[:R].double(),
         inputs=(X, Y.reshape(C, R)), out_shape=(R, R)),
    *[case(f"tile.{k}", lambda b, a, c, k=k: _gemv(b, a, c, k), lambda x, y, k=k: (
        x[:1].double() @ y.double() * (2 if k == "gemv_acc" else 1) + (y[:1].double() if k == "gemv_bias" else 0)),
        inputs=(X, Y.reshape(C, R)), out_shape=(1, R)) for k in ("gemv", "gemv_acc", "gemv_bias")],
    case("tile.reinterpret_view", lambda b, a, c: b.op("tile.reinterpret_view", b.op("tile.load", a, [0, 0], [R, C]),
                                                        D.INT32), lambda x, y: x.view(torch.int32),
         out_dtype=torch.int32),
    case("tile.reinterpret_view.shape", lambda b, a, c: b.op("tile.reinterpret_view", b.op("tile.load", a, [0, 0], [R, C]),
                                                              D.FP16, shape=[R * 2, C]),
         lambda x, y: x.view(torch.float16).reshape(R * 2, C), out_shape=(R * 2, C), out_dtype=torch.float16),
    case("tile.prelu", tile2("tile.prelu"), lambda x, y: torch.where(x > 0, x, x * y)),
    case("tile.lrelu", tile1("tile.lrelu", 0.125), lambda x, y: torch.where(x > 0, x, x * 0.125)),
    *[case(f"tile.{k}", lambda b, a, c, k=k: b.op(f"tile.{k}", b.op("tile.load", a, [0, 0], [R, C]),
                                                   b.op("tile.load", c, [0, 0], [R, C]), b.op("tile.load", a, [0, 0], [R, C])),
           lambda x, y, f=f: f(f(x, y), x)) for k, f in (("addc", torch.add), ("subc", torch.sub))],
    *[case(f"tile.{k}", lambda b, a, c, k=k: b.op(f"tile.{k}", b.op("tile.load", a, [0, 0], [R, C]), 2.5,
                                                   b.op("tile.load", c, [0, 0], [R, C])),
           lambda x, y, f=f: f(f(x, 2.5), y)) for k, f in (("addsc", torch.add), ("subsc", torch.sub))],
    case("tile.sels", lambda b, a, c: b.op("tile.sels", b.op("tile.cmps", b.op("tile.load", a, [0, 0], [R, C]), 1.0,
                                                              cmp_type=5), b.op("tile.load", c, [0, 0], [R, C]), None, -7.0),
         lambda x, y: torch.where(x >= 1.0, y, torch.tensor(-7.0))),
    case("tile.expands", lambda b, a, c: b.op("tile.expands", b.op("tile.load", a, [0, 0], [R, C]), 3.25),
         lambda x, y: torch.full((R, C), 3.25)),
    case("tile.slice", lambda b, a, c: b.op("tile.slice", b.op("tile.load", a, [0, 0], [R, C]), [4, 8], [2, 5]),
         lambda x, y: x[2:6, 5:13], out_shape=(4, 8)),
    case("tile.assemble", lambda b, a, c: b.op("tile.assemble", b.op("tile.load", a, [0, 0], [R, C]),
                                                b.op("tile.load", c, [1, 2], [4, 8]), [3, 7]),
         lambda x, y: torch.cat([x[:3], torch.cat([x[3:7, :7], y[1:5, 2:10], x[3:7, 15:]], 1), x[7:]])),
    case("tile.transpose_view", lambda b, a, c: _mm_transposed(b, a, c), lambda x, y: y.double() @ x.double().T,
         out_shape=(R, R)),
    case("tile.col_expand_expdif", lambda b, a, c: b.op("tile.col_expand_expdif", b.op("tile.load", a, [0, 0], [R, C]),
                                                         rowvec(b, c, "tile.col_min")), lambda x, y: torch.exp(x - COLMIN)),
    *[case(f"tile.batch_matmul{'_acc' if acc else ''}", lambda b, a, c, acc=acc: _bmm(b, a, c, acc),
           lambda x, y, acc=acc: (x.double() @ y.double().transpose(-1, -2)) * (2 if acc else 1),
           inputs=(torch.stack((X, X.flip(0))), Y.reshape(1, R, C)), out_shape=(2, R, R)) for acc in (False, True)],
    case("tile.concat", tile2("tile.concat"), lambda x, y: torch.cat((x, y), dim=1), out_shape=(R, 2 * C)),
    case("tensor.col_expand_expdif", lambda b, a, c: b.op("tensor.col_expand_expdif", a, b.op("tensor.col_min", c)),
         lambda x, y: torch.exp(x - COLMIN)),
]


def _bmm(b, a, c, acc=False):
    """Two [8, 16] pages of a against one page of c, transposed on its way into L1 (the batch
    axis broadcasting), twice with acc."""
    def cube(x, shape, space, transpose=False):
        return b.op("tile.move", b.op("tile.load", x, [0] * len(shape), shape, target_memory=M.Mat,
                                      transpose=transpose), target_memory=space)

    left, right = cube(a, [2, 8, 16], M.Left), cube(c, [1, 8, 16], M.Right, transpose=True)
    out = b.op("tile.batch_matmul", left, right)
    return b.op("tile.batch_matmul_acc", out, left, right) if acc else out


def _mm_transposed(b, a, c):
    """c @ a.T, the right operand a Mat tile read in the other layout."""
    left = b.op("tile.move", b.op("tile.load", c, [0, 0], [R, C], target_memory=M.Mat), target_memory=M.Left)
    right = b.op("tile.transpose_view", b.op("tile.load", a, [0, 0], [R, C], target_memory=M.Mat))
    return b.op("tile.matmul", left, b.op("tile.move", right, target_memory=M.Right))


def _mm_bias(b, a, c):
    """a @ c[:, :R]-ish through matmul_bias: c's first row (as FP32) is the bias."""
    left = b.op("tile.move", b.op("tile.load", a, [0, 0], [R, C], target_memory=M.Mat), target_memory=M.Left)
    right = b.op("tile.move", b.op("tile.load", c, [0, 0], [C, R], target_memory=M.Mat), target_memory=M.Right)
    bias = b.op("tile.move", b.op("tile.load", c, [0, 0], [1, R], target_memory=M.Mat), target_memory=M.Bias)
    return b.op("tile.matmul_bias", left, right, bias)


def _gemv(b, a, c, kind):
    row = b.op("tile.move", b.op("tile.load", a, [0, 0], [1, C], target_memory=M.Mat), target_memory=M.Left)
    right = b.op("tile.move", b.op("tile.load", c, [0, 0], [C, R], target_memory=M.Mat), target_memory=M.Right)
    if kind == "gemv":
        return b.op("tile.gemv", row, right)
    if kind == "gemv_bias":
        bias = b.op("tile.move", b.op("tile.load", c, [0, 0], [1, R], target_memory=M.Mat), target_memory=M.Bias)
        return b.op("tile.gemv_bias", row, right, bias, acc_phase="final")
    return b.op("tile.gemv_acc", b.op("tile.gemv", row, right), row, right)


def _mm(b, a, c):
    left = b.op("tile.move", b.op("tile.load", a, [0, 0], [R, C], target_memory=M.Mat), target_memory=M.Left)
    right = b.op("tile.move", b.op("tile.load", c, [0, 0], [C, R], target_memory=M.Mat), target_memory=M.Right)
    acc = b.op("tile.matmul", left, right)
    return b.op("tile.matmul_acc", acc, left, right)


def _mm_pieces(b, a, c):
    """a @ c with K in two halves, each operand's half a window of its Mat tile moved into L0."""
    left, right = (b.op("tile.load", t, [0, 0], shape, target_memory=M.Mat) for t, shape in ((a, [R, C]), (c, [C, R])))
    h = C // 2
    acc = None
    for k in (0, h):
        lk = b.op("tile.extract", left, 0, k, [R, h], target_memory=M.Left)
        rk = b.op("tile.extract", right, k, 0, [h, R], target_memory=M.Right)
        acc = b.op("tile.matmul", lk, rk) if acc is None else b.op("tile.matmul_acc", acc, lk, rk)
    return acc


# The sort family: (value, index) pairs are an FP32 value and its UINT32 index's bits.
def _pairs(values: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    return torch.stack([values, index.view(torch.float32)], -1).reshape(values.shape[0], -1)


def _runs(n_runs: int, per_run: int, seed: int) -> torch.Tensor:
    """A row of sorted runs of pairs, the indices 0, 1, 2, ... in the original order."""
    v = torch.randn(n_runs * per_run, generator=torch.Generator().manual_seed(seed))
    v = torch.sort(v.reshape(n_runs, per_run), dim=1, descending=True).values.reshape(1, -1)
    return _pairs(v, torch.arange(v.numel(), dtype=torch.int32).reshape(1, -1))


def _merged(*rows: torch.Tensor) -> torch.Tensor:
    row = torch.cat(rows, 1)
    order = torch.sort(row[:, 0::2], dim=1, descending=True, stable=True).indices
    return _pairs(row[:, 0::2].gather(1, order), row[:, 1::2].contiguous().view(torch.int32).gather(1, order))


def _sorted32(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    order = torch.sort(x, dim=1, descending=True, stable=True).indices  # a row is one (short) block here
    return _pairs(x.gather(1, order), idx.view(torch.int32).gather(1, order))


IDX = torch.arange(R * C, dtype=torch.int32).reshape(R, C).view(torch.uint32)
RUNS, LIST_A, LIST_B = _runs(4, 32, 1), _runs(1, 32, 2), _runs(1, 32, 3)
SCATTER_AT = (torch.arange(R * C, dtype=torch.int32).reshape(R, C) * 5) % C  # columns, some named twice

CASES += [
    case("tile.sort32", lambda b, a, c: b.op("tile.sort32", b.op("tile.load", a, [0, 0], [R, C]),
                                             b.op("tile.load", c, [0, 0], [R, C])),
         _sorted32, inputs=(X, IDX), out_shape=(R, 2 * C)),
    case("tensor.sort32", tensor2("tensor.sort32"), _sorted32, inputs=(X, IDX), out_shape=(R, 2 * C)),
    case("tile.mrgsort.format1", lambda b, a, c: b.op("tile.mrgsort", b.op("tile.load", a, [0, 0], [1, 256]),
                                                      block_len=64),
         lambda x, y: _merged(x), inputs=(RUNS, RUNS), out_shape=(1, 256)),
    case("tensor.mrgsort.format1", lambda b, a, c: b.op("tensor.mrgsort", a, block_len=64),
         lambda x, y: _merged(x), inputs=(RUNS, RUNS), out_shape=(1, 256)),
    case("tile.mrgsort.format2", lambda b, a, c: b.op("tile.mrgsort", b.op("tile.load", a, [0, 0], [1, 64]),
                                                      b.op("tile.load", c, [0, 0], [1, 64]),
                                                      tmp=b.op("tile.create", [1, 128], D.FP32)),
         _merged, inputs=(LIST_A, LIST_B), out_shape=(1, 128)),
    case("tensor.mrgsort.format2", lambda b, a, c: b.op("tensor.mrgsort", a, c), _merged, inputs=(LIST_A, LIST_B),
         out_shape=(1, 128)),
    *[case(f"{level}.gather_mask.{p.name}", (tile1 if level == "tile" else tensor1)(f"{level}.gather_mask", int(p)),
           lambda x, y, p=p: x[:, p.first::p.stride], out_shape=(R, C // p.stride))
      for p in MaskPattern for level in ("tile", "tensor")],
    case("tile.gather_mask.bits", tile1("tile.gather_mask", int(MaskPattern.P1010), output_dtype=D.UINT32),
         lambda x, y: x[:, 1::2].contiguous().view(torch.uint32), out_shape=(R, C // 2), out_dtype=torch.uint32),
    case("tile.scatter_mask", lambda b, a, c: b.op("tile.scatter_mask", b.op("tile.load", a, [0, 0], [R, C]),
                                                   b.op("tile.load", c, [0, 0], [R, C // 4]), int(MaskPattern.P0100)),
         lambda x, y: torch.where(torch.arange(C) % 4 == 2, y[:, :C // 4].repeat_interleave(4, 1), x)),
    case("tensor.scatter_mask", lambda b, a, c: b.op("tensor.scatter_mask", b.op("tensor.slice", c, [R, C // 2], [0, 0]),
                                                     int(MaskPattern.P1010), a),
         lambda x, y: torch.where(torch.arange(C) % 2 == 1, y[:, :C // 2].repeat_interleave(2, 1), x)),
    case("tile.gatherb", lambda b, a, c: b.op("tile.gatherb", b.op("tile.load", a, [0, 0], [R, C]),
                                              b.op("tile.load", c, [0, 0], [R, 8])),
         lambda x, y: x.reshape(-1, 8)[y.view(torch.int32).long().reshape(-1) // 32].reshape(R, 64),
         inputs=(X, (((torch.arange(R * 8, dtype=torch.int32) * 5) % 16) * 32).reshape(R, 8).view(torch.uint32)),
         out_shape=(R, 64)),
    *[case(f"{level}.scatter_update", build, lambda x, y: _rows_updated(x, y, x[4:8] * 2),
           inputs=(X, torch.tensor([[7, 0], [3, 7]], dtype=torch.int32)))
      for level, build in (
          ("tile", lambda b, a, c: b.op("tile.scatter_update", b.op("tile.load", a, [0, 0], [R, C]), -2,
                                        b.op("tile.load", c, [0, 0], [2, 2]),
                                        b.op("tile.muls", b.op("tile.load", a, [4, 0], [4, C]), 2.0))),
          ("tensor", lambda b, a, c: b.op("tensor.scatter_update", a, -2, c,
                                          b.op("tensor.muls", b.op("tensor.slice", a, [4, C], [4, 0]), 2.0))))],
    case("tile.gather_row", lambda b, a, c: b.op("tile.gather_row", b.op("tile.load", a, [0, 0], [R, C]), c,
                                                 [2, 0], [5, 0], [3, C]),
         lambda x, y: torch.cat([x[:2], y[5:8], x[5:]])),
    case("tensor.gather_row", lambda b, a, c: b.op("tensor.gather_row", b.op("tensor.create_l1", [R, C], D.FP32), a,
                                                   [2, 0], [5, 0], [3, C]),
         lambda x, y: torch.cat([torch.zeros(2, C), x[5:8], torch.zeros(3, C)])),
    # the index row doubles as the block table: logical i -> page c[i // 2] * 2 + i % 2
    *[case(f"tensor.paged_gather_{space.name}", lambda b, a, c, space=space: b.op(
        "tensor.paged_gather", a, c, c, 2, C - 4, R, space, 3), lambda x, y: x[[int(y[0, i // 2]) * 2 + i % 2
                                                                                for i in y[0].tolist()], 3:C - 1],
        inputs=(X, torch.tensor([[1, 0, 3, 2, 2, 0, 1, 3]], dtype=torch.int32)), out_shape=(R, C - 4))
      for space in (M.Mat, M.Vec)],
    case("tensor.expand_clone", lambda b, a, c: b.op("tensor.expand_clone", b.op("tensor.slice", a, [1, C], [3, 0]), c),
         lambda x, y: x[3:4].expand(R, C)),
    case("tensor.gather", lambda b, a, c: b.op("tensor.gather", a, -1, c), lambda x, y: x.gather(1, y.long()),
         inputs=(X, SCATTER_AT)),
    case("tensor.scatter", lambda b, a, c: b.op("tensor.scatter", a, -1, c, b.op("tensor.muls", a, 10.0)),
         lambda x, y: _scatter_rows(x, y, x * 10), inputs=(X, SCATTER_AT)),
]


_ARGS = {"row_argmax": lambda x: x.argmax(1, keepdim=True), "row_argmin": lambda x: x.argmin(1, keepdim=True),
         "col_argmax": lambda x: x.argmax(0, keepdim=True), "col_argmin": lambda x: x.argmin(0, keepdim=True)}
_PARTS = {"part_add": torch.add, "part_mul": torch.mul, "part_max": torch.maximum, "part_min": torch.minimum}

# the tensor forms of tile ops (pypto.ir.ops.tensor_forms), and the in-place fill
CASES += [
    *[case(f"tensor.{k}", tensor1(f"tensor.{k}"), lambda x, y, f=f: f(x).int(),
           out_shape=(R, 1) if k.startswith("row") else (1, C), out_dtype=torch.int32) for k, f in _ARGS.items()],
    case("tensor.cmp", tensor2("tensor.cmp", cmp_type=4), lambda x, y: (x > y).float()),
    case("tensor.cmps", tensor1("tensor.cmps", 0.5, cmp_type=2), lambda x, y: (x < 0.5).float()),
    *[case(f"tensor.{k}", tensor2(f"tensor.{k}"), lambda x, y, f=f: f(x, y)) for k, f in _PARTS.items()],
    case("tensor.fillpad_expand", lambda b, a, c: b.op("tensor.fillpad_expand", b.op("tensor.slice", a, [5, C], [0, 0]),
                                                      [R, C], pad_value=PadValue.max),
         lambda x, y: torch.cat([x[:5], torch.full((R - 5, C), float("inf"))])),
    case("tensor.expands", tensor1("tensor.expands", 2.5), lambda x, y: torch.full((R, C), 2.5)),
    case("tensor.concat", lambda b, a, c: b.op("tensor.concat", b.op("tensor.slice", a, [R, C // 2], [0, 0]),
                                               b.op("tensor.slice", c, [R, C // 2], [0, 4])),
         lambda x, y: torch.cat([x[:, :C // 2], y[:, 4:4 + C // 2]], 1)),
    case("tensor.reinterpret_view", tensor1("tensor.reinterpret_view", D.INT32), lambda x, y: x.view(torch.int32),
         out_dtype=torch.int32),
    case("tile.fillpad_inplace", lambda b, a, c: b.op("tile.fillpad_inplace", b.op(
        "tile.set_validshape", b.op("tile.load", a, [0, 0], [R, C]), 3, 5), pad_value=PadValue.max),
         lambda x, y: torch.where((torch.arange(R)[:, None] < 3) & (torch.arange(C)[None, :] < 5), x,
                                  torch.tensor(float("inf")))),
]


def _rows_updated(x, index, src):
    out = x.clone()
    for k, r in enumerate(index.reshape(-1).tolist()):  # the later of two naming one row wins
        out[r] = src[k]
    return out


def _scatter_rows(x, where, src):
    out = x.clone()
    for b in range(x.shape[0]):
        for k in range(where.shape[1]):  # the later of two naming one column wins
            out[b, where[b, k]] = src[b, k]
    return out


def _program(build, inputs, out_shape, out_dtype):
    b = FunctionBuilder("k", FunctionType.InCore, soc=A2A3)
    a = b.param("a", TensorType(inputs[0].shape, FROM_TORCH[inputs[0].dtype]))
    c = b.param("c", TensorType(inputs[1].shape, FROM_TORCH[inputs[1].dtype]))
    out = b.param("out", TensorType(out_shape, FROM_TORCH[out_dtype]), ParamDirection.Out)
    result = build(b, a, c)
    t = b.types[result.name]
    if isinstance(t, TensorType):
        b.eval("tensor.assemble", out, result, [0] * len(out_shape))
    else:
        b.eval("tile.store", result, [0] * len(out_shape), out)
    b.ret(out)
    return n.Program("zoo", (b.build(),))


@pytest.mark.parametrize("platform", ["ref", "a2a3sim"])
@pytest.mark.parametrize("build, expect, inputs, out_shape, out_dtype", CASES)
def test_op(build, expect, inputs, out_shape, out_dtype, platform):
    program = _program(build, inputs, out_shape, out_dtype)
    verify(program, A2A3)
    for explicit in (False, True):
        assert parse(program.as_python(explicit=explicit)) == program
    out = torch.zeros(out_shape, dtype=out_dtype)
    args = (*(x.clone() for x in inputs), out)
    if platform == "ref":
        interpreter.run(program, "k", args)
    else:  # through the whole compiler: passes, codegen, the simulated core
        compile_program(program, ("a", "c", "out"), RunConfig(platform=platform), write=False).run(*args)
    want = expect(*inputs)
    if want.dtype == torch.float64:
        torch.testing.assert_close(out.double(), want, rtol=1e-3, atol=1e-3)
    else:
        torch.testing.assert_close(out, want.to(out.dtype), rtol=0, atol=1e-6, equal_nan=True)


def test_every_op_is_exercised_and_has_semantics():
    used = set()
    for param in CASES:
        build, _, inputs, out_shape, out_dtype = param.values
        fn = _program(build, inputs, out_shape, out_dtype).functions[0]
        used |= {s.value.op for s in n.walk_stmts(fn.body) if isinstance(getattr(s, "value", None), n.Call)}
    # the orchestration's ops run in tests/test_task_ir.py and tests/test_orchestration.py, the
    # core registers (which read the launch, not operands) in tests/test_spmd.py and tests/test_lanes.py
    from pypto.ir.ops.spmd import CORE_REGISTERS

    # the ring reservation (which moves no data) in tests/test_rings.py, the named crossings (which the
    # outliner stages) in tests/test_lanes.py and, their tile forms, tests/test_lane_crossings.py
    # the cross-core pipe's ops (which the pipe protocol runs, not a torch function) in tests/test_pipes.py,
    # the scatter into GM (which writes a parameter, not a result) in tests/test_indexed_transfers.py, the
    # element written into GM in tests/test_elements.py, the debug print (which shows, not computes) in
    # tests/test_debug_print.py, the counter-based generator (A5's: ref and a5sim compute it, a2a3sim refuses
    # it) in tests/test_random.py, the MX matmuls (A5's, on FP8 data and E8M0 scales) in tests/test_matmul_mx.py,
    # the gather into L1 (read back through the cube) in tests/test_tensor_forms.py,
    # a kernel's arrays of integers in tests/test_kernel_forms.py, the extract of an L0 operand in
    # tests/test_tile_windows_forms.py, a tensor's valid shape in tests/test_orchestration_views.py,
    # the pld ops (which run on a rank of a cluster) in tests/test_distributed.py, the barrier of an SPMD
    # launch's blocks (which orders them, computing nothing) in tests/test_syncall.py
    from pypto.ir.ops.pipes import PIPE_OPS

    names = {op.name for op in all_ops() if op.plane != "orchestration" and not op.module} - set(CORE_REGISTERS) - {
        "system.reserve_buffer", "tensor.aiv_shard", "tensor.aic_gather", "tile.aiv_shard", "tile.aic_gather",
        "system.import_peer_buffer", "tile.mscatter",
        "tensor.write", "tile.debug_print", "tile.random", "tensor.random", "tile.mgather_mat",
        "array.create", "array.get", "array.set", "tile.extract", "tensor.set_validshape", "system.syncall",
        "tile.matmul_mx", "tile.matmul_mx_acc", "tile.matmul_mx_bias"} - PIPE_OPS
    assert names - used == set()
    assert names - set(IMPLS) == set()


def test_unified_names_point_at_registered_ops():
    for name, forms in UNIFIED.items():
        for target in (forms.tile, forms.tile_scalar, forms.tensor, forms.tensor_scalar, forms.only):
            assert target is None or lookup(target) is not None, (name, target)


def test_every_ops_cost_class_is_in_the_soc_table_and_facts_are_where_they_apply():
    from pypto.backend import A2A3

    for op in all_ops():
        for unit in (op.unit, *op.units.values()):
            assert unit in A2A3.costs.vector_cycles, f"{op.name}: cost class {unit!r} missing from the SoC table"
        if op.in_place or op.reduces or op.mnemonic:
            assert op.level == "tile", f"{op.name}: a tile op's fact on a {op.level} op"
        if op.reduces:
            assert not op.in_place, f"{op.name}: a reduction's result has another shape than its operand"


def test_a_calls_arguments_are_read_and_replaced_by_parameter_name():
    from pypto.ir.ops import argument, op_call, with_args

    call = op_call("tile.load", tensor=n.Var("a"), offsets=(n.Const(0), n.Const(0)), shapes=(n.Const(16), n.Const(16)))
    assert argument(call, "tensor") == n.Var("a") and argument(call, "transpose") is False
    moved = with_args(call, transpose=True, tensor=n.Var("b"))
    assert (argument(moved, "transpose"), argument(moved, "tensor")) == (True, n.Var("b"))
    assert argument(moved, "offsets") is argument(call, "offsets")  # the others untouched
    with pytest.raises(KeyError, match="tile.load has no parameter 'tile'"):
        argument(call, "tile")


def test_the_elementwise_families_are_the_rows_every_level_and_the_fuzzers_use():
    from pypto.fuzz import data
    from pypto.ir.ops import families

    for row in (*families.BINARY, *families.UNARY):
        name = row.name
        for level in ("tile", "tensor"):
            assert lookup(f"{level}.{name}") is not None, (level, name)
        assert lookup(f"tile.{name}").unit == row.unit and lookup(f"tile.{name}").in_place == row.in_place
        assert UNIFIED[row.pl_name].tile == f"tile.{name}" and UNIFIED[row.pl_name].tensor == f"tensor.{name}"
    for row in families.BINARY:
        s = families.scalar_form(row.name)
        assert lookup(f"tile.{s}") is not None and lookup(f"tensor.{s}") is not None
        assert UNIFIED[row.pl_name].tile_scalar == f"tile.{s}"
    # the fuzzers draw every family, each from dtypes it computes in
    assert set(data.UNARY) == {r.name for r in families.UNARY}
    assert set(data.BINARY) == {r.name for r in families.BINARY}
    rows = {r.name: r.dtypes for r in (*families.BINARY, *families.UNARY)}
    for table in (data.UNARY, data.BINARY):
        for name, (_, dtypes) in table.items():
            assert set(dtypes) <= set(rows[name]), name
