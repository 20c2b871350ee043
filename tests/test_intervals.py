"""The interval map the hazard checker keeps per space: pieces cover exactly what is asked,
splits keep values, assigning a range collapses it, reading one splits nothing, and paging
changes nothing but speed."""

from hypothesis import given
from hypothesis import strategies as st

from pypto.sim.accesses.intervals import IntervalMap

accesses = st.lists(st.tuples(st.integers(0, 300), st.integers(1, 80)), min_size=1, max_size=40)


@given(accesses, st.sampled_from([None, 3, 5, 12]))
def test_pieces_tile_the_range_and_hold_what_the_last_write_put_there(writes, page_bits):
    m = IntervalMap(page_bits)
    model = [None] * 400  # the value of every byte
    for n, (lo, size) in enumerate(writes):
        hi = lo + size
        got = list(m.pieces(lo, hi))
        spans = [(page.bounds[k], page.bounds[k + 1]) for page, k in got]
        assert spans[0][0] == lo and spans[-1][1] == hi
        assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))  # contiguous, in order
        for (page, k), (a, b) in zip(got, spans):
            assert all(model[x] == page.values[k] for x in range(a, b))  # a segment is uniform
            page.values[k] = n
        model[lo:hi] = [n] * size


ops = st.lists(st.tuples(st.booleans(), st.integers(0, 300), st.integers(1, 80)), min_size=1, max_size=40)


@given(ops, st.sampled_from([None, 3, 5, 12]))
def test_assign_and_values_agree_with_a_byte_model_and_keep_whole_writes_one_segment(steps, page_bits):
    m = IntervalMap(page_bits)
    model = [None] * 400
    for n, (write, lo, size) in enumerate(steps):
        hi = lo + size
        if write:
            m.assign(lo, hi, n)
            model[lo:hi] = [n] * size
        else:  # a read splits nothing
            before = {p: list(page.bounds) for p, page in m.pages.items()}
            assert set(m.values(lo, hi)) - {None} == set(model[lo:hi]) - {None}
            assert {p: page.bounds for p, page in m.pages.items()} == before
    m.assign(0, 400, "all")
    assert set(m.values(0, 400)) == {"all"}
    assert all(len(page.bounds) == 2 for page in m.pages.values())  # one segment per page, however cut


def test_a_split_leaves_both_pieces_the_value_and_each_is_replaced_alone():
    m = IntervalMap()
    ((page, k),) = m.pieces(0, 10)
    page.values[k] = ("w", 1)
    (left,) = m.pieces(0, 5)
    left[0].values[left[1]] = ("w", 2)
    ((p, j),) = m.pieces(5, 10)
    assert p.values[j] == ("w", 1)


def test_strided_runs_keep_each_page_short():
    m = IntervalMap(12)
    for j in range(256):  # one 128-byte run per 32 KiB row, 256 rows, for 256 column blocks
        for r in range(256):
            for page, k in m.pieces(r * 32768 + j * 128, r * 32768 + j * 128 + 128):
                page.values[k] = j
    assert max(len(p.bounds) for p in m.pages.values()) <= 4096 // 128 + 1


def test_vector_clocks_order_what_a_synchronization_carries():
    from pypto.sim.accesses.happens import VectorClocks, ordered

    c = VectorClocks()
    a1 = c.tick("a")
    a2 = c.tick("a")
    b1 = c.tick("b")
    assert not ordered(a1, b1) and ordered(a1, a2) and not ordered(a2, a1)
    assert a1[2] is a2[2]  # no receive between them: one dict of what "a" learnt
    b2 = c.tick("b", received=a2)  # b waits for what a set after its second event
    assert ordered(a2, b2) and ordered(a1, b2) and ordered(b1, b2)
    a3 = c.tick("a")
    assert not ordered(a3, b2) and not ordered(b1, a3)
    a4 = c.tick("a", received=b2)  # and back: a learns what b knew, its own events included
    assert ordered(b1, a4) and ordered(a2, a4) and not ordered(a4, b2)
