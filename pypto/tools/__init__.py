"""Tools that read the compiler's artifacts on disk: pass dumps (``memory_map``) and
simulator traces (``clean_sim_trace``). They parse what they read; they never run it."""


from pypto.console import description  # noqa: E402,F401  (the commands' --help summaries)
