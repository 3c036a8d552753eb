"""What the Judges and Scorecard pages show of the judge audits: agreement between the judge and the
people who labelled a sample, and the prediction-powered columns of the scorecard. The numbers come
from `pipeline.audit` (through `dashboard.audit_data`); this module lays them out as text a
researcher can quote and a class can read."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from dashboard import audit_data, audit_publish, charts, data
from dashboard.metric_text import NA, fmt_metric, na
from dashboard.render import md_escape, md_with_code, url_choice, url_forget, url_remember
from dashboard.url_state import page_link
from pipeline.audit.humans import MAJORITY
from pipeline.audit.ppi import PPI_METRICS
from pipeline.audit.ppi_cells import ESTIMANDS, KIND_WORDS
from pipeline.judges.carried import AUDIT_JUDGE
from pipeline.metrics import METRICS

FIELD_TITLES = {"support": "support", "relevant": "relevance", "stance": "stance"}
LABEL_WORDS = {"cant_tell": "can't tell"}  # stored label codes as a person reads them
HUMAN_JUDGE = "human"  # the judge that is the labels the data carries (ExpertQA's experts)


def stat_text(stat: dict[str, Any] | None, reason: str = "not measurable here") -> str:
    """0.712 [0.645, 0.790], or n/a with why."""
    if not stat or stat.get("value") is None:
        return f"{NA}: {reason}"
    low, high = stat.get("low"), stat.get("high")
    interval = f" [{low:.3f}, {high:.3f}]" if low is not None and high is not None else " (too few labelled for an interval)"
    return f"{stat['value']:.3f}{interval}"


def _table(frame: pd.DataFrame) -> None:
    shown = frame.map(lambda v: md_escape(v) if isinstance(v, str) else v)
    shown.columns = [md_escape(c) for c in frame.columns]
    st.table(shown, hide_index=True)


def judges_audit_section() -> None:
    """The Judges page's section on human audits: every dataset with a sample."""
    st.subheader("Checked by people: audits of the judge")
    with_samples = [d for d in data.datasets() if audit_data.samples(d)]
    if not with_samples:
        st.info("Nobody has audited a judge here yet. Draw a sample and label it on the Audit the judge page, or "
                "from the command line:", icon=":material/info:")
        st.code("aee audit sample --dataset demo --judge offline --n 100 --out sample.csv\n"
                "aee audit import --dataset demo sample.csv --annotator \"Your name\"", language="bash")
        return
    cols = st.columns([1, 2.4, 0.9])  # the sample box widest: its id must read whole at 1280 px
    url_choice("dataset", "judges_audit_dataset", with_samples)  # a link names the audited dataset
    dataset = cols[0].selectbox("Dataset audited", with_samples, format_func=data.dataset_label, key="judges_audit_dataset")
    url_remember("dataset", dataset)
    metas = audit_data.samples(dataset)
    ids = [str(m["sample_id"]) for m in metas]
    # the box names the sample by id and size only (the full description is cut at 1280 px); the line below says the rest
    sample_id = cols[1].selectbox("Sample", ids, format_func=lambda i: audit_data.sample_label(
        next(m for m in metas if m["sample_id"] == i), short=True), key="judges_audit_sample")
    s = audit_data.sample(sample_id)
    st.caption(f"Sample {md_escape(sample_id)}: {md_escape(audit_data.sample_what(s.meta))}, judge "
               f"{md_escape(s.meta.get('judge', '?'))}.")
    fields = (["support", "relevant"] if s.meta.get("relevance") else ["support"]) if s.unit == "pair" else ["relevant", "stance"]
    field = str(cols[2].selectbox("Label", fields, format_func=lambda f: FIELD_TITLES.get(f, f), key="judges_audit_field"))
    experts = audit_data.has_experts(s) and st.toggle(
        "Count ExpertQA's experts as one more person", value=False, key="judges_audit_experts",
        help="The dataset carries expert support labels for these pairs (the `human` judge). Off by default: with "
             "one person and the experts, the majority of two is a tie wherever they differ.")
    result = audit_data.agreement(s, field, with_experts=bool(experts))
    judge = s.meta["judge"]
    if not result["annotators"]:
        st.info("Nobody has labelled this sample yet.", icon=":material/info:")
        return
    st.caption("Each item counts with its sampling weight, so these figures describe all the judge's labels, not only "
               "the sample (rare labels were drawn more often on purpose). 95% intervals come from redrawing the "
               f"labelled {_cluster_words(s)} within their strata (bootstrap). \"Can't tell\" answers and the judge's "
               "\"unknown\" are left out and counted.")
    rows = []
    for v in result["versus_judge"]:
        who = "majority of the people" if v["annotator"] == MAJORITY else v["annotator"]
        rows.append({"person": who, "items compared": str(v["n_items"]),
                     "balanced accuracy": stat_text(v.get("balanced_accuracy"), v.get("reason") or "no item"),
                     "AUC of the judge's score": stat_text(v.get("auc"), v.get("auc_reason") or "not measurable here"),
                     "Cohen's kappa": stat_text(v.get("kappa"), v.get("reason") or "no item"),
                     "left out": f"{v['cant_tell']} can't tell, {v['judge_unknown']} judge unknown"})
    st.markdown(f"**Judge {md_escape(judge)} against each person**")
    _table(pd.DataFrame(rows))
    chosen = next((v for v in result["versus_judge"] if v["annotator"] == MAJORITY), result["versus_judge"][0])
    conf = chosen.get("confusion")
    if conf:
        left, right = st.columns([1, 1.3])
        who = "the people's majority" if chosen["annotator"] == MAJORITY else chosen["annotator"]
        left.markdown("*Items compared*")
        left.table(charts.confusion_table(conf["rows"], conf["cols"], conf["counts"], row_title=f"judge {judge}",
                                          col_title=who))
        shares = pd.DataFrame([
            {"judge said": r, **{f"people: {c}": _share(conf, i, j) for j, c in enumerate(conf["cols"])}}
            for i, r in enumerate(conf["rows"])])
        right.markdown("**Share of all items (weighted), with 95% intervals**")
        right.table(shares, hide_index=True)
    alpha = result["alpha"]
    st.markdown("**The people among themselves**")
    if alpha.get("alpha"):
        st.markdown(f"Krippendorff's α = {stat_text(alpha['alpha'])} over {alpha['n_items']} items labelled by two or more "
                    f"people ({alpha['annotators']} people). 1 means they always agree, 0 no better than chance.")
    else:
        st.caption(f"Krippendorff's α: {NA}: {md_escape(alpha.get('reason', ''))}.")
    if result["pairs"]:
        _table(pd.DataFrame([{"people": f"{p['a']} and {p['b']}", "items both labelled": str(p["n_items"]),
                              "same label": f"{p['agreement']:.0%}" if p["agreement"] is not None else NA,
                              "Cohen's kappa": f"{p['kappa']:.3f}" if p["kappa"] is not None else NA}
                             for p in result["pairs"]]))
    # the disagreements are counted on the items the chosen row above compared (the majority's, or the one person's)
    _disagreements(result["disagreements"], s, judge, field, chosen.get("n_items"))
    st.markdown("**The people as a judge**")
    audit_publish.publish_panel(dataset, f"judges_audit_{sample_id}", judge)


