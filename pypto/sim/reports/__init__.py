"""What a run shows its user: the progress line, the ``pl.debug_print`` records, the
``RunReport`` summary, the L0 trace and its MindStudio Insight container."""
