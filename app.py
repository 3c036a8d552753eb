"""The dashboard's router: one explicit page list (dashboard/pages_registry.py), wide layout, and a
sidebar note saying which loaded datasets are illustrative. Run: `streamlit run app.py`."""

from __future__ import annotations

import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parent
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

import streamlit as st  # noqa: E402

from dashboard import data  # noqa: E402
from dashboard.pages_registry import available_pages, missing_pages  # noqa: E402
from dashboard.render import md_escape  # noqa: E402

st.set_page_config(page_title="Answer-engine audit", page_icon=":material/fact_check:", layout="wide")

# Shared state lives here only: the dataset the pages open with (pages update it when it changes).
st.session_state.setdefault("shared_dataset", None)
st.session_state["_router_ran"] = True

pages = [st.Page(p.file, title=p.title, icon=p.icon, default=p.default) for p in available_pages()]
page = st.navigation(pages)

with st.sidebar:
    illustrative = data.illustrative_datasets()
    if illustrative:
        names = ", ".join(f"**{md_escape(n)}**" for n in illustrative)
        st.info(f"Illustrative data: {names}. Invented engines and answers for teaching; "
                "its numbers say nothing about any real product.", icon=":material/school:")
    if not data.datasets():
        st.warning("No results yet. Run `python -m pipeline run --dataset demo` first.")
    absent = missing_pages()
    if absent:
        st.caption("Not installed yet: " + ", ".join(p.title for p in absent))

page.run()
