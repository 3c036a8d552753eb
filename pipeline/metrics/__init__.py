"""Metrics: one registry (`METRICS`), pure per-answer functions, and `score_answer`."""

from __future__ import annotations

from pipeline.metrics import aee, attribution, correctness, liu, source_stance  # noqa: F401  (importing registers the metrics)
from pipeline.metrics.context import MODE_LABELS, MODES, PARITY_NECESSITY, ScoreConfig, ScoringContext, effective_necessity
from pipeline.metrics.necessity import NECESSITY_METHODS
from pipeline.metrics.registry import GROUP_ORDER, METRICS, RATING_COLOURS, RATING_SYMBOLS, MetricInfo
from pipeline.records import AnnotatedAnswer, MetricResult

__all__ = [
    "METRICS",
    "GROUP_ORDER",
    "RATING_SYMBOLS",
    "RATING_COLOURS",
    "MetricInfo",
    "ScoreConfig",
    "MODE_LABELS",
    "MODES",
    "NECESSITY_METHODS",
    "PARITY_NECESSITY",
    "effective_necessity",
    "ScoringContext",
    "score_answer",
]


def score_answer(annotated: AnnotatedAnswer, config: ScoreConfig | None = None) -> dict[str, MetricResult]:
    """Every registered metric for one annotated answer."""
    ctx = ScoringContext(annotated, config)
    return {name: info.fn(ctx) for name, info in METRICS.items()}
