"""Conflicting evidence: which sources the engines' answers side with on debate questions, and the
convincingness probe (which of two conflicting paragraphs a model follows, and what moves it).

Everything shown is computed by `pipeline.conflict` (side tables, probe results on disk) and loaded
through `dashboard.conflict_view`; this page only chooses and displays."""

from __future__ import annotations

import streamlit as st

from dashboard import conflict_view, data, url_state
from dashboard.render import ensure_router, fmt_ci, fmt_value, md_escape, pick_dataset
from pipeline.conflict import sides
from pipeline.conflict.perturb import PERTURBATIONS

ensure_router()
st.title("Conflicting evidence")
st.caption("On debate questions sources disagree. Which side do the answers take, and which sources do they "
           "follow? And, for any model, which of two conflicting paragraphs does it find convincing?")



PAGE = "conflict"
TABS = ["Sources the answers side with", "Convincingness probe"]
BY = ["source type", "domain"]


def _switch_to(name: str) -> None:
    st.session_state["cf_dataset"] = name
    st.session_state["shared_dataset"] = name


def _judges_with_sides(dataset: str, judges: list[str], shown: str | None) -> list[str]:
    """The dataset's other judges whose labels give some listed source a side (the default judge first)."""
    out = []
    ordered = sorted(judges, key=lambda j: j != data.default_judge(dataset))
    for other in ordered:
        if other == shown:
            continue
        if sides.coverage(conflict_view.side_rows(dataset, other))["with_side"] > 0:
            out.append(other)
    return out


def _no_side_reason(judge: str, cov: dict) -> str:
    answers = f"{cov['answers']} debate answer{'s' if cov['answers'] != 1 else ''}"
    first = f"None of the {cov['sources']} sources listed by the {answers} has a source-stance label with a side"
    if (judge or "").split(":")[0] == "offline":
        return (f"{first} under the {judge} judge: it labels stance from word cues and says unknown when they are "
                f"unclear, as it did for {'all' if cov['labelled'] == 0 else 'the rest'} of these sources. An LLM judge "
                "(`openai`) labels stance more often, and recorded data can carry `labels.sources[].stance`.")
    return (f"{first} under the {judge} judge: it does not label source stance. Judges that do: `offline` (word cues; "
            "it says unknown when unsure, which is often) and `openai`; recorded data can carry `labels.sources[].stance`.")


def _show_sides(dataset: str, judge: str, by: str, wanted: dict, state: dict) -> None:
    rows = conflict_view.side_rows(dataset, judge)
    cov = sides.coverage(rows)
    if note := data.records_note(dataset, judge):
        st.caption(note)  # escaped where it is written (dashboard/answer_store.py)
    st.caption(md_escape(
        f"{cov['answers']} debate answers list {cov['sources']} sources; {cov['labelled']} have a known stance and "
        f"{cov['with_side']} take a side. {cov['answers_with_side']} answers lean one way; their sources with a side "
        f"are counted below (judge {judge})."))
    summary = sides.side_summary(rows, "source_type" if by == "source type" else "domain")
    if summary.empty:
        st.info("No answer that leans one way lists a source with a side.")
        return
    if by == "domain":
        top = str(wanted.get(url_state.TOP, ""))
        if top.isdigit() and 1 <= int(top) <= 200:
            st.session_state["cf_top"] = int(top)
        st.session_state.setdefault("cf_top", 15)
        keep = int(st.number_input("Domains shown per engine (most sided-with first)", 1, 200, key="cf_top"))
        state[url_state.TOP] = str(keep)
        summary = summary.groupby("engine", sort=True).head(keep)
    st.plotly_chart(conflict_view.sides_figure(summary, by), key="cf_sides_chart")
    table = summary.assign(share=lambda f: (f["share"] * 100).round(1),
                           interval=[fmt_ci(lo * 100, hi * 100, 1) for lo, hi in zip(summary["ci_low"], summary["ci_high"])])
    st.dataframe(table[["engine", "group", "sources_with_side", "on_answer_side", "share", "interval", "cited",
                        "followed", "followed_of"]].rename(columns={
                            "group": by, "sources_with_side": "sources with a side", "on_answer_side": "on the answer's side",
                            "share": "share (%)", "interval": "95% interval (%)", "followed_of": "cited with a side"}),
                 hide_index=True, width="stretch", key="cf_sides_table")
    st.caption("A source is on the answer's side when its stance matches the side most of the answer's statements "
               "take; 'followed' counts sources whose citing statements take their side. Stances come from the "
               "judge's labels, which can be wrong: check them in the Answer inspector.")


