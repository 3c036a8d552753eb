"""The answer inspector's attribution panel: per statement, what AutoAIS and ALCE's NLI citation
recall and precision decided, and which citations precision marks irrelevant.

The decisions come from the pipeline (`pipeline.metrics.attribution.statement_attribution`, the same
function the metrics use); this module only lays them out. Answer text is shown in a dataframe
cell, which renders it as plain text.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from pipeline.metrics.attribution import StatementAttribution, statement_attribution
from pipeline.records import AnnotatedAnswer

COLUMNS = ("#", "statement", "cites", "AutoAIS: a citation supports it alone",
           "NLI recall: its citations together support it", "irrelevant citations (NLI precision)")
WORDS = {True: "yes", False: "no", None: "not checked"}  # None: no label decides it


def _sources(indexes: tuple[int, ...]) -> str:
    return " ".join(f"[{i}]" for i in indexes) if indexes else "–"


def attribution_rows(annotated: AnnotatedAnswer) -> pd.DataFrame:
    """One row per statement, in words (never None or nan): the panel's table."""
    by_index = {s.index: s for s in annotated.statements}
    rows = []
    for row in statement_attribution(annotated):
        statement = by_index[row.statement_index]
        rows.append(_row(row, statement.text, statement.citations))
    return pd.DataFrame(rows, columns=list(COLUMNS))


def _row(row: StatementAttribution, text: str, cited: tuple[int, ...]) -> dict:
    number = row.statement_index + 1
    if not row.relevant:
        return dict(zip(COLUMNS, (number, text, _sources(cited), "filler: not scored", "filler: not scored", "–")))
    autoais = WORDS[row.autoais] if cited else "no citation"
    recall = WORDS[row.citations_support] if cited else "no (cites nothing)"
    irrelevant = _sources(row.irrelevant_citations)
    if row.undecided_citations:
        irrelevant += f" (not checked: {_sources(row.undecided_citations)})"
    return dict(zip(COLUMNS, (number, text, _sources(cited), autoais, recall, irrelevant)))


def show_attribution(annotated: AnnotatedAnswer, *, key: str = "attribution_panel") -> None:
    """The panel, in a collapsed section under the answer."""
    with st.expander("Attribution per statement (AutoAIS, NLI citation recall and precision)"):
        table = attribution_rows(annotated)
        if table.empty:
            st.caption("This answer has no statements.")
            return
        st.dataframe(table, hide_index=True, width="stretch", key=key)
        st.caption("AutoAIS asks whether one of a statement's citations backs it up on its own; NLI citation recall "
                   "whether its citations read together do. A citation is irrelevant when the citations together do "
                   "not back the statement, or when it does not back it alone while the other citations still do. "
                   "\"not checked\": no label decides it (a cited source without text, or a judge that gave no "
                   "usable label); it is left out of the metrics, never counted as unsupported. The Methodology page "
                   "defines each metric.")
