"""The one registry of metrics: names, directions, groups, threshold bands and provenance.

The dashboard, the Methodology page, the aggregator and the exporters all read this registry; no
other module keeps its own list of metric names or thresholds.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Callable, Literal, Sequence

from pipeline.records import MetricResult

Direction = Literal["higher_is_better", "lower_is_better", "neutral"]
Rating = Literal["acceptable", "borderline", "problematic"]

# The one threshold for labels nobody gave: when more than this share of the units a metric needs
# (statements, citations, pairs, sources) has no decided label (a pair whose source has no text, a
# judge that could not tell...), the metric is null with the reason and the judged share, for one
# answer and for a scorecard cell alike. Below it, undecided units are left out of the value, which
# then says how many. Metrics read their own value of it from `MetricInfo.max_unknown_share`
# (stance metrics keep their stricter third, `aee.MAX_UNKNOWN_STANCE`).
MAX_UNKNOWN_SHARE = 0.5

RATING_SYMBOLS: dict[str, str] = {"acceptable": "▲", "borderline": "●", "problematic": "▼"}
RATING_COLOURS: dict[str, str] = {"acceptable": "#1a7f37", "borderline": "#b7791f", "problematic": "#c53030"}


@dataclass(frozen=True)
class Band:
    """A half-open (or closed at the top) interval of percentage values with its rating."""

    rating: Rating
    low: float
    high: float
    high_inclusive: bool = False

    def contains(self, value: float) -> bool:
        """True when value falls in this band."""
        return self.low <= value < self.high or (self.high_inclusive and value == self.high)


@dataclass(frozen=True)
class MetricInfo:
    """Everything the rest of the project needs to know about one metric."""

    name: str  # stable snake_case id, also the function name
    label: str  # short human name for tables
    group: str  # scorecard group, one of GROUP_ORDER
    direction: Direction
    version: int
    description: str  # first docstring line of the metric function
    formula: str  # plain-text formula shown on the Methodology page
    unit: Literal["percent", "count", "ratio", "likert"]  # how the corpus value is displayed
    fn: Callable[..., MetricResult] = field(repr=False, compare=False)
    debate_only: bool = False
    bands: tuple[Band, ...] = ()  # Table 7 thresholds on the 0..100 scale; empty when unrated
    finding: str = ""  # usability-study finding id(s) it answers (Table 6)
    recommendation: str = ""  # design recommendation it measures (Table 6)
    reference_column: str = ""  # column name in the published scorecard CSVs
    harmonic_of: tuple[str, str] | tuple[()] = ()  # corpus value = harmonic mean of these two corpus means
    # largest share of the units a metric needs that may have no decided label (a judge's
    # abstention, a source without text) before the metric is null, per answer and per scorecard
    # cell; None when the metric reads no label that can be missing
    max_unknown_share: float | None = None
    unknown_unit: str = ""  # what those units are, in words ("statements", "citations", "pairs")
    # What one per-answer value is a share of (`MetricResult.n` counts them): "answer" when the value
    # is a property of the whole answer (a count, a yes/no, a Likert level), else the unit its
    # numerator and denominator count ("statement", "citation", ...). A corpus value is either the
    # mean of per-answer values (AEE) or pooled over these units, sum of numerators over sum of
    # denominators (Liu et al., ALCE, ExpertQA); for "answer" metrics the two are the same.
    pool_unit: str = "answer"

    def scale(self, value: float | None) -> float | None:
        """A per-answer or mean value in display units (percent metrics times 100)."""
        if value is None:
            return None
        return value * 100 if self.unit == "percent" else value

    def rate(self, percent_value: float | None) -> Rating | None:
        """Rating of a corpus value on the 0..100 scale, None when unrated or missing."""
        if percent_value is None or not self.bands or percent_value != percent_value:
            return None
        # Rate the value as shown (two decimals), so 89.999999 from float noise and a displayed
        # "90.00" get the same symbol.
        percent_value = round(percent_value, 2)
        for band in self.bands:
            if band.contains(percent_value):
                return band.rating
        return None


METRICS: dict[str, MetricInfo] = {}

# The units a metric can be pooled over, with their plural for labels ("pooled over citations").
POOL_UNITS: dict[str, str] = {
    "answer": "answers", "statement": "statements", "worthy statement": "verification-worthy statements",
    "cited statement": "cited statements", "stance statement": "statements that take a side",
    "citation": "citations", "pair": "supported (statement, source) pairs", "source": "listed sources",
    "reference": "gold answers", "gold citation": "gold citations",
}

# How a corpus value is formed from per-answer values, named on every number that shows one.
AGGREGATIONS: dict[str, str] = {
    "answer": "mean over answers",  # AEE: each answer weighs the same
    "pooled": "pooled over units",  # Liu et al., ALCE, ExpertQA: each statement / citation weighs the same
}


def aggregation_text(info: "MetricInfo", aggregation: str) -> str:
    """How this metric's corpus value is formed, in words ("mean over answers", "pooled over citations")."""
    if info.harmonic_of:
        parts = " and ".join(METRICS[m].label.lower() if m in METRICS else m for m in info.harmonic_of)
        return f"harmonic mean of {parts}, each " + ("pooled" if aggregation == "pooled" else "a mean over answers")
    if aggregation == "pooled" and info.pool_unit != "answer":
        return f"pooled over {POOL_UNITS[info.pool_unit]}"
    return "mean over answers"