# What the page shows lives in its address: tab, dataset, judge, grouping, probe run and question.
wanted = url_state.incoming(PAGE)
url_state.seed("cf_tab", TABS, wanted.get(url_state.TAB), fallback=TABS[0])
tab_sides, tab_probe = st.tabs(TABS, key="cf_tab", on_change="rerun")
state: dict = {url_state.TAB: st.session_state.get("cf_tab", TABS[0])}

if tab_sides.open is not False:  # only the open tab is drawn (the others cost a rerun to open)
    with tab_sides:
        names = data.datasets()
        if not names:
            st.info("No results yet. Run the pipeline with a judge that labels source stance, for example "
                    "`aee run --dataset demo --judge offline`.")
        else:
            c1, c2, c3 = st.columns([2, 2, 1.4])
            dataset = pick_dataset("cf_dataset", where=c1,  # opens on a dataset with debate answers to show
                                   prefer=lambda n: "debate" in data.query_types_present(n)) or names[0]
            judges = data.judges(dataset)
            url_state.seed("cf_judge", judges, wanted.get(url_state.JUDGE), fallback=data.default_judge(dataset))
            judge = c2.selectbox("Judge", judges, key="cf_judge") if judges else None
            url_state.seed("cf_by", BY, wanted.get(url_state.BY))
            by = c3.radio("Group by", BY, horizontal=True, key="cf_by")
            state.update({url_state.DATASET: dataset, url_state.JUDGE: judge, url_state.BY: by})
            rows = conflict_view.side_rows(dataset, judge) if judge else None
            cov = sides.coverage(rows) if rows is not None else None
            if rows is None or cov is None or cov["answers"] == 0:
                st.info(f"{md_escape(data.dataset_label(dataset))} has no scored debate answers: sides are measured on "
                        "debate questions only.", icon=":material/info:")
                for other in [n for n in names if n != dataset and "debate" in data.query_types_present(n)][:3]:
                    st.button(f"Show {md_escape(data.dataset_label(other))} instead", key=f"cf_switch_{other}",
                              on_click=_switch_to, args=(other,), icon=":material/swap_horiz:")
            elif cov["with_side"] == 0:
                # the same answers may carry sides under another judge (the teaching corpus's recorded labels
                # do): show those at once, saying so, rather than an empty page behind a button
                others = _judges_with_sides(dataset, judges, judge)
                st.info(_no_side_reason(str(judge), cov) + (f" Shown below: the {others[0]} judge's labels of the same "
                                                            "answers, which give sources a side." if others else
                                                            " Re-run the dataset with one of them."), icon=":material/info:")
                if others:
                    _show_sides(dataset, others[0], by, wanted, state)
            else:
                _show_sides(dataset, str(judge), by, wanted, state)

