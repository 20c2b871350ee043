"""FuseCreateAssembleToSlice: a buffer a kernel fills whole and the orchestration then
assembles once becomes a view of the window — and only where the program computes the
same with the view as with the copy (each case checks that by interpreting both)."""

import pytest
from helpers import check_pass

from pypto.passes.fuse_create_assemble_to_slice import fuse_create_assemble_to_slice

FILL = """
        @pl.function(type=pl.FunctionType.InCore)
        def fill(self, a: pl.Tensor[[4, 64], pl.FP32], b: pl.Scalar[pl.INDEX], t: pl.Out[pl.Tensor[[4, 64], pl.FP32]]) -> pl.Tensor[[4, 64], pl.FP32]:
            x = pl.tile.load(a, [0, 0], [4, 64], target_memory=pl.Mem.Vec)
            y = pl.tile.adds(x, b)
            t_1 = pl.tile.store(y, [0, 0], t)
            return t_1

        @pl.function(type=pl.FunctionType.InCore)
        def rows(self, a: pl.Tensor[[4, 64], pl.FP32], b: pl.Scalar[pl.INDEX], t: pl.Out[pl.Tensor[[4, 64], pl.FP32]]) -> pl.Tensor[[4, 64], pl.FP32]:
            for r, (t_1,) in pl.range(4, init_values=(t,)):
                x = pl.tile.load(a, [r, 0], [1, 64], target_memory=pl.Mem.Vec)
                t_2 = pl.tile.store(x, [r, 0], t_1)
                t_3 = pl.yield_(t_2)
            return t_3

        @pl.function(type=pl.FunctionType.InCore)
        def twice(self, t: pl.Tensor[[4, 64], pl.FP32], out: pl.Out[pl.Tensor[[4, 64], pl.FP32]]) -> pl.Tensor[[4, 64], pl.FP32]:
            x = pl.tile.load(t, [0, 0], [4, 64], target_memory=pl.Mem.Vec)
            y = pl.tile.muls(x, 2.0)
            out_1 = pl.tile.store(y, [0, 0], out)
            return out_1
"""


def test_a_filled_buffer_assembled_once_becomes_the_window_led_by_1s_to_the_targets_rank():
    check_pass(fuse_create_assemble_to_slice, FILL + """
        @pl.function(type=pl.FunctionType.Orchestration)
        def k(self, a: pl.Tensor[[4, 64], pl.FP32], out: pl.Out[pl.Tensor[[4, 4, 64], pl.FP32]]) -> pl.Tensor[[4, 4, 64], pl.FP32]:
            for b, (o,) in pl.parallel(4, init_values=(out,)):
                buf = pl.tensor.create([4, 64], dtype=pl.FP32)
                t = self.fill(a, b, buf)
                o_1 = pl.tensor.assemble(o, t, [b, 0, 0])
                o_2 = pl.yield_(o_1)
            return o_2
    """, FILL + """
        @pl.function(type=pl.FunctionType.Orchestration)
        def k(self, a: pl.Tensor[[4, 64], pl.FP32], out: pl.Out[pl.Tensor[[4, 4, 64], pl.FP32]]) -> pl.Tensor[[4, 4, 64], pl.FP32]:
            for b, (o,) in pl.parallel(4, init_values=(out,)):
                buf_v = pl.tensor.slice(o, [1, 4, 64], [b, 0, 0])
                buf = pl.tensor.reshape(buf_v, [4, 64])
                t = self.fill(a, b, buf)  # task args: Input, Scalar, OutputExisting
                o_1: pl.Tensor[[4, 4, 64], pl.FP32] = o
                o_2 = pl.yield_(o_1)
            return o_2
    """)


def test_a_buffer_of_the_targets_rank_is_a_slice_and_a_later_reader_reads_the_target():
    check_pass(fuse_create_assemble_to_slice, FILL + """
        @pl.function(type=pl.FunctionType.Orchestration)
        def k(self, a: pl.Tensor[[4, 64], pl.FP32], out: pl.Out[pl.Tensor[[8, 64], pl.FP32]], res: pl.Out[pl.Tensor[[4, 64], pl.FP32]]) -> pl.Tensor[[8, 64], pl.FP32]:
            buf = pl.tensor.create([4, 64], dtype=pl.FP32)
            t = self.fill(a, 3, buf)
            u = self.twice(t, res)
            out_1 = pl.tensor.assemble(out, t, [4, 0])
            v = pl.tensor.slice(out_1, [4, 64], [4, 0])
            w = self.twice(v, res)
            return out_1
    """, FILL + """
        @pl.function(type=pl.FunctionType.Orchestration)
        def k(self, a: pl.Tensor[[4, 64], pl.FP32], out: pl.Out[pl.Tensor[[8, 64], pl.FP32]], res: pl.Out[pl.Tensor[[4, 64], pl.FP32]]) -> pl.Tensor[[8, 64], pl.FP32]:
            buf = pl.tensor.slice(out, [4, 64], [4, 0])
            t = self.fill(a, 3, buf)  # task args: Input, Scalar, OutputExisting
            u = self.twice(t, res)  # task args: Input, OutputExisting
            out_1: pl.Tensor[[8, 64], pl.FP32] = out
            v = pl.tensor.slice(out_1, [4, 64], [4, 0])
            w = self.twice(v, res)  # task args: Input, InOut
            return out_1
    """)


