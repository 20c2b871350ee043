"""The front end's liveness: which names a statement binds are read after it — computed in
one backward pass, equal to the definition (everything read after the statement, or live
after its block), on random blocks of assignments, loops and branches."""

import ast

from hypothesis import given
from hypothesis import strategies as st

from pypto.lang.flow import liveness

NAMES = ["a", "b", "c", "d", "e"]


@st.composite
def blocks(draw, depth: int = 0) -> list[str]:
    lines = []
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["assign", "aug", "expr"] + (["for", "if"] if depth < 2 else [])))
        x, y, z = (draw(st.sampled_from(NAMES)) for _ in range(3))
        if kind == "assign":
            lines.append(f"{x} = {y} + {z}")
        elif kind == "aug":
            lines.append(f"{x} += {y}")
        elif kind == "expr":
            lines.append(f"f({y})")
        else:
            head = f"for {x} in range({y}):" if kind == "for" else f"if {y}:"
            lines.append(head)
            lines += ["    " + line for line in draw(blocks(depth + 1))]
            if kind == "if" and draw(st.booleans()):
                lines.append("else:")
                lines += ["    " + line for line in draw(blocks(depth + 1))]
    return lines


@given(lines=blocks(), live=st.frozensets(st.sampled_from(NAMES)), tail=st.lists(st.sampled_from(NAMES), max_size=2))
def test_property_live_after_each_is_the_definition(lines, live, tail):
    stmts = ast.parse("\n".join(lines)).body
    after = [ast.parse(name, mode="eval").body for name in tail]
    got = liveness.live_after_each(stmts, live, after)
    for i, stmt in enumerate(stmts):
        later = live | liveness.reads(stmts[i + 1:] + after)
        assert got[i] == frozenset(liveness.assigned([stmt])) & later, (i, lines)


def test_a_long_block_is_one_pass():
    # 4,000 statements: the old per-statement scan of everything after each one took minutes
    stmts = ast.parse("\n".join(f"t{k} = t{k - 1} + 1" for k in range(1, 4000))).body
    got = liveness.live_after_each(stmts)
    assert got[0] == {"t1"} and got[-1] == frozenset()
