"""Screenshots for a person to look at, taken by the browser tests only when asked.

A full-page screenshot costs a resize, a settle and an encode (1-2 s a page on two cores); the
browser tests took ~50 of them per run, most of a minute of CI that no one looked at. They are for
the review a UI change needs (the team guide), so they are opt-in:

    AEE_SHOTS=1 make test            # or: AEE_SHOTS=1 .venv/bin/python -m pytest tests/browser/test_browser*.py

tests/browser/test_browser.py writes to tests/artifacts/ (gitignored), tests/browser/test_browser_widths.py to
AEE_WIDTH_SHOTS (default /tmp/aee-width-shots/). What the tests assert does not depend on them.
"""

from __future__ import annotations

import os

SHOTS_ON = os.environ.get("AEE_SHOTS", "").strip().lower() not in ("", "0", "no", "false")