KEPT = {
    "a kernel that may not fill it": """
            buf = pl.tensor.create([4, 64], dtype=pl.FP32)
            t = self.rows(a, 0, buf)
            out_1 = pl.tensor.assemble(out, t, [4, 0])
            return out_1
    """,
    "read after the assemble": """
            buf = pl.tensor.create([4, 64], dtype=pl.FP32)
            t = self.fill(a, 1, buf)
            out_1 = pl.tensor.assemble(out, t, [0, 0])
            c = self.fill(a, 2, a4)
            out_2 = pl.tensor.assemble(out_1, t, [4, 0])
            return out_2
    """,
    "assembled twice": """
            buf = pl.tensor.create([4, 64], dtype=pl.FP32)
            t = self.fill(a, 1, buf)
            out_1 = pl.tensor.assemble(out, t, [0, 0])
            out_2 = pl.tensor.assemble(out_1, t, [4, 0])
            return out_2
    """,
    "a task reading the target before it": """
            r = self.twice(pl.tensor.slice(out, [4, 64], [4, 0]), a4)
            buf = pl.tensor.create([4, 64], dtype=pl.FP32)
            t = self.fill(a, 1, buf)
            out_1 = pl.tensor.assemble(out, t, [4, 0])
            return out_1
    """,
    "the target touched in between": """
            buf = pl.tensor.create([4, 64], dtype=pl.FP32)
            t = self.fill(a, 1, buf)
            r = self.twice(pl.tensor.slice(out, [4, 64], [0, 0]), a4)
            out_1 = pl.tensor.assemble(out, t, [4, 0])
            return out_1
    """,
    "a later trip's reader of the target": """
            for i, (o,) in pl.range(2, init_values=(out,)):
                buf = pl.tensor.create([4, 64], dtype=pl.FP32)
                t = self.fill(a, i, buf)
                o_1 = pl.tensor.assemble(o, t, [i * 4, 0])
                r = self.twice(pl.tensor.slice(o_1, [4, 64], [0, 0]), a4)
                o_2 = pl.yield_(o_1)
            return o_2
    """,
    "an offset computed after the buffer": """
            buf = pl.tensor.create([4, 64], dtype=pl.FP32)
            t = self.fill(a, 1, buf)
            at: pl.Scalar[pl.INDEX] = 4
            out_1 = pl.tensor.assemble(out, t, [at, 0])
            return out_1
    """,
}


@pytest.mark.parametrize("case", KEPT, ids=list(KEPT))
def test_where_the_view_could_compute_otherwise_the_copy_stays(case):
    program = FILL + """
        @pl.function(type=pl.FunctionType.Orchestration)
        def k(self, a: pl.Tensor[[4, 64], pl.FP32], a4: pl.Out[pl.Tensor[[4, 64], pl.FP32]], out: pl.Out[pl.Tensor[[8, 64], pl.FP32]]) -> pl.Tensor[[8, 64], pl.FP32]:
    """ + KEPT[case]
    from helpers import program_text
    from pypto.lang import parse

    text = parse(program_text(program)).as_python()  # as the printer writes it
    body = text.split("class P:\n", 1)[1]
    check_pass(fuse_create_assemble_to_slice, body, body)


def test_a_reshaped_buffer_is_the_window_seen_as_the_buffer_where_that_only_splits_axes():
    check_pass(fuse_create_assemble_to_slice, FILL + """
        @pl.function(type=pl.FunctionType.Orchestration)
        def k(self, a: pl.Tensor[[4, 64], pl.FP32], out: pl.Out[pl.Tensor[[2, 256], pl.FP32]]) -> pl.Tensor[[2, 256], pl.FP32]:
            buf = pl.tensor.create([4, 64], dtype=pl.FP32)
            t = self.fill(a, 1, buf)
            row = pl.tensor.reshape(t, [1, 256])
            out_1 = pl.tensor.assemble(out, row, [1, 0])
            return out_1
    """, FILL + """
        @pl.function(type=pl.FunctionType.Orchestration)
        def k(self, a: pl.Tensor[[4, 64], pl.FP32], out: pl.Out[pl.Tensor[[2, 256], pl.FP32]]) -> pl.Tensor[[2, 256], pl.FP32]:
            buf_v = pl.tensor.slice(out, [1, 256], [1, 0])
            buf = pl.tensor.reshape(buf_v, [4, 64])
            t = self.fill(a, 1, buf)  # task args: Input, Scalar, OutputExisting
            row = pl.tensor.reshape(t, [1, 256])
            out_1: pl.Tensor[[2, 256], pl.FP32] = out
            return out_1
    """)
    merged = FILL + """
        @pl.function(type=pl.FunctionType.Orchestration)
        def k(self, a: pl.Tensor[[4, 64], pl.FP32], out: pl.Out[pl.Tensor[[8, 128], pl.FP32]]) -> pl.Tensor[[8, 128], pl.FP32]:
            buf = pl.tensor.create([4, 64], dtype=pl.FP32)
            t = self.fill(a, 1, buf)
            rows = pl.tensor.reshape(t, [2, 128])
            out_1 = pl.tensor.assemble(out, rows, [2, 0])
            return out_1
    """
    from helpers import program_text
    from pypto.lang import parse

    body = parse(program_text(merged)).as_python().split("class P:\n", 1)[1]
    check_pass(fuse_create_assemble_to_slice, body, body)  # [2, 128] seen as [4, 64] merges rows: a copy stays
