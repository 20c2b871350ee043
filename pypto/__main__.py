"""``python -m pypto``: the ``pypto`` command (``pypto.cli``)."""

import sys

from pypto.cli import main

sys.exit(main())
