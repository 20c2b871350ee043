"""The kernel language's control words (``pl.range``, ``pl.pipeline``, ``pl.at``, ...) as
Python sees them: functions with the signature and the text ``help()`` shows.

The compiler reads kernel source and never runs it, so none of these is ever called by a
kernel; each names itself to the front end by ``__pypto_path__`` and, called from host
code, says where it belongs. Their arguments are checked by the front end where they are
written (``pypto/lang/flow/loops.py``, ``control.py``, ``launches.py``, ``placement.py``,
``tasks.py``, ``submits.py``); the signatures here are what those accept.
"""

from __future__ import annotations

from pypto.errors import PyptoError

_NOT_HERE = ("is part of the kernel language and only has meaning inside a @pl.jit / @pl.function body, "
             "which the compiler parses and never runs")


def _word(name: str):
    """Marks ``fn`` as ``pl.<name>``: the front end's name for it, refusing to run on the host."""

    def mark(fn):
        def word(*args, **kwargs):
            raise PyptoError(f"pl.{name} {_NOT_HERE}", hint="call the kernel instead: kernel(*tensors, config=RunConfig(...))")

        word.__name__ = name
        word.__qualname__ = name
        word.__module__ = "pypto.language"
        word.__doc__ = fn.__doc__
        word.__wrapped__ = fn  # inspect.signature reads the documented parameters
        word.__pypto_path__ = (name,)
        return word

    return mark


# ----------------------------------------------------------------------------- loops


@_word("range")
def range(start, stop=None, step=1, *, init_values=None):
    """A sequential loop: ``for i in pl.range(stop)`` or ``pl.range(start, stop, step)``.

    Each trip follows the one before. The bounds are integers (constants, loop variables or
    ``pl.Scalar`` parameters); a constant step must be positive, and the index is ``INDEX``,
    a signed 64-bit integer: a constant bound it cannot hold is an error at that argument.

    In an orchestration (a ``@pl.jit`` entry) the loop runs on the host, and every task its
    body submits that writes a buffer an earlier trip wrote waits for it (R-seq). Inside a
    ``pl.at`` scope it is a loop of the core's scalar unit.

    Values carried from trip to trip are plain rebinding (``acc = pl.add(acc, t)``) or the
    explicit form ``for i, (acc,) in pl.range(n, init_values=(acc0,)):`` with
    ``acc = pl.yield_(new)`` as the body's last statement.

    Example::

        for i in pl.range(4):
            t = pl.load(a, [i * 16, 0], [16, 128])
            pl.store(pl.mul(t, 2.0), [i * 16, 0], out)
    """


@_word("pipeline")
def pipeline(start, stop=None, step=1, *, stage, init_values=None):
    """A software-pipelined loop: ``for i in pl.pipeline(n, stage=2)``.

    The same loop as ``pl.range``, with ``stage`` (a positive constant, usually 2 to 4)
    buffers for each tile the body loads, so trip ``i + 1``'s loads (MTE2) overlap trip
    ``i``'s compute (VECTOR or CUBE) and stores (MTE3). The compiler rotates the buffers
    (LowerPipelineLoops, or LowerPipelineToSlots under ``memory_planner="PTOAS"``) and
    inserts the flags each slot needs; the result is bit for bit the ``pl.range`` one, in
    fewer cycles. A pipeline deeper than the memory holds gets the depth that fits, and
    perf hint PH-MR-001 says so, with the lever.

    Example::

        for i in pl.pipeline(8, stage=2):
            t = pl.load(a, [i * 16, 0], [16, 128])
            pl.store(pl.exp(t), [i * 16, 0], out)
    """


@_word("parallel")
def parallel(start, stop=None, step=1, *, init_values=None):
    """A loop whose trips are independent: ``for i in pl.parallel(n)``.

    In an orchestration, the tasks of different trips that write one buffer are not chained
    (``pl.range`` would order them, R-seq), so they take cores of their own at once; trips
    that touch the same bytes, one writing, with nothing ordering them, are a ``TaskRace``.
    Inside a ``pl.at`` scope it is a loop like ``pl.range``.

    Example::

        for i in pl.parallel(16):
            with pl.at(level=pl.Level.CORE_GROUP):
                pl.store(pl.exp(pl.load(a, [i * 64, 0], [64, 512])), [i * 64, 0], out)
    """


