"""The fitted judge as a judge of the dataset (`aee audit fit`, the Audit page's "Fit a judge").

`pipeline.audit.fitted_judge` holds the statistics (covariates, answer folds, guard rails, the
stratified cross-PPI); this module turns an audit's labels into a judge:

1. every (statement, source) pair the audited judge labelled gets its covariates (`pair_table`):
   the judge's own signals (its label, score, p_full and support features when its raw JSON keeps
   them), the engine, the kind of source (`source_kind`), statement and source length, figures,
   whether the statement cites the source;
2. the people's support labels on the sample's pairs (full = 1, partial or none = 0: the strict
   rules count only full support; "can't tell" is no label) fit K logistic models, the answers split
   into K folds so that no answer's labels predict it (`fit`); each fold's L2 penalty is chosen on
   its own training labels by held-out log loss (`fitted_judge.choose_c`), and the columns include
   every engine x judge label the labels hold (the sample's strata), so the probabilities can match
   each stratum's rate;
3. every pair gets the fitted judge's label: "full" when its probability is at least 0.5, else
   "none". A pair of a labelled answer is predicted by the model that never saw its fold; any other
   pair by the mean of the K models. A pair of an engine or a kind of source without a single label
   keeps the audited judge's label and says so in its provenance: the fit is not extrapolated there;
4. `pipeline.audit.cli.write_fitted` writes the judge `fitted` through the runner, like `human:audit`: the same tables
   as every judge, so the Scorecard, the Inspector, Compare and Over time read it by name. Relevance,
   stance and confidence are the audited judge's (the fit learns support only), said in each
   verdict's `raw`; every support verdict's `raw` holds "fitted to N labels of <people> on <sample>".

The corrected values through it are the scorecard's prediction-powered rows with this judge's
probabilities as the prediction (each unit's expected value under them, `pipeline.audit.ppi_soft`:
its 0/1 labels widened the intervals on ExpertQA, bench row r), from the same sample and labels
(`pipeline.audit.scorecard.ppi_scorecard`, which takes a fitted judge's sample from the judge it was
fitted over): the design's strata, whole clusters and a
pair sample's relevance items are honoured by the same code as for any judge, and the labelled units'
predictions are out of fold, which is what cross-prediction-powered inference asks.
The fit's coefficients are kept in the run's manifest, so a fitted judge can be applied to another
dataset (`apply_to`), which every label then says.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence
from urllib.parse import urlparse

import numpy as np
import pandas as pd

from pipeline.audit import CANT_TELL, definite
from pipeline.audit.fitted_judge import (
    DEFAULT_FOLDS,
    FITTED_JUDGE_ID,
    FITTED_JUDGE_VERSION,
    FitCheck,
    answer_folds,
    check_fit,
    choose_c,
    dataset_note,
    fit_provenance,
    kappa,
    pair_covariates,
)
from pipeline.audit.fitted_record import FITTED_JUDGE, audited_judge, fitted_record  # noqa: F401 (re-exported)
from pipeline.records import SUPPORT_LABELS, AnnotatedAnswer, Source, Verdict, unreadable_code

FITTED_VERSION = f"{FITTED_JUDGE_ID}-v{FITTED_JUDGE_VERSION}"
THRESHOLD = 0.5
SOURCE_KINDS = ("encyclopedia", "government or university", "pdf", "news", "snippet", "other web page")
_NEWS = re.compile(r"(news|times|post|guardian|bbc|cnn|reuters|forbes|journal)", re.I)
NUMERIC = ("has_p_full", "p_full", "judge_cos_pair", "judge_soft_win", "judge_missing_specific", "log_statement_words",
           "log_source_words", "figures", "cited", "base_score", "base_full", "base_partial")


def source_kind(source: Source) -> str:
    """A coarse kind of source from what the toolkit knows of it (its address and where its text came
    from); the people may trust an encyclopedia differently from a news page."""
    if source.text_origin == "snippet":
        return "snippet"
    url = (source.url or "").lower()
    host = urlparse(url).netloc
    if "wikipedia." in host or "britannica." in host:
        return "encyclopedia"
    if url.split("?")[0].endswith(".pdf"):
        return "pdf"
    if host.endswith(".gov") or host.endswith(".edu") or ".gov." in host or ".ac." in host or host.endswith(".int"):
        return "government or university"
    if _NEWS.search(host):
        return "news"
    return "other web page"


def _judge_raw(v: Verdict) -> tuple[float | None, dict[str, Any]]:
    try:
        raw = json.loads(v.raw) if v.raw and v.raw.lstrip().startswith("{") else {}
    except ValueError:
        raw = {}
    p = raw.get("p_full")
    return (float(p) if isinstance(p, (int, float)) else None), dict(raw.get("features") or {})


def reasons_text(check: FitCheck) -> str:
    """The guard rails' reasons as sentences (each one capitalised)."""
    return " ".join(r[:1].upper() + r[1:] for r in check.reasons)


