"""What drawing examples needs beyond the package's own requirements: hypothesis (the
``fuzz`` extra). Every module that draws imports its strategies from here, so a missing
install is one clear line naming the extra; reading a reproducer needs none of it."""

try:
    from hypothesis import strategies as st
except ImportError:  # the package runs without it; only fuzzing needs it
    raise ImportError("pypto.fuzz needs hypothesis, which the fuzz extra installs: pip install 'pypto[fuzz]'") \
        from None

__all__ = ["st"]