def _cluster_words(s) -> str:
    """What a sample's bootstrap redraws: whole statements on a pair sample, whole answers on a statement
    sample or a pair sample asking relevance too (its items are clustered by answer)."""
    return "answers" if s.unit == "statement" or s.meta.get("relevance") else "statements"


def _share(conf: dict, i: int, j: int) -> str:
    value = conf["shares"][i][j]
    low, high = conf["low"][i][j], conf["high"][i][j]
    if low != low or high != high:
        return f"{value:.1%}"
    return f"{value:.1%} [{low:.1%}, {high:.1%}]"


def _disagreements(frame: pd.DataFrame, s, judge: str, field: str, compared: int | None = None) -> None:
    reference = "the people's majority" if len(frame) and frame["labels"].map(len).max() > 1 else "the person"
    split = " (items where the people split evenly have no majority and are not counted)" \
        if reference == "the people's majority" else ""
    of = f" of the {compared} items compared above" if compared else ""
    st.markdown(f"**Where the judge and {reference} disagree** ({len(frame)}{of}){split}")
    if frame.empty:
        st.caption("Nowhere: on every item both labelled, the judge and the people gave the same label.")
        return
    dataset = s.meta["dataset"]
    beside = AUDIT_JUDGE in data.judges(dataset) and AUDIT_JUDGE != judge
    view = pd.DataFrame({
        "item": frame["order"].astype(int) + 1,
        "open": [page_link("inspector", {"dataset": dataset, "judge": judge, "answer": a}) for a in frame["answer_id"]],
        "judge": frame["judge"], "people": frame["people"],
        "each person": frame["labels"].map(lambda d: "; ".join(f"{k}: {LABEL_WORDS.get(v, v)}" for k, v in d.items())),
        "engine": frame["engine"],
        "source": frame["source_index"].map(lambda v: "" if v is None or v != v else f"[{int(v)}]"),
        "statement": frame["statement"].str.slice(0, 200),
    })
    if beside:  # the answer under both: the judge's verdicts and the people's, item by item (Compare, two judges)
        view.insert(2, "both", [page_link("compare", {"view": "judges", "dataset": dataset, "judge": judge,
                                                      "judge_b": AUDIT_JUDGE, "answer": a}) for a in frame["answer_id"]])
    st.dataframe(view, hide_index=True, width="stretch", key=f"judges_audit_disagree_{s.sample_id}_{field}",
                 column_config={"open": st.column_config.LinkColumn("open", display_text="in the inspector",
                                                                    help="The answer in the Answer inspector"),
                                "both": st.column_config.LinkColumn(
                                    "judge and people", display_text="side by side",
                                    help=f"The answer in Compare: the judge's verdicts beside {AUDIT_JUDGE}'s, item by item "
                                         "(shown once the labels are published as that judge)"),
                                "statement": st.column_config.TextColumn(width="large")})