def pair_table(answers: Mapping[str, AnnotatedAnswer]) -> pd.DataFrame:
    """One row per (statement, source with text) pair the judge gave a decided support label."""
    rows = []
    for aid in sorted(answers):
        a = answers[aid]
        statements = {s.index: s for s in a.statements}
        sources = {s.index: s for s in a.answer.sources}
        for v in a.verdicts:
            if v.kind != "support" or v.source_index is None or v.label not in SUPPORT_LABELS:
                continue
            st, src = statements.get(v.statement_index), sources.get(v.source_index)  # type: ignore[arg-type]
            if st is None or src is None or unreadable_code(src):
                continue
            p_full, feats = _judge_raw(v)
            row: dict[str, Any] = dict(pair_covariates(statement=st.text, source_text=src.text,
                                                       cited=v.source_index in st.citations, p_full=p_full, features=feats))
            row |= {"answer_id": aid, "engine": a.answer.engine, "statement_index": st.index,
                    "source_index": src.index, "kind": source_kind(src), "base_label": v.label,
                    "base_score": float(v.score if v.score is not None else (1.0 if v.label == "full" else 0.0)),
                    "base_full": 1.0 if v.label == "full" else 0.0, "base_partial": 1.0 if v.label == "partial" else 0.0}
            rows.append(row)
    return pd.DataFrame(rows)


