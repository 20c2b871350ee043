"""The kernels of ``bench/models.py``: a 14B-class transformer layer (decode and prefill)
written in ``pypto.language`` as its users write one — one module per piece, each an inline
helper of ``pl.parallel`` loops of ``pl.at`` tasks and an entry that runs it alone — with
the sizes (``shapes``), the inputs and torch's versions (``pieces``)."""