if tab_probe.open is not False:  # only the open tab is drawn (the others cost a rerun to open)
    with tab_probe:
        runs = conflict_view.probe_runs()
        if not runs:
            st.info("**Nothing to show yet: this tab needs a language model.** The probe gives a model two paragraphs "
                    "that answer a yes/no question in opposite ways and asks it to answer; the win-rates and effects shown "
                    "here come from its replies. The offline judge cannot play that part (it does not answer questions), "
                    "so a run needs an OpenAI-compatible endpoint: a hosted model with its key "
                    "(`AEE_OPENAI_API_KEY`), or a model served on this machine (Ollama, llama.cpp, vLLM). Runs are saved "
                    "and appear here on the next page load.", icon=":material/info:")
            st.code("aee probe conflict --model gpt-4o-mini --perturb all --dry-run   # how many calls, and the cost\n"
                    "aee probe conflict --model gpt-4o-mini --perturb all             # needs AEE_OPENAI_API_KEY\n"
                    "aee probe conflict --model llama3 --base-url http://localhost:11434/v1 --perturb all   # a local model",
                    language="bash")
            st.caption("Without `--data` it runs on the bundled illustrative question set (data/conflict/illustrative.jsonl), "
                       "written to show the mechanics, not to measure a model.")
        else:
            url_state.seed("cf_run", runs, wanted.get(url_state.RUN))
            folder = st.selectbox("Probe run", runs, format_func=conflict_view.run_label, key="cf_run")
            state[url_state.RUN] = str(folder)
            run = conflict_view.load_probe(folder)
            info = run["summary"]
            meta = info.get("data", {})
            if meta.get("illustrative"):
                st.warning("This run used the bundled illustrative question set, written to show how the probe works. "
                           "Its numbers describe that small made-up set, not the model in general.")
            st.caption(md_escape(
                f"Model {info.get('model')} at {info.get('base_url')}; prompt {info.get('prompt')}; data {meta.get('path')} "
                f"({meta.get('questions')} questions, sha256 {str(meta.get('sha256', ''))[:12]}); {info.get('calls')} calls, "
                f"{info.get('readable')} readable answers ({info.get('read_from_logprobs')} from log-probabilities), "
                f"{info.get('failed')} failed; created {info.get('created')}."))
            bias = info.get("order_bias", {})
            m1, m2, m3 = st.columns(3)
            m1.metric("First passage's side taken", f"{fmt_value((bias.get('first_share') or 0) * 100, 1)}%"
                      if bias.get("first_share") is not None else "not measurable",
                      help="Share of readable answers (unperturbed pairs) that take the side of the passage shown first; 50% = no order bias.")
            m1.caption(f"95% interval {fmt_ci(*(None if v is None else v * 100 for v in bias.get('first_ci', [None, None])), 1)}")
            m2.metric("'Yes' answers", f"{fmt_value((bias.get('yes_share') or 0) * 100, 1)}%" if bias.get("yes_share") is not None
                      else "not measurable", help="Every pair has one yes and one no paragraph, so 50% = no answer bias.")
            m2.caption(f"95% interval {fmt_ci(*(None if v is None else v * 100 for v in bias.get('yes_ci', [None, None])), 1)}")
            m3.metric("Questions asked", f"{info.get('calls', 0):,}")
            m3.caption(f"{info.get('unreadable', 0)} unreadable, {info.get('failed', 0)} failed")

            effects = run["effects"]
            st.subheader("What moves the win-rate")
            if effects.empty:
                st.info("This run asked no perturbation. Add `--perturb all` to see what changes the model's choice.")
            else:
                st.caption(md_escape(f"Edited side: the {info.get('perturb_stance', 'yes')} paragraphs. Each perturbation is compared "
                                     "with the control (an irrelevant sentence appended), the control with the original."))
                st.plotly_chart(conflict_view.effects_figure(effects), key="cf_effects_chart")
                shown = effects.assign(**{
                    "effect (points)": (effects["effect"].astype(float) * 100).round(1),
                    "95% interval": [fmt_ci(lo * 100, hi * 100, 1) if lo == lo and lo is not None else "no interval"
                                     for lo, hi in zip(effects["ci_low"], effects["ci_high"])],
                    "what it does": [PERTURBATIONS[p].description if p in PERTURBATIONS else "" for p in effects["perturbation"]],
                })
                st.dataframe(shown[["perturbation", "baseline", "paragraphs", "effect (points)", "95% interval", "what it does"]],
                             hide_index=True, width="stretch", key="cf_effects_table")

            paragraphs = run["paragraphs"]
            st.subheader("Win-rate per paragraph")
            if paragraphs.empty:
                st.info("No readable answers in this run.")
            else:
                p1, p2 = st.columns([1, 2])
                variants = list(dict.fromkeys(paragraphs["variant"]))
                url_state.seed("cf_variant", variants, wanted.get(url_state.VARIANT))
                variant = p1.selectbox("Variant", variants, key="cf_variant")
                questions = paragraphs[["question_id", "question"]].drop_duplicates()
                url_state.seed("cf_question", list(questions["question_id"]), wanted.get(url_state.QUESTION))
                qid = p2.selectbox("Question", list(questions["question_id"]), key="cf_question",
                                   format_func=lambda q: str(questions.set_index("question_id").loc[q, "question"])[:120])
                state.update({url_state.VARIANT: str(variant), url_state.QUESTION: str(qid)})
                part = paragraphs[(paragraphs["variant"] == variant) & (paragraphs["question_id"] == qid)]
                st.plotly_chart(conflict_view.winrate_figure(part), key="cf_winrate_chart")
                table = part.assign(**{"win-rate (%)": (part["win_rate"].astype(float) * 100).round(1),
                                       "95% interval": [fmt_ci(lo * 100, hi * 100, 1) for lo, hi in zip(part["ci_low"], part["ci_high"])],
                                       "edited": part["perturbed"].map({True: "yes", False: "no"})})
                st.dataframe(table[["paragraph_id", "stance", "win-rate (%)", "95% interval", "wins", "comparisons", "unreadable",
                                    "edited", "url", "text"]], hide_index=True, width="stretch", key="cf_winrate_table")

url_state.publish(PAGE, state)