def _difference(value: float, metric: str) -> str:
    """A difference of two values of a metric: percentage points for a percent metric (an error of
    "-18.9%" reads as a relative change)."""
    text = f"{float(value):+.1f}"
    return f"{text} points" if METRICS[metric].unit == "percent" else text


# ---- the scorecard's prediction-powered columns ---------------------------------------------------


def _interval(row: dict, metric: str, key: str) -> str:
    value, low, high = row.get(key), row.get(f"{key}_low"), row.get(f"{key}_high")
    if value is None:
        return NA
    shown = fmt_metric(value, metric, 1)
    if low is None or high is None:
        return shown
    if row.get("labelled_units") == row.get("population_units") and abs(high - low) < 1e-9:
        return f"{shown} (exact: every unit labelled)"
    return f"{shown} [{fmt_metric(low, metric, 1)}, {fmt_metric(high, metric, 1)}]"


def verdict(row: dict) -> str:
    """What a row says in words: biased or not, and what more labels would buy."""
    if PPI_METRICS.get(row["metric"]) is None:
        return "no judge label enters this metric: nothing to correct"
    if row.get("ppi") is None:
        return row.get("reason") or "not computable"
    words = []
    if row.get("biased") is True:
        side = "above" if (row.get("bias") or 0) > 0 else "below"
        error = ""
        if row.get("bias_low") is not None and row.get("bias_high") is not None:
            error = (f" (judge only minus corrected, 95%: {_difference(row['bias_low'], row['metric'])} to "
                     f"{_difference(row['bias_high'], row['metric'])})")
        words.append(f"judge biased: its value lies {side} the corrected interval{error}")
    elif row.get("biased") is False:
        words.append("judge within the corrected interval")
    if row.get("more_to_halve"):
        words.append(f"about {row['more_to_halve']} more labelled items would halve the interval")
    if row.get("note"):
        words.append(str(row["note"]))
    return "; ".join(words)


