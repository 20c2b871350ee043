"""Tools that read the compiler's artifacts on disk: pass dumps (``memory_map``) and
simulator traces (``clean_sim_trace``). They parse what they read; they never run it."""
