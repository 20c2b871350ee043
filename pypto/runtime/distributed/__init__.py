"""Running a ``@pl.jit.host`` orchestrator on a cluster of simulated ranks: its config
(``config``), its body walked into per-rank dispatches (``host``), the run and its report
(``program``), and the reusable worker (``worker``)."""
