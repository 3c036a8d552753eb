"""The dashboard as an ASGI app: Streamlit's own, plus `dashboard.page_base` so a page opened
directly (a shared link) connects without two failed requests first.

It also receives the dwell beacons of study mode (`dashboard.study_beacon`).

`aee app` and the test and benchmark servers start it with `streamlit run dashboard/serve.py`
(Streamlit sees the App below and serves it with uvicorn). `streamlit run app.py` still works, with
those two 404s per directly opened page.
"""

from __future__ import annotations

from pathlib import Path

from starlette.middleware import Middleware
from streamlit.starlette import App

from dashboard import study_beacon
from dashboard.page_base import PageBaseMiddleware

_HERE = Path(__file__).resolve().parent
# in a checkout the router runs through the top-level app.py (pages/ beside it); a wheel runs its own
SCRIPT = _HERE.parent / "app.py" if (_HERE.parent / "app.py").is_file() and (_HERE.parent / "pages").is_dir() \
    else _HERE / "app.py"

# study_beacon's route: the time on a study's last answer, sent by the browser as the page goes away
app = App(str(SCRIPT), routes=study_beacon.routes(), middleware=[Middleware(PageBaseMiddleware)])