@dataclass
class Fit:
    """K logistic models over the same columns, and what they were fitted on."""

    dataset: str
    base_judge: str
    sample_id: str
    people: str
    n_labels: int
    columns: list[str]
    engines: list[str]  # engines with labels (the others keep the base judge's labels)
    kinds: list[str]  # kinds of source with labels
    mean: list[float]
    scale: list[float]
    coef: list[list[float]]  # per fold
    intercept: list[float]
    folds: dict[str, int]  # answer id -> fold, for the labelled answers
    kappa_fitted: float | None
    kappa_judge: float | None
    check: FitCheck = field(default_factory=lambda: FitCheck(True))
    cited: list[float] = field(default_factory=lambda: [0.0, 1.0])  # the `cited` values the labels hold
    c_values: list[float] = field(default_factory=list)  # each fold model's L2 strength (`choose_c`)

    @property
    def provenance(self) -> str:
        return fit_provenance(self.n_labels, self.people, self.sample_id, self.dataset)

    def record(self) -> dict[str, Any]:
        """JSON-ready: what the manifest keeps (the models included, so the fit can be applied elsewhere)."""
        out = {k: getattr(self, k) for k in ("dataset", "base_judge", "sample_id", "people", "n_labels", "columns",
                                             "engines", "kinds", "mean", "scale", "coef", "intercept", "folds",
                                             "kappa_fitted", "kappa_judge", "cited", "c_values")}
        return out | {"version": FITTED_VERSION, "provenance": self.provenance, "notes": list(self.check.notes)}

    @classmethod
    def from_record(cls, r: Mapping[str, Any]) -> "Fit":
        keys = ("dataset", "base_judge", "sample_id", "people", "n_labels", "columns", "engines", "kinds", "mean",
                "scale", "coef", "intercept", "folds", "kappa_fitted", "kappa_judge")
        return cls(**{k: r[k] for k in keys}, check=FitCheck(True, [], list(r.get("notes") or [])),
                   cited=[float(v) for v in r.get("cited", [0.0, 1.0])], c_values=[float(v) for v in r.get("c_values", [])])

    def design(self, table: pd.DataFrame) -> np.ndarray:
        cols = []
        for c in self.columns:
            if c.startswith("engine="):
                cols.append((table["engine"] == c[7:]).to_numpy(float))
            elif c.startswith("kind="):
                cols.append((table["kind"] == c[5:]).to_numpy(float))
            elif c.startswith("stratum="):
                engine, label = c[8:].rsplit("|", 1)
                cols.append(((table["engine"] == engine) & (table["base_label"] == label)).to_numpy(float))
            else:
                cols.append(table[c].to_numpy(float))
        x = np.column_stack(cols) if cols else np.zeros((len(table), 0))
        return (x - np.asarray(self.mean)) / np.asarray(self.scale)

    def probabilities(self, table: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """(probability of full support, fold whose model gave it: -1 for the mean of all K models)."""
        x = self.design(table)
        logits = x @ np.asarray(self.coef).T + np.asarray(self.intercept)
        per_fold = 1.0 / (1.0 + np.exp(-logits))
        fold = np.array([self.folds.get(str(a), -1) for a in table["answer_id"]]) if len(table) else np.zeros(0, int)
        own = np.take_along_axis(per_fold, np.clip(fold, 0, None)[:, None], axis=1)[:, 0] if len(table) else np.zeros(0)
        return np.where(fold >= 0, own, per_fold.mean(axis=1) if len(table) else np.zeros(0)), fold


def support_targets(sample_items: pd.DataFrame, labels: Mapping[str, Mapping[str, Any]]) -> dict[tuple[str, int, int], float]:
    """(answer, statement, source) -> 1.0 for full support, 0.0 for partial or none, from the items
    of a pair sample that ask about support; "can't tell" and unlabelled items are left out."""
    out = {}
    for r in sample_items.to_dict("records"):
        if int(r.get("source_index", -1)) < 0 or r.get("asks", "support") == "relevant":
            continue
        got = (labels.get(str(r["item_id"])) or {}).get("support")
        if definite(got) and got != CANT_TELL:
            out[(str(r["answer_id"]), int(r["statement_index"]), int(r["source_index"]))] = 1.0 if got == "full" else 0.0
    return out


def fit(table: pd.DataFrame, targets: Mapping[tuple[str, int, int], float], strata: Mapping[tuple[str, int], str], *,
        dataset: str, base_judge: str, sample_id: str, people: str, k: int = DEFAULT_FOLDS, seed: int = 0,
        c_value: float | None = None) -> Fit:
    """Cross-fitted logistic models from the labelled pairs (see the module doc). `strata`: (answer
    id, statement index) -> the sample stratum of the statement's cluster (the guard rail wants two
    labelled answers in each). Each fold's L2 strength is chosen on that fold's training labels
    (`fitted_judge.choose_c`) unless `c_value` fixes it.
    A fit that the guard rails refuse is returned with `check.ok` False and no models."""
    from sklearn.linear_model import LogisticRegression

    keys = list(zip(table["answer_id"].astype(str), table["statement_index"].astype(int), table["source_index"].astype(int)))
    on = np.array([key in targets for key in keys], bool)
    lab = table[on]
    y = np.array([targets[key] for key, hit in zip(keys, on) if hit], float)
    groups = lab["answer_id"].astype(str).tolist()
    where = [strata.get((str(a), int(i)), "") for a, i in zip(lab["answer_id"], lab["statement_index"])]
    check = check_fit(y, groups, where, lab["engine"].astype(str).tolist(),
                      table["engine"].astype(str).tolist(), k, base_judge)
    engines = sorted(set(lab["engine"].astype(str)))
    kinds = sorted(set(lab["kind"].astype(str)))
    unseen_kinds = sorted(set(table["kind"].astype(str)) - set(kinds))
    check.notes += [f"no labelled pair has a source of kind {kind!r}: its pairs keep the {base_judge} judge's labels"
                    for kind in unseen_kinds]
    cited = sorted({float(v) for v in lab["cited"]}) if len(lab) else [0.0, 1.0]
    if cited == [1.0] and (table["cited"] == 0.0).any():
        check.notes.append(f"no labelled pair is one of a source the statement does not cite: those "
                           f"{int((table['cited'] == 0.0).sum())} pairs keep the {base_judge} judge's labels")
    columns = [c for c in NUMERIC if c in table.columns and float(lab[c].std(ddof=0) if len(lab) else 0) > 0]
    columns += [f"engine={e}" for e in engines[1:]] + [f"kind={s}" for s in kinds[1:]]
    # every engine x judge label the labels hold (the sample's strata, at the pair's level), so the fit can
    # match each stratum's rate of full support; a level off in a stratum adds its error to every rectifier there
    columns += [f"stratum={e}|{b}" for e in engines for b in ("full", "partial")
                if ((lab["engine"] == e) & (lab["base_label"] == b)).any() and ((lab["engine"] == e) & (lab["base_label"] != b)).any()]
    out = Fit(dataset, base_judge, sample_id, people, len(y), columns, engines, kinds, [], [], [], [], {}, None, None,
              check, cited)
    if not check.ok:
        return out
    raw = Fit(dataset, base_judge, sample_id, people, len(y), columns, engines, kinds, [0.0] * len(columns),
              [1.0] * len(columns), [], [], {}, None, None).design(lab)
    mean, scale = raw.mean(axis=0), raw.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    x = (raw - mean) / scale
    folds = answer_folds(groups, k, seed)
    yhat = np.empty(len(y))
    coef, intercept = [], []
    y01 = (y >= 0.5).astype(int)
    for j in range(k):
        train = folds != j
        c_j = c_value if c_value is not None else choose_c(x[train], y01[train], [g for g, t in zip(groups, train) if t],
                                                           seed=seed + j)
        out.c_values.append(float(c_j))
        model = LogisticRegression(C=c_j, max_iter=1000).fit(x[train], y01[train])
        yhat[~train] = model.predict_proba(x[~train])[:, 1]
        coef.append([float(v) for v in model.coef_[0]])
        intercept.append(float(model.intercept_[0]))
    out.mean, out.scale, out.coef, out.intercept = [float(v) for v in mean], [float(v) for v in scale], coef, intercept
    out.folds = {g: int(f) for g, f in zip(groups, folds)}
    out.kappa_fitted = kappa(y, yhat, THRESHOLD)
    out.kappa_judge = kappa(y, lab["base_full"].to_numpy(float), 0.5)
    return out


def fitted_labels(table: pd.DataFrame, model: Fit, applied_to: str | None = None) -> pd.DataFrame:
    """The table with the fitted judge's `label`, `p` and `why` (provenance) per pair; pairs of an
    engine or a kind of source the fit never saw keep the base judge's label, and say so."""
    out = table[["answer_id", "statement_index", "source_index", "engine", "kind", "base_label"]].copy()
    if table.empty:
        return out.assign(label=[], p=[], why=[])
    p, fold = model.probabilities(table)
    known = (table["engine"].astype(str).isin(model.engines) & table["kind"].astype(str).isin(model.kinds)
             & table["cited"].astype(float).isin(model.cited))
    elsewhere = dataset_note(model.dataset, applied_to) if applied_to else None
    base = model.provenance + (f"; {elsewhere}" if elsewhere else "")
    why = []
    for f, ok, e, s in zip(fold, known, table["engine"].astype(str), table["kind"].astype(str)):
        if not ok:
            what = (f"engine {e}" if e not in model.engines else f"a source of kind {s!r}" if s not in model.kinds
                    else "a source the statement does not cite")
            why.append(f"{base}; the fit saw no label on {what}: the {model.base_judge} judge's label is kept")
        else:
            why.append(f"{base}; " + (f"predicted by the model fitted without this answer's fold {f + 1}" if f >= 0
                                      else f"mean of the {len(model.coef)} fold models"))
    out["p"] = np.where(known, p, np.nan)
    out["label"] = np.where(known, np.where(p >= THRESHOLD, "full", "none"), table["base_label"])
    out["why"] = why
    return out


def fitted_answers(answers: Mapping[str, AnnotatedAnswer], labelled: pd.DataFrame) -> dict[str, AnnotatedAnswer]:
    """Every answer with the fitted judge's verdicts in place of the base judge's (judge `fitted`):
    support from `labelled` where it has the pair, everything else the base judge's, re-attributed and
    said in `raw`."""
    by_pair = {(str(r.answer_id), int(r.statement_index), int(r.source_index)): r
               for r in labelled.itertuples(index=False)}
    out = {}
    for aid, a in answers.items():
        verdicts = []
        for v in a.verdicts:
            if v.kind == "gold_similarity":
                verdicts.append(v)  # not a judge's label (similarity to the gold answers): kept as it is
                continue
            hit = by_pair.get((aid, -1 if v.statement_index is None else int(v.statement_index), int(v.source_index))) if (
                v.kind == "support" and v.source_index is not None) else None
            if hit is not None:
                p = None if hit.p != hit.p else float(hit.p)
                raw = json.dumps({"provenance": hit.why, "p_fitted": None if p is None else round(p, 4),
                                  "base_label": hit.base_label}, sort_keys=True)
                verdicts.append(Verdict(aid, "support", str(hit.label), FITTED_JUDGE, FITTED_VERSION, raw,
                                        statement_index=v.statement_index, source_index=v.source_index,
                                        score=p if p is not None else v.score, evidence=v.evidence))
            else:
                what = ("the fitted judge learns support only" if v.kind != "support" else
                        "support by several sources together is not fitted" if v.source_index is None else
                        "no text to read here")
                note = json.dumps({"provenance": f"the {v.judge} judge's {v.kind} label ({what})", "base_raw": v.raw},
                                  sort_keys=True)
                verdicts.append(Verdict(aid, v.kind, v.label, FITTED_JUDGE, FITTED_VERSION, note,
                                        statement_index=v.statement_index, source_index=v.source_index,
                                        source_set=v.source_set, score=v.score, evidence=v.evidence, error=v.error))
        out[aid] = AnnotatedAnswer(a.answer, a.statements, tuple(verdicts))
    return out


# ---- the judge `fitted` of a dataset ------------------------------------------------------------


def sample_strata(sample: Any) -> dict[tuple[str, int], str]:
    """(answer, statement) -> the stratum of the sample cluster that holds the statement."""
    strata = dict(zip(sample.frame["cluster_id"].astype(str), sample.frame["stratum"].astype(str)))
    return {(str(r["answer_id"]), int(r["statement_index"])): strata.get(str(r["cluster_id"]), "")
            for r in sample.items[["answer_id", "statement_index", "cluster_id"]].to_dict("records")}


def people_words(human: str | Sequence[str], labels: Any = None) -> str:
    if human == "experts":
        return "ExpertQA's experts"
    if human == "all":
        names = sorted({str(a) for a in labels["annotator"].unique()}) if labels is not None and not labels.empty else []
        return ", ".join(names) if names else "nobody"
    return ", ".join(human)


def fit_from_sample(dataset: str, base_judge: str, sample_id: str | None = None, human: str | Sequence[str] = "all",
                    root: Path | None = None, k: int = DEFAULT_FOLDS, seed: int = 0) -> tuple[Fit, pd.DataFrame, dict]:
    """(the fit, the pair table, the base judge's answers) from a registered pair sample's labels."""
    from pipeline.audit.humans import item_labels
    from pipeline.audit.labels import LabelStore, labels_path
    from pipeline.audit.sample import load_sample
    from pipeline.audit.scorecard import human_labels, pick_samples
    from pipeline.errors import InputError
    from pipeline.storage.tables import load_annotated

    if sample_id is None:
        sample_id = pick_samples(dataset, base_judge, root=root).get("pair")
        if sample_id is None:
            raise InputError(f"no pair sample of {dataset!r} drawn under judge {base_judge!r}: draw and label one first "
                             f"(`aee audit sample --dataset {dataset} --judge {base_judge} --n 600`)", field="--sample")
    sample = load_sample(sample_id, root)
    if sample.unit != "pair" or sample.meta.get("dataset") != dataset:
        raise InputError(f"sample {sample_id!r} is not a pair sample of {dataset!r}", field="--sample")
    if sample.meta.get("judge") != base_judge:
        raise InputError(f"sample {sample_id!r} was drawn under judge {sample.meta.get('judge')!r}, not {base_judge!r}",
                         field="--judge")
    answers = load_annotated(dataset, base_judge, root)
    if human == "experts":
        labels = human_labels(sample, "experts", answers=answers, root=root)[0]
        who = people_words("experts")
    else:
        events = LabelStore(labels_path(root)).labels(sample_id)
        labels = item_labels(events, None if human == "all" else list(human))
        who = people_words(human, events)
    table = pair_table(answers)
    model = fit(table, support_targets(sample.items, labels), sample_strata(sample), dataset=dataset,
                base_judge=base_judge, sample_id=sample_id, people=who, k=k, seed=seed)
    return model, table, answers


def prepare_fit(dataset: str, base_judge: str = "offline", sample_id: str | None = None,
                human: str | Sequence[str] = "all", root: Path | None = None, *,
                apply_from: str | None = None) -> tuple[dict[str, Any], dict[str, AnnotatedAnswer]]:
    """Fit (or, with `apply_from`, take another dataset's fit) and label every answer: (the record the
    judge's manifest keeps, the answers with the fitted judge's verdicts). InputError with the guard
    rails' sentences when the labels cannot carry a fit. `pipeline.audit.cli.write_fitted` writes
    them through the runner."""
    from pipeline.errors import InputError
    from pipeline.storage.tables import load_annotated

    if apply_from:
        record = fitted_record(apply_from, root)
        if record is None:
            raise InputError(f"dataset {apply_from!r} has no fitted judge to apply: fit one there first", field="--from")
        model = Fit.from_record(record)
        model.folds = {}  # another dataset's answers: none of them was labelled in this fit
        answers = load_annotated(dataset, model.base_judge, root)
        table = pair_table(answers)
        unseen = sorted(set(table["engine"].astype(str)) - set(model.engines)) if not table.empty else []
        model.check.notes = [dataset_note(apply_from, dataset) or ""] + [
            f"engine {e} has no labels in the fit: its pairs keep the {model.base_judge} judge's labels" for e in unseen]
        labelled = fitted_labels(table, model, applied_to=dataset)
    else:
        model, table, answers = fit_from_sample(dataset, base_judge, sample_id, human, root)
        if not model.check.ok:
            raise InputError("no fit: " + reasons_text(model.check), field="--sample")
        labelled = fitted_labels(table, model)
    record = model.record() | {"applied_to": dataset, "applied_from": apply_from or "",
                               "pairs_fitted": int(labelled["p"].notna().sum()) if len(labelled) else 0,
                               "pairs_kept": int(labelled["p"].isna().sum()) if len(labelled) else 0}
    return record, fitted_answers(answers, labelled)


def fit_summary(record: Mapping[str, Any]) -> str:
    """What the fitted judge is, in one paragraph for the CLI and the page."""
    def k(v: Any) -> str:
        return "not computable (one kind of label only)" if v is None else f"{float(v):.2f}"

    where = (f"fitted on {record['dataset']}, applied to {record['applied_to']}" if record.get("applied_from")
             else f"{record['pairs_fitted']} pairs labelled by the fit, {record['pairs_kept']} kept from "
                  f"{record['base_judge']}")
    what = str(record["provenance"]).split(": ", 1)[-1]  # the provenance without the judge's id, said first here
    out = (f"judge {FITTED_JUDGE} ({record['version']}), {what}; {where}; held-out agreement with the labels: kappa "
           f"{k(record['kappa_fitted'])} (the {record['base_judge']} judge alone {k(record['kappa_judge'])})")
    notes = [n for n in record.get("notes") or [] if n]
    return out + ("; " + "; ".join(notes) if notes else "")


def labels_bought(dataset: str, human: str | Sequence[str] = "all", root: Path | None = None) -> dict[str, Any] | None:
    """The page's sentence: the fitted judge's held-out kappa beside the base judge's, and how much
    narrower the corrected intervals are through it, averaged over the engine x metric cells where
    both show an interval (computed here from the two prediction-powered scorecards, never typed in).
    None without a fitted judge."""
    from pipeline.audit.fitted_judge import what_labels_bought
    from pipeline.audit.scorecard import ALL_ENGINES, ppi_scorecard

    record = fitted_record(dataset, root)
    if record is None:
        return None
    sample = {"pair": str(record["sample_id"])} if not record.get("applied_from") else None
    base = ppi_scorecard(dataset, str(record["base_judge"]), samples=sample, human=human, root=root)
    ours = ppi_scorecard(dataset, FITTED_JUDGE, samples=sample, human=human, root=root)
    widths: dict[tuple[str, str], float] = {}
    for r in base["rows"]:
        if r.get("ppi_low") is not None and r.get("ppi_high") is not None and r["domain"] != ALL_ENGINES and r.get("sample_id"):
            widths[(r["metric"], r["domain"])] = float(r["ppi_high"]) - float(r["ppi_low"])
    pairs = []
    for r in ours["rows"]:
        key = (r["metric"], r["domain"])
        if key in widths and r.get("ppi_low") is not None and r.get("ppi_high") is not None:
            pairs.append((float(r["ppi_high"]) - float(r["ppi_low"]), widths[key]))
    if not pairs:
        return {"sentence": "", "cells": 0, "record": record,
                "why": "no engine cell shows a corrected interval under both judges yet: label more"}
    fitted_w, plain_w = float(np.mean([p[0] for p in pairs])), float(np.mean([p[1] for p in pairs]))
    return {"sentence": what_labels_bought(int(record["n_labels"]), record.get("kappa_fitted"),
                                           record.get("kappa_judge"), fitted_w, plain_w),
            "cells": len(pairs), "width_fitted": fitted_w, "width_judge": plain_w, "record": record, "why": ""}


def precheck(dataset: str, sample_id: str, human: str | Sequence[str] = "all", root: Path | None = None,
             k: int = DEFAULT_FOLDS) -> FitCheck:
    """The guard rails on a sample's labels before anything is fitted (cheap: no pair table, no
    model): enough labels and of both kinds per fold, two labelled answers per stratum; the engines
    of the population that have no label are said."""
    from pipeline.audit.humans import item_labels
    from pipeline.audit.labels import LabelStore, labels_path
    from pipeline.audit.sample import load_sample
    from pipeline.audit.scorecard import human_labels

    sample = load_sample(sample_id, root)
    if human == "experts":
        labels = human_labels(sample, "experts", root=root)[0]
    else:
        labels = item_labels(LabelStore(labels_path(root)).labels(sample_id), None if human == "all" else list(human))
    targets = support_targets(sample.items, labels)
    strata = sample_strata(sample)
    engines = dict(zip(sample.frame["answer_id"].astype(str), sample.frame["engine"].astype(str)))
    keys = sorted(targets)
    return check_fit(np.array([targets[key] for key in keys]), [key[0] for key in keys],
                     [strata.get((key[0], key[1]), "") for key in keys], [engines.get(key[0], "") for key in keys],
                     sorted(set(engines.values())), k, str(sample.meta.get("judge", "audited")))
