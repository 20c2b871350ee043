"""Rewrite the docs' screenshots (docs/images/*.png) from the real pages, as the browser
tests take them: ``python dev/docs_images.py``. Needs Debian's chromium."""

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from docs_images import take  # noqa: E402

if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as work:
        for png in take(ROOT / "docs" / "images", Path(work)):
            print(f"wrote {png.relative_to(ROOT)} ({png.stat().st_size // 1024} KiB)")