def metric(
    *,
    label: str,
    group: str,
    direction: Direction,
    formula: str,
    unit: str = "percent",
    version: int = 1,
    debate_only: bool = False,
    bands: tuple[Band, ...] = (),
    finding: str = "",
    recommendation: str = "",
    reference_column: str = "",
    harmonic_of: tuple[str, str] | tuple[()] = (),
    max_unknown_share: float | None = None,
    unknown_unit: str = "",
    pool_unit: str = "answer",
) -> Callable[[Callable[..., MetricResult]], Callable[..., MetricResult]]:
    """Register a per-answer metric function under its own name."""

    def register(fn: Callable[..., MetricResult]) -> Callable[..., MetricResult]:
        if fn.__name__ in METRICS:
            raise ValueError(f"duplicate metric {fn.__name__!r}")
        doc = (inspect.getdoc(fn) or "").splitlines()
        METRICS[fn.__name__] = MetricInfo(
            name=fn.__name__,
            label=label,
            group=group,
            direction=direction,
            version=version,
            description=doc[0] if doc else "",
            formula=formula,
            unit=unit,  # type: ignore[arg-type]
            fn=fn,
            debate_only=debate_only,
            bands=bands,
            finding=finding,
            recommendation=recommendation,
            reference_column=reference_column,
            harmonic_of=harmonic_of,
            max_unknown_share=max_unknown_share,
            unknown_unit=unknown_unit,
            pool_unit=pool_unit,
        )
        if pool_unit not in POOL_UNITS:
            raise ValueError(f"metric {fn.__name__!r}: pool_unit {pool_unit!r} is not one of {sorted(POOL_UNITS)}")
        return fn

    return register


def decided_mean(outcomes: Sequence[bool | None], unit: str, empty_reason: str, cause: str = "",
                 max_unknown_share: float = MAX_UNKNOWN_SHARE) -> MetricResult:
    """The share of True among the decided outcomes (None = no label decides this unit).

    Null with `empty_reason` when there are no units; null with the judged share when more than
    `max_unknown_share` of them are undecided (a value over the few decided ones would describe
    which sources had text, not the answer); otherwise the undecided ones are left out and the
    note says how many. `cause` names why units are undecided ("sources without text")."""
    total = len(outcomes)
    if total == 0:
        return MetricResult(None, 0, empty_reason)
    known = [o for o in outcomes if o is not None]
    unknown = total - len(known)
    why = f" ({cause})" if cause and unknown else ""
    if not known or unknown > max_unknown_share * total:
        return MetricResult(None, len(known), f"{judged_share_text(len(known), total, unit)}{why}",
                            units=total, unknown=unknown, unknown_why=cause if unknown else "")
    note = f"{unknown} of {total} {unit} left out, not judged{why}" if unknown else ""
    return MetricResult(sum(1 for o in known if o) / len(known), len(known), note,
                        units=total, unknown=unknown, unknown_why=cause if unknown else "")


def judged_share_text(decided: int, total: int, unit: str) -> str:
    """"only 3 of 10 statements (30%) judged" style words for a null result ("judged": some label
    decides the unit's outcome)."""
    if decided == 0:
        return f"none of {total} {unit} judged"
    return f"only {decided} of {total} {unit} ({percent_text(decided / total)}) judged"


def percent_text(share: float) -> str:
    """A share as a whole percentage, never rounded to 0% or 100% when it is neither."""
    if 0 < share < 0.005:
        return "under 1%"
    if 0.995 <= share < 1:
        return "over 99%"
    return f"{share:.0%}"


def lower_bands(acceptable_below: float, borderline_below: float) -> tuple[Band, ...]:
    """Bands for a lower-is-better metric: [0, a) acceptable, [a, b) borderline, [b, 100] problematic."""
    return (
        Band("acceptable", 0, acceptable_below),
        Band("borderline", acceptable_below, borderline_below),
        Band("problematic", borderline_below, 100, high_inclusive=True),
    )


def higher_bands(acceptable_from: float, borderline_from: float) -> tuple[Band, ...]:
    """Bands for a higher-is-better metric: [a, 100] acceptable, [b, a) borderline, [0, b) problematic."""
    return (
        Band("acceptable", acceptable_from, 100, high_inclusive=True),
        Band("borderline", borderline_from, acceptable_from),
        Band("problematic", 0, borderline_from),
    )


GROUP_ORDER: tuple[str, ...] = ("basic", "answer text", "sources", "citation", "liu", "attribution", "correctness",
                                "source analysis", "source stance")
