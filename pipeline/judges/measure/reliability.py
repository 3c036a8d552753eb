"""Where a judge's support labels are least reliable: its uncertain band.

A computed judge that scores support (a probability in [0, 1]) turns the score into a label at
cut points (`full` from one threshold up, `partial` from another). A score just beside a cut point
could as well have fallen on the other side: small changes in wording or in the source window move
it across. The uncertain band is the set of scores within `margin` of a cut point
(`threshold - margin <= score < threshold + margin`); a verdict whose score falls there is shown as
uncertain by the dashboard. How the margin was chosen: docs/judges/uncertainty.md.

Each judge declares its band here, in one place:
- `offline`: its two calibrated thresholds, read from the judge's own parameters
  (`pipeline/judges/offline/params.json`, the set the verdict's `raw` names: `embed` or `lexical`);
- `offline:lexical`: the same file's `lexical` thresholds, always (it never uses the embedding model);
- `nli` and `minicheck`: the thresholds each verdict's `raw` records (the judge's configuration),
  else the defaults of `pipeline.judges.backends.support_only.SupportThresholds`;
- every other judge has no band: `openai` gives labels without a score, `recorded` and `human`
  carry labels, `scripted` is a test double whose score means nothing.

A verdict whose label a stated rule decided (the offline judge's number-conflict rule holds its
score just under the full threshold) is not uncertain: the rule, not the score, set the label.
Everything here is a pure function of verdict fields; the dashboard only shows the flag.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping

from pipeline.records import Verdict

# Half-width of the band around each cut point, in score units: a fixed margin, not a fitted one.
# A score this close to a cut point can cross it under a small change (a rewording, another source
# window). Measured with bench/uncertain_band.py on held-out ExpertQA pairs (rand_val), calibration
# cal6: 16% of the offline judge's scores fall within 0.05 of its full threshold, and its full /
# not-full decision there agrees with the experts 54% of the time against 64% outside. The band
# marks weaker labels; it does not make the others reliable. docs/judges/uncertainty.md has the figures.
MARGIN = 0.05
HOW_CHOSEN = ("a fixed margin of {margin:.2f} on either side of each cut point: a score that close can cross it "
              "under a small change of wording or source window")
# Judges with a band: a registered name ("offline:lexical") or the part of the name before ":" ("nli:<model>").
SCORED_JUDGES = ("offline", "offline:lexical", "nli", "minicheck")


@dataclass(frozen=True)
class UncertainBand:
    """Scores within `margin` of any of `thresholds` (the judge's label cut points)."""

    judge: str
    thresholds: tuple[float, ...]
    margin: float = MARGIN

    def ranges(self) -> tuple[tuple[float, float], ...]:
        """The band as [low, high) intervals inside [0, 1], overlapping ones merged."""
        out: list[tuple[float, float]] = []
        for t in sorted(self.thresholds):
            # rounded: 0.8 + 0.05 is 0.8500000000000001 in floating point, which would take 0.85 in
            low, high = round(max(0.0, t - self.margin), 9), round(min(1.0, t + self.margin), 9)
            if out and low <= out[-1][1]:
                out[-1] = (out[-1][0], max(out[-1][1], high))
            else:
                out.append((low, high))
        return tuple(out)

    def contains(self, score: float | None) -> bool:
        if score is None or score != score:  # None or nan: no score, no band
            return False
        score = round(score, 9)  # the edges are rounded the same way: t - margin computed either side agrees
        return any(low <= score < high for low, high in self.ranges())

    def text(self) -> str:
        """The band in words: "scores from 0.42 to 0.52 or from 0.75 to 0.85"."""
        return "scores " + " or ".join(f"from {low:.2f} to {high:.2f}" for low, high in self.ranges())

    def how(self) -> str:
        return HOW_CHOSEN.format(margin=self.margin)


def _raw_dict(raw: str | Mapping[str, Any] | None) -> dict[str, Any]:
    if isinstance(raw, Mapping):
        return dict(raw)
    if not raw:
        return {}
    try:
        parsed = json.loads(raw)
    except (TypeError, ValueError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


@lru_cache(maxsize=8)
def _offline_thresholds(path: str, mtime: float) -> dict[str, tuple[float, ...]]:
    """{"embed": (partial, full), "lexical": (...)} from the offline judge's parameter file."""
    from pipeline.judges.offline.judge import load_params

    params = load_params(Path(path))
    out: dict[str, tuple[float, ...]] = {}
    for mode in ("embed", "lexical"):
        spec = params.get(mode)
        if isinstance(spec, Mapping) and {"threshold_partial", "threshold_full"} <= set(spec):
            out[mode] = (float(spec["threshold_partial"]), float(spec["threshold_full"]))
    return out


def offline_thresholds(mode: str = "embed", params_path: Path | None = None) -> tuple[float, ...]:
    """The offline judge's (partial, full) thresholds for one of its two support models, as its
    parameter file says now (the file is read again when it changes)."""
    from pipeline.judges.offline.support import PARAMS_PATH

    path = Path(params_path or PARAMS_PATH)
    mtime = path.stat().st_mtime if path.exists() else 0.0
    table = _offline_thresholds(str(path), mtime)
    return table.get(mode) or table.get("embed") or ()  # no thresholds in the file: no band


def _recorded_thresholds(raw: Mapping[str, Any]) -> tuple[float, ...] | None:
    found = raw.get("thresholds")
    if isinstance(found, Mapping):
        found = [found.get("partial"), found.get("full")]
    if isinstance(found, (list, tuple)) and found and all(isinstance(t, (int, float)) and not isinstance(t, bool)
                                                          for t in found):
        return tuple(float(t) for t in found)
    return None


def support_band(judge: str, raw: str | Mapping[str, Any] | None = None) -> UncertainBand | None:
    """The uncertain band of a judge's support scores, or None for a judge without one.
    `raw`: a verdict's raw output, when the band depends on how the judge was configured."""
    base = judge if judge in SCORED_JUDGES else judge.partition(":")[0]
    if base not in SCORED_JUDGES:
        return None
    details = _raw_dict(raw)
    if base == "offline:lexical":
        return UncertainBand(judge, offline_thresholds("lexical"))
    if base == "offline":  # the model the verdict says it used (the lexical fallback without the embedding model)
        mode = details.get("mode") if details.get("mode") in ("embed", "lexical") else "embed"
        return UncertainBand(judge, offline_thresholds(str(mode)))
    from pipeline.judges.backends.support_only import SupportThresholds

    default = SupportThresholds()
    return UncertainBand(judge, _recorded_thresholds(details) or (default.partial, default.full))


def is_uncertain(judge: str, score: float | None, raw: str | Mapping[str, Any] | None = None,
                 kind: str = "support") -> bool:
    """True when a support verdict's score falls in its judge's uncertain band (and no stated rule
    set the label). False for other kinds, for verdicts without a score and for judges without a band."""
    if kind != "support" or score is None or score != score:
        return False
    details = _raw_dict(raw)
    if details.get("rule"):
        return False
    band = support_band(judge, details)
    return band is not None and band.contains(float(score))


def verdict_uncertain(verdict: Verdict) -> bool:
    """`is_uncertain` for a Verdict (a verdict without a label is an error, never uncertain)."""
    if verdict.label is None:
        return False
    return is_uncertain(verdict.judge, verdict.score, verdict.raw, verdict.kind)


def uncertain_pairs(verdicts: Iterable[Verdict]) -> dict[tuple[int, int], bool]:
    """{(statement, source): uncertain?} over per-source support verdicts (the last one per pair
    wins, as in `pipeline.matrices.label_view`)."""
    out: dict[tuple[int, int], bool] = {}
    for v in verdicts:
        if v.kind == "support" and v.label is not None and v.statement_index is not None and v.source_index is not None:
            out[(v.statement_index, v.source_index)] = verdict_uncertain(v)
    return out


def uncertain_note(verdict: Verdict) -> str:
    """One sentence for an uncertain verdict ("" when it is not): where its score sits."""
    if not verdict_uncertain(verdict):
        return ""
    band = support_band(verdict.judge, verdict.raw)
    assert band is not None and verdict.score is not None
    near = min(band.thresholds, key=lambda t: abs(t - float(verdict.score or 0.0)))
    return (f"Uncertain: score {float(verdict.score):.2f} is within {band.margin:.2f} of the judge's cut point "
            f"{near:.2f}, where its labels are least reliable; read the source before relying on this label.")
