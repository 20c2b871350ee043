"""Many chips: ranks, each a simulated chip run unchanged, joined by the interconnect model
of the SoC table (``pypto.backend.soc.Interconnect``). The layer sits above ``chip`` and
below ``runtime``: ``windows`` holds the window buffers every rank allocated alike,
``baton`` runs the ranks one at a time in a deterministic order, ``links`` keeps the
simulated clock of each rank's cross-rank acts, ``cluster`` joins them (a rank's
``CommPort``) and says why a run cannot finish.
"""
