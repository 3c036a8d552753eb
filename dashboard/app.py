"""The dashboard's router: one explicit page list (`dashboard.pages_registry`), wide layout, a
local favicon, the dataset every page opens with, and a sidebar note when a page shows
illustrative data.

`streamlit run app.py` in a checkout runs this through the thin `app.py` at the project's top;
`aee app` runs this file directly, which is how an installed wheel starts the dashboard.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from dashboard import data
from dashboard.pages_registry import PAGES
from dashboard.render import md_escape

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
    # Only a URL that changed since the end of the previous run is a request (a link, the address
    # bar): a page that wrote its own choice into the URL must not have it read back here, or a
    # selectbox change, already in shared_dataset through its on_change callback, would be undone.
    if wanted in names and wanted != st.session_state.get("_router_url_dataset"):
        st.session_state["shared_dataset"] = wanted
    elif st.session_state.get("shared_dataset") not in names:
        st.session_state["shared_dataset"] = data.default_dataset(names)
    st.session_state["_router_ran"] = True

    pages = [(st.Page(p.path, title=p.title, icon=p.icon, default=p.default), p) for p in PAGES]
    page = st.navigation([p for p, _ in pages])
    info = next((i for p, i in pages if p.url_path == page.url_path), None)
    shared = st.session_state["shared_dataset"]
    with st.sidebar:
        for name, problem in data.broken_datasets().items():
            # a set that does not match what its run wrote is never shown, and never silently missing
            # (a dataset name is letters, digits, ".", "_" and "-": safe inside a code span as it is)
            st.error(f"Results of **{md_escape(name)}** are not shown: {md_escape(problem)}. "
                     f"Run `aee run --dataset {name}` again to rebuild them.", icon=":material/error:")
        if not names:
            st.warning("No results yet. Run `aee build-default` (or `aee run --dataset demo`) first.")
        elif info is not None and info.shows_dataset and shared and data.is_illustrative(shared):
            # Only beside a view of illustrative data: the pages' selectboxes update the shared dataset
            # in their on_change callbacks, which run before this script, so it names what is shown.
            st.info(f"**{md_escape(data.dataset_label(shared))}** is illustrative: invented engines and answers "
                    "for teaching; its numbers say nothing about any real product.", icon=":material/school:")
    try:
        page.run()
    finally:  # also after st.stop() and reruns: remember what the URL said when this run ended
        st.session_state["_router_url_dataset"] = st.query_params.get("dataset")


if __name__ == "__main__":  # Streamlit runs its main script as __main__
    main()
