"""The dashboard's router: one explicit page list (`dashboard.pages_registry`), wide layout, a
local favicon, and the dataset every page opens with.

`streamlit run app.py` in a checkout runs this through the thin `app.py` at the project's top;
`aee app` runs this file directly, which is how an installed wheel starts the dashboard.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from dashboard import data
from dashboard.pages_registry import PAGES

# A file served by the app itself: a Material icon or an emoji as page_icon makes the browser
# fetch the favicon from a font CDN, which fails offline (and leaks the visit).
FAVICON = Path(__file__).resolve().parent / "static" / "favicon.png"


def main() -> None:
    """Configure the page, settle the shared dataset, build the navigation from the registry and
    run the chosen page."""
    st.set_page_config(page_title="Answer-engine audit", page_icon=str(FAVICON), layout="wide")

    # Shared state lives here only: the dataset every page opens with. A link's `?dataset=` wins
    # (pages that pick a dataset keep the URL in step); otherwise the first visit takes the default.
    names = data.datasets()
    wanted = st.query_params.get("dataset")
    if wanted in names:
        st.session_state["shared_dataset"] = wanted
    elif st.session_state.get("shared_dataset") not in names:
        st.session_state["shared_dataset"] = data.default_dataset(names)
    st.session_state["_router_ran"] = True

    page = st.navigation([st.Page(p.path, title=p.title, icon=p.icon, default=p.default)
                          for p in PAGES])
    if not names:
        with st.sidebar:
            st.warning("No results yet. Run `aee build-default` (or `python -m pipeline run --dataset demo`) first.")
    page.run()


if __name__ == "__main__":  # Streamlit runs its main script as __main__
    main()