def ppi_table(result: dict[str, Any], domain: str) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    """One row per metric of one domain (all engines, or an engine) that has a corrected value:
    judge-only, PPI [95%], human-only [95%], n and what it says; and the metrics left out, by reason."""
    rows: list[dict[str, str]] = []
    missing: dict[str, list[str]] = {}
    for r in (r for r in result["rows"] if r["domain"] == domain):
        metric = r["metric"]
        unit = PPI_METRICS.get(metric)
        if unit is not None and r.get("ppi") is None and r.get("human") is None:
            missing.setdefault(r.get("reason") or "not computable", []).append(METRICS[metric].label)
            continue
        rows.append({
            "metric": METRICS[metric].label,
            "judge only": (fmt_metric(r["judge_only"], metric, 1) if r["judge_only"] is not None
                           else na(r.get("judge_reason") or "")),
            "corrected (PPI) [95%]": _interval(r, metric, "ppi"),
            "people only [95%]": _interval(r, metric, "human"),
            "what the corrected value estimates": r.get("estimand") or "the same under any labels",
            "n labelled": (f"{r['labelled_units']} of {r['population_units']} "
                           f"{'statements' if unit == 'pair' and r.get('estimand') != ESTIMANDS['pair+relevance'] else 'answers'}"
                           if unit else "not needed"),
            "what it says": verdict(r),
        })
        if "experts_value" in r:  # told apart from the corrected value: the experts decide relevance there too
            rows[-1]["experts' own scorecard (their relevance too)"] = (
                fmt_metric(r["experts_value"], metric, 1) if r["experts_value"] is not None
                else na(r.get("experts_reason") or ""))
    return pd.DataFrame(rows), missing


# what "labelled completely" means for each kind of sample (ppi_cells.KIND_WORDS names the kinds)
COMPLETE_WORDS = {"pair": "a pair sample: every pair of a statement",
                  "pair+relevance": "a pair sample asking relevance too: whole answers, every statement's relevance "
                                    "and every pair's support",
                  "statement": "a statement sample: every statement of an answer"}


def _complete_words(result: dict[str, Any]) -> str:
    """The n definition for the kinds of sample behind these rows (every kind when none is named)."""
    kinds = [k for k in COMPLETE_WORDS if k in (result.get("estimands") or {})] or list(COMPLETE_WORDS)
    return "; ".join(COMPLETE_WORDS[k] for k in kinds)


