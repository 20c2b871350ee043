"""What drawing examples needs beyond the package's own requirements: hypothesis (the
``fuzz`` extra). Every module that draws imports its strategies from here, so a missing
install is one clear line naming the extra; reading a reproducer needs none of it."""

# "pypto" on the package index is another project's name: this one installs from its clone
INSTALL = "pip install 'hypothesis>=6.90' (in a clone of this repository: pip install -e '.[fuzz]')"

try:
    from hypothesis import strategies as st
except ImportError:  # the package runs without it; only fuzzing needs it
    raise ImportError(f"pypto.fuzz needs hypothesis: {INSTALL}") from None

__all__ = ["st"]