@_word("unroll")
def unroll(start, stop=None, step=1):
    """A loop expanded at compile time: ``for i in pl.unroll(n)``.

    The body is written out once per value of ``i``, each a constant, so its bounds must be
    compile-time integers (``pl.range`` takes run-time ones). In an orchestration, a
    ``pl.at`` scope in the body makes ``n`` scopes and ``n`` tasks, each after the last when
    they write one buffer (R-prior). It takes no ``init_values``: rebind names in the body.
    """


@_word("yield_")
def yield_(*values):
    """The values a loop trip (or an ``if`` branch) hands on: ``acc = pl.yield_(new)``.

    The body's last statement, in loops written with ``init_values=(...)``: the names it
    binds are the loop's results after the last trip. Plain rebinding (``acc = new``) is
    the same and needs no ``pl.yield_``.
    """


# ----------------------------------------------------------------------------- scopes and tasks


@_word("while_")
def while_(*, init_values):
    """A loop whose trip count is known only as it runs, in the explicit form the dumps print:
    ``for (x,) in pl.while_(init_values=(x0,)):`` whose body opens with ``pl.cond(x < n)``
    and ends with ``x = pl.yield_(...)``.

    The condition is checked before each trip over the values the loop carries. A plain
    Python ``while cond:`` (with ``break`` and ``continue``) is the same loop written
    naturally; the front end turns it into this form. The simulator runs such a loop trip by
    trip: with no count to skip by, it is never fast-forwarded.

    Example::

        for (i,) in pl.while_(init_values=(0,)):
            pl.cond(i < n)
            t = pl.load(a, [i * 16, 0], [16, 128])
            pl.store(t, [i * 16, 0], out)
            i = pl.yield_(i + 1)
    """


@_word("cond")
def cond(condition):
    """The condition of a ``pl.while_`` loop: ``pl.cond(i < n)``, its body's first statement.

    The loop goes on while the condition holds; it reads the values the loop carries (and
    scalars), never a tensor's element.
    """


@_word("dim")
def dim(tensor, axis):
    """A tensor's extent on an axis: ``pl.dim(a, 0)`` (also ``pl.tensor.dim``); a negative
    axis counts from the end.

    A compile-time constant for a static axis; for a ``pl.dynamic`` axis, the extent the
    orchestration sized the tensor by as it runs.
    """


@_word("at")
def at(*, level, name_hint="", deps=(), no_dep_args=(), allow_early_resolve=False, optimizations=(), dumps=()):
    """An InCore scope: ``with pl.at(level=pl.Level.CORE_GROUP):``.

    What the body does runs on the cores of one cluster; the compiler outlines it into an
    InCore function (tensor-level code is blocked into tiles that fit). In an orchestration
    each ``pl.at`` is one task: the runtime orders it after the tasks that produce what it
    reads (the argument directions ``In``, ``InOut``, ``OutputExisting``), and
    ``with pl.at(...) as tid:`` binds its ``pl.TASK_ID``.

    Args:
        level: ``pl.Level.CORE_GROUP`` (the one supported here).
        name_hint: the outlined kernel's name (in dumps, the swimlane, ``RunReport.tasks``).
        deps: task ids (``tid``, an array of ids, ``arr[i]``, ``None``) to wait for besides
            the inferred edges.
        no_dep_args: tensors this task leaves out of dependency tracking (say how it is
            ordered with ``deps=``).
        allow_early_resolve: stage this task's consumers on cores while it runs.
        optimizations: ``[pl.split(pl.SplitMode.UP_DOWN), pl.cross_core_slot(slot_num=4)]``
            for a scope mixing cube and vector work.
        dumps: tensors whose arguments the task dumps (checked and consumed: a simulated
            device keeps no dumps).
    """


@_word("spmd")
def spmd(core_num, *, sync_start=False, name_hint="", deps=(), optimizations=(), allow_early_resolve=False,
         predicate=None):
    """One task of ``core_num`` blocks: ``for i in pl.spmd(8):`` (or ``with pl.spmd(8):``).

    The body is outlined into one kernel; each block runs it with ``i`` its
    ``pl.tile.get_block_idx()`` on an idle core of the kernel's kind (more blocks than cores
    reuse them). The orchestrator pays one submit and the scheduler a descriptor per block.
    ``sync_start=True`` admits every block at once (so ``core_num`` may not exceed the cores
    of the kind). ``predicate=(t[i, j] > 0)`` is read at dispatch: false retires the task on
    no core. ``deps=`` needs the ``with ... as tid:`` form.
    """


