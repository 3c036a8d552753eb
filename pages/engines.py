"""Engine vs engine: does engine A beat engine B over a whole dataset? `aee compare --engines A,B` on
a page: every metric's paired difference over the queries both engines answered, with its 95%
interval (queries and repeats resampled), Holm's adjustment over the metrics, and the verdict in
words. The numbers come from `pipeline.consistency` through dashboard/engine_pair.py."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import data, engine_pair, url_state
from dashboard.render import ensure_router, md_escape, pick_dataset_and_judge

PAGE = "engines"
ensure_router()
st.title("Engine vs engine")
st.caption("Whether one engine does better than another over a whole dataset, not one query at a time: each metric's "
           "difference on the queries both engines answered, with a 95% interval and Holm's adjustment over the "
           "metrics, said in words. The same numbers as `aee compare --engines A,B`.")

cols = st.columns([1.2, 1])
dataset, judge = pick_dataset_and_judge("pair", cols[0], cols[1], prefer=lambda n: len(data.engines(n)) >= 2)
engines, waves = engine_pair.engines_and_waves(dataset, judge)
if note := engine_pair.records_note(dataset, judge):
    st.caption(note)
if len(engines) < 2:
    st.info(f"{md_escape(data.dataset_label(dataset))} has one engine: choose a dataset with two or more.",
            icon=":material/info:")
    st.stop()
if data.is_illustrative(dataset):
    st.info("Illustrative teaching data: the engines and answers are invented.", icon=":material/school:")

wanted = url_state.incoming(PAGE)
url_state.seed("pair_a", engines, wanted.get(url_state.ENGINE))
e1, e2, e3 = st.columns([1, 1, 1])
a = e1.selectbox("Engine A", engines, key="pair_a")
others = [e for e in engines if e != a]
url_state.seed("pair_b", others, wanted.get(url_state.ENGINE_B))
b = e2.selectbox("Engine B", others, key="pair_b")
url_state.seed("pair_wave", waves, wanted.get(url_state.WAVE), fallback=waves[-1])
wave = e3.selectbox("Wave", waves, key="pair_wave", disabled=len(waves) < 2,
                    help="The audit compared (the latest by default); a dataset asked once has one.")
url_state.publish(PAGE, {url_state.DATASET: dataset, url_state.JUDGE: judge, url_state.ENGINE: a,
                         url_state.ENGINE_B: b, url_state.WAVE: wave if len(waves) > 1 else ""})

result = engine_pair.comparison(dataset, judge, a, b, wave)
st.markdown(f"**{md_escape(a)} vs {md_escape(b)}** on the {result['queries']} queries both answered"
            + (f" (wave {md_escape(wave)})" if len(waves) > 1 else "") + f", judge {md_escape(judge)}:")
real = [r for r in result["rows"] if r["real"]]
if real:  # one line per real difference, in the command's words, then what is within noise
    st.markdown("\n".join(f"- {md_escape(r['words'])}" for r in real))
    rest = len(result["rows"]) - len(real)
    st.markdown(f"The other {rest} of {len(result['rows'])} metrics are within noise (Holm-adjusted)." if rest else
                "Every metric differs.")
else:
    st.markdown(md_escape(result["summary"]))
rows = engine_pair.rows_view(result)
if rows:
    with st.container(key="cards_engine_pair"):  # on a phone: a card per metric (layout.css)
        st.table(pd.DataFrame(rows).map(md_escape), hide_index=True, width="stretch")
st.caption(md_escape(result["judge_summary"]) + ". " + md_escape(result["judge_note"] or
           "Where the audit has people's labels for a metric, its difference is corrected for the judge's measured "
           "error and the interval includes that estimate's error."))
st.caption(md_escape(f"Paired by query: {result.get('method') or 'paired t over the shared queries'}; a difference "
                     f"is called real when its Holm-adjusted p is below {engine_pair.ALPHA:g}."))
st.code(f"aee compare --dataset {dataset} --judge {judge} --engines \"{a},{b}\""
        + (f" --wave {wave}" if len(waves) > 1 else ""), language="bash")
