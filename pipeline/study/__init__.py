"""Usability-study statistics: study logs, descriptive tables and tests, the reproduction of the
paper's published tables, and logs simulated from them.

Everything is a pure function of its inputs (the reference CSVs are read only by the explicitly
named loaders), so the CLI and the Streamlit pages share one implementation. Callers write
`from pipeline import study` and use the names below; the modules are:

* `log`: schema, validation, reading and writing log files;
* `stats`: descriptive tables, t tests, Mann-Whitney, Cohen's d, Holm;
* `published`: the paper's printed figures and the sample sizes they imply;
* `reproduction`: `reproduce()` and the consistency flags;
* `simulate`: count logs simulated from the published figures;
* `recorder`: append-only storage of recorded hover/click events (`from pipeline.study import recorder`);
* `cli`: the `python -m pipeline study ...` subcommands.
"""

from pipeline.study.log import (
    ALIGNMENTS,
    ALL_ENGINES_LABEL,
    ALL_EVENTS,
    ANSWER_ENGINES,
    ANSWER_EVENTS,
    BASELINE,
    COLUMN_DOCS,
    COUNT_COLUMNS,
    COUNT_MEASURES,
    EVENT_COLUMNS,
    EVENT_TO_COUNT,
    EVENT_TYPES,
    KEY_COLUMNS,
    SAFE_CODE,
    SAFE_LABEL,
    SIMULATED_LABEL,
    StudyLog,
    StudyLogError,
    counts_from_events,
    is_safe_code,
    load_log,
    load_log_bytes,
    parse_log,
    template_csv,
    validate_counts,
    validate_events,
    write_log,
)
from pipeline.study.published import (
    HALF_UNIT,
    MAIN_PARTICIPANTS,
    MAX_QUERIES_PER_PARTICIPANT,
    PER_ENGINE_PARTICIPANTS,
    REFERENCE_FILES,
    Fit,
    Published,
    fit_t_test,
    infer_table4_n,
    infer_table5_n,
    load_published,
    load_reference,
    pooled_stats,
)
from pipeline.study.reproduction import consistency_checks, grim_possible, reproduce
from pipeline.study.simulate import Target, cached_counts, draw_matching, simulate_counts, simulated_log
from pipeline.study.stats import (
    COMPARISONS,
    CONDITION_COLUMNS,
    MIN_ROWS_FOR_T,
    STAT_ROWS,
    EffectSize,
    MannWhitney,
    TTest,
    cohens_d,
    cohens_d_from_stats,
    comparison_groups,
    comparison_unavailable,
    conditions,
    describe,
    descriptive_table,
    engine_order,
    holm,
    mann_whitney,
    pair_tests,
    sources_table,
    student_t,
    t_from_stats,
    test_notes,
    test_table,
    welch_t,
)

__all__ = [
    # log
    "ALIGNMENTS", "ALL_ENGINES_LABEL", "ANSWER_ENGINES", "BASELINE", "COUNT_COLUMNS", "COUNT_MEASURES",
    "EVENT_COLUMNS", "EVENT_TO_COUNT", "EVENT_TYPES", "ANSWER_EVENTS", "ALL_EVENTS", "KEY_COLUMNS", "SAFE_CODE", "SAFE_LABEL",
    "SIMULATED_LABEL", "StudyLog", "StudyLogError", "counts_from_events", "is_safe_code", "load_log",
    "load_log_bytes", "parse_log", "validate_counts", "validate_events", "write_log", "COLUMN_DOCS", "template_csv",
    # stats
    "COMPARISONS", "STAT_ROWS", "EffectSize", "MannWhitney", "TTest", "cohens_d", "cohens_d_from_stats",
    "comparison_groups", "describe", "descriptive_table", "engine_order", "holm", "mann_whitney",
    "sources_table", "student_t", "t_from_stats", "test_table", "welch_t", "CONDITION_COLUMNS", "MIN_ROWS_FOR_T",
    "comparison_unavailable", "conditions", "pair_tests", "test_notes",
    # published
    "HALF_UNIT", "MAIN_PARTICIPANTS", "MAX_QUERIES_PER_PARTICIPANT", "PER_ENGINE_PARTICIPANTS",
    "REFERENCE_FILES", "Fit", "Published", "fit_t_test", "infer_table4_n", "infer_table5_n",
    "load_published", "load_reference", "pooled_stats",
    # reproduction
    "consistency_checks", "grim_possible", "reproduce",
    # simulate
    "Target", "cached_counts", "draw_matching", "simulate_counts", "simulated_log",
]