@_word("cluster")
def cluster(*, name_hint=""):
    """One Group task on one physical cluster: ``with pl.cluster():`` around kernel calls.

    The members (at most one cube kernel and two vector kernels) are dispatched once and
    started together, each on a core of its own in that cluster; nothing orders one member
    against another. A ``with pl.spmd(n):`` that is the body's only statement makes ``n``
    such groups. It opens in an orchestration and does not nest.
    """


@_word("scope")
def scope(*, mode=None):
    """A runtime scope: ``with pl.scope():`` (``mode=pl.ScopeMode.MANUAL`` is ``pl.manual_scope()``).

    The tasks submitted in it hold their ring slots until they have finished and the scope
    has closed; each loop trip and branch is one already (``@pl.jit(auto_scope=False)``
    leaves only the written ones). Its depth is the ring its tasks use.
    """


@_word("manual_scope")
def manual_scope():
    """A runtime scope whose tasks only ``deps=`` order: ``with pl.manual_scope():``.

    The runtime infers no edge for the tasks in it; their writes register as producers when
    the scope closes, for the tasks after it.
    """


@_word("submit")
def submit(kernel, *args, deps=(), allow_early_resolve=False, predicate=None, dumps=()):
    """A kernel call as a task, in a ``@pl.program`` orchestration: ``tid = pl.submit(self.k, a, out)``.

    The IR's form of a ``pl.at`` task (dumps print it): the value is the task's id, or
    ``out, tid = pl.submit(...)`` for the result too. ``pl.no_dep(t)`` around an argument
    leaves it out of dependency tracking.
    """


@_word("spmd_submit")
def spmd_submit(kernel, *args, core_num, sync_start=False, deps=(), allow_early_resolve=False, predicate=None,
                dumps=()):
    """``pl.submit`` of ``core_num`` blocks: ``out, tid = pl.spmd_submit(self.k, a, out, core_num=8)``."""


@_word("no_dep")
def no_dep(tensor):
    """An argument a task leaves out of dependency tracking: ``self.k(a, pl.no_dep(out))``."""


@_word("split")
def split(mode):
    """``pl.at(optimizations=[pl.split(pl.SplitMode.UP_DOWN)])``: a mixed scope's vector work
    shared by the cluster's two vector cores, by rows (``UP_DOWN``) or columns
    (``LEFT_RIGHT``); ``NONE`` keeps it on one."""


@_word("cross_core_slot")
def cross_core_slot(*, slot_num=2):
    """``pl.at(optimizations=[pl.cross_core_slot(slot_num=N)])``: the slots of the GM ring a
    mixed scope's cube results reach the vector cores through (default 2): the cube runs at
    most ``slot_num`` tiles ahead."""


@_word("split_aiv")
def split_aiv(lanes, *, mode):
    """A region of a mixed scope run by both vector cores: ``for aiv_id in pl.split_aiv(2, mode=...)``.

    Under ``pl.SplitMode.UP_DOWN`` / ``LEFT_RIGHT`` each lane holds half of every vector value
    (rows / columns); under ``NONE`` each runs the body as written, ``aiv_id`` telling them
    apart. Cube values are read in it through ``pl.aiv_shard`` and handed back with
    ``pl.aic_gather``.
    """


@_word("dump_tag")
def dump_tag(tensor):
    """``pl.dump_tag(q)``: marks ``q`` for the argument dump of the tasks after it that read
    it; a statement of its own, in an orchestration. A simulated device keeps no dumps, so it
    changes nothing here."""


# ----------------------------------------------------------------------------- values


@_word("const")
def const(value, dtype):
    """A typed constant: ``pl.const(1.0, pl.FP16)``; the value must be a compile-time number."""


@_word("min")
def min(a, b, *more):
    """The smallest of two or more index scalars (``pl.min(n - i, 16)``), computed when it
    runs; Python's ``min`` is the same in kernel source."""


@_word("max")
def max(a, b, *more):
    """The largest of two or more index scalars (``pl.max(i - 1, 0)``), computed when it
    runs; Python's ``max`` is the same in kernel source."""


WORDS = {fn.__name__: fn for fn in (range, pipeline, parallel, unroll, yield_, at, spmd, cluster, scope, manual_scope,
                                    submit, spmd_submit, no_dep, split, cross_core_slot, split_aiv, dump_tag, const,
                                    min, max)}