def scorecard_ppi_section(dataset: str, judge: str, query_type: str, mode: str) -> None:
    """The Scorecard's prediction-powered columns (shown when an audit exists and asked for)."""
    st.subheader("Checked by people: corrected values")
    if judge == AUDIT_JUDGE:
        audited = sorted({str(m.get("judge")) for m in audit_data.samples(dataset)})
        st.caption(f"This judge is the people's own labels from the audit: only the audited items carry one, so most "
                   "values above are n/a with the share judged. The corrected values for every item are shown under "
                   f"the judge the audit checked ({md_escape(', '.join(audited)) or 'none'}): pick it above.")
        return
    from pipeline.audit.fitted_record import FITTED_JUDGE, audited_judge

    base_judge = audited_judge(dataset, judge, data.results_root())  # a fitted judge is corrected from its base's samples
    metas = [m for m in audit_data.samples(dataset) if m.get("judge") == base_judge]
    if judge == FITTED_JUDGE and base_judge != judge:
        st.caption(f"This judge was fitted to people's labels over {md_escape(base_judge)}'s signals: its corrected "
                   f"values use the same samples and labels as {md_escape(base_judge)}'s, the labelled answers predicted by "
                   "models that never saw them (the Audit page, Fit a judge, compares the two).")
    if not metas:
        st.caption(f"No audit of judge {md_escape(judge)} on this dataset yet. Label a sample of its decisions on the "
                   "Audit the judge page and this section corrects the scorecard with your labels "
                   "(prediction-powered inference) and says whether the judge is biased.")
        return
    if st.query_params.get("corrected") == "show" and st.session_state.get("_url_corrected") != "show":
        st.session_state["scorecard_ppi"] = True  # a link asks for the corrected values
    shown = st.toggle("Show the corrected values beside the judge's", key="scorecard_ppi",
                      help="Prediction-powered inference: the judge's labels on every item, corrected by the human "
                           "labels on the audited sample. Needs the `audit` extra (ppi-python).")
    if not shown:
        url_forget("corrected")
        return
    url_remember("corrected", "show")
    if mode != "strict":
        st.info("Corrected values are computed under the strict rules; switch Scoring rules to Strict.", icon=":material/info:")
        return
    human = "all"
    pair_sample = next((m for m in metas if m.get("unit") == "pair"), None)
    # the `human` judge is the experts' labels: correcting it with the same labels would measure nothing
    if (judge != HUMAN_JUDGE and pair_sample is not None
            and audit_data.has_experts(audit_data.sample(str(pair_sample["sample_id"])))):
        url_choice("whose", "scorecard_ppi_human", ["all", "experts"], "all")
        human = st.radio("Whose labels correct the judge", ["all", "experts"], horizontal=True, key="scorecard_ppi_human",
                         format_func={"all": "the audit's annotators", "experts": "ExpertQA's experts (support, relevance)"}.get)
        if human == "all":
            url_forget("whose")
        else:
            url_remember("whose", human)
    try:
        result = audit_data.ppi(dataset, judge, query_type, human)
    except ImportError as exc:
        st.warning(md_escape(str(exc)))
        return
    st.caption("Judge only: the scorecard above. Corrected (PPI): the judge's labels on every item plus the people's "
               "labels on the sample, which remove the judge's average error; valid whatever the judge's quality, and "
               "narrower than the people-only estimate when the judge is good. People only: the sample alone. "
               f"n: units labelled completely ({_complete_words(result)}) of all in the "
               f"population. Human labels: {md_escape(result['human_label'])}; samples: "
               + md_escape(", ".join(f"{u}: {sid}" for u, sid in result["samples"].items())) + ". What the corrected "
               "values estimate: " + "; ".join(f"from {md_escape(KIND_WORDS.get(u, u))}, {md_with_code(note)}" for u, note
                                               in (result.get("estimands") or {}).items()) + "."
               + (f" Experts' own scorecard: {md_with_code(result['experts_scorecard'])}."
                  if result.get("experts_scorecard") else ""))
    domains = ["all engines", *data.engines(dataset)]
    # the engine chosen here lives in the address (?ppi_engine=), so a copied link reopens its corrected values
    url_choice("ppi_engine", "scorecard_ppi_domain", domains, "all engines")
    domain = st.segmented_control("Engines", domains, key="scorecard_ppi_domain") or "all engines"
    if domain == "all engines":
        url_forget("ppi_engine")
    else:
        url_remember("ppi_engine", domain)
    table, missing = ppi_table(result, domain)
    biased = [r for r in result["rows"] if r.get("biased") and r["domain"] == domain]
    if biased:
        names = ", ".join(md_escape(METRICS[r["metric"]].label.lower()) for r in biased)
        people = max((result.get("people") or {}).get(str(r.get("sample_id")), 0) for r in biased)
        first = any(r.get("note") for r in biased)
        if (people < 2 and human != "experts") or first:  # the experts are many people, one per question
            # one person's labels, or strata pooled for a first estimate: a hint to label more, not yet a finding
            why = "; ".join(x for x in ("labels of one person only" if people < 2 else "",
                                        "a first estimate (some strata pooled)" if first else "") if x)
            st.info(f"The judge's own value falls outside the corrected 95% interval for {names}, but the correction "
                    f"rests on {why}: have more items labelled (and by a second person) before reading it as the "
                    "judge's bias.", icon=":material/info:")
        else:
            st.warning(f"The judge's own value falls outside the corrected 95% interval for {names}: read those rows "
                       "from the corrected column.", icon=":material/warning:")
    if not table.empty:
        _table(table)
    for reason, metrics in missing.items():
        # "yet" only where labels can still help: not for a cell n/a whatever anyone labels
        final = reason.startswith(("no debate question", "n/a as on the scorecard", "nothing here a person could label"))
        st.caption(f"Not corrected{'' if final else ' yet'}: {md_escape(', '.join(metrics))}: {md_with_code(reason)}.")
    export = pd.DataFrame(result["rows"]).drop(columns=["sample_id"], errors="ignore")
    st.download_button("Corrected values, every engine (CSV)", export.to_csv(index=False).encode("utf-8"),
                       f"scorecard_ppi_{dataset}_{judge}_{query_type}.csv", "text/csv", key="scorecard_ppi_csv",
                       on_click="ignore", icon=":material/download:")
