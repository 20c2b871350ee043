"""Tools that read the compiler's artifacts on disk: pass dumps (``memory_map``) and
simulator traces (``clean_sim_trace``). They parse what they read; they never run it."""


def description(doc: str) -> str:
    """A module docstring's first paragraph as one line: a command's ``--help`` summary
    (its first line alone stops mid-sentence wherever the sentence wraps)."""
    first = (doc or "").strip().split("\n\n")[0]
    return " ".join(line.strip() for line in first.splitlines())
