"""The dashboard's router: one explicit page list (`dashboard.pages_registry`), wide layout, and a
sidebar note saying which loaded datasets are illustrative.

`streamlit run app.py` in a checkout runs this through the thin `app.py` at the project's top;
`aee app` runs this file directly, which is how an installed wheel starts the dashboard.
"""

from __future__ import annotations

import streamlit as st

from dashboard import data
from dashboard.pages_registry import PAGES
from dashboard.render import md_escape


def main() -> None:
    """Configure the page, build the navigation from the registry and run the chosen page."""
    st.set_page_config(page_title="Answer-engine audit", page_icon=":material/fact_check:", layout="wide")

    # Shared state lives here only: the dataset the pages open with (pages update it when it changes).
    st.session_state.setdefault("shared_dataset", None)
    st.session_state["_router_ran"] = True

    page = st.navigation([st.Page(p.path, title=p.title, icon=p.icon, default=p.default)
                          for p in PAGES])
    with st.sidebar:
        illustrative = data.illustrative_datasets()
        if illustrative:
            names = ", ".join(f"**{md_escape(n)}**" for n in illustrative)
            st.info(f"Illustrative data: {names}. Invented engines and answers for teaching; "
                    "its numbers say nothing about any real product.", icon=":material/school:")
        if not data.datasets():
            st.warning("No results yet. Run `aee run --dataset demo` (or `python -m pipeline run --dataset demo`) first.")
    page.run()


if __name__ == "__main__":  # Streamlit runs its main script as __main__
    main()
