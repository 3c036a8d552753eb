"""Which tests need what: the markers `make test-quick` leaves out (`-m "not (browser or ray or nli or slow)"`).

conftest.py applies them at collection, by what a test uses, so a new test is grouped without
remembering a decorator:

- `browser`: a test in tests/browser/test_browser*.py or tests/browser/test_concurrency.py, or one that takes the
  `browser` fixture (Debian's chromium through Playwright);
- `ray`: a test in tests/pipeline/cluster/test_ray_executor.py, one that takes the loopback `cluster` fixture, or one
  whose name says ray (it imports Ray, seconds on its own);
- `nli`: a test in tests/pipeline/judges/test_nli_judge.py or one whose name says nli (torch and transformers);
- `slow`: the tests that took 4 s or more in a two-worker run (SLOW_TESTS below), besides those
  marked `slow` in their files.

The markers are registered in pytest.ini; `make test` runs every test whatever its markers.
"""

from __future__ import annotations

import re
from typing import Iterable

import pytest

BROWSER_FILES = ("test_concurrency.py",)
RAY_FILES = ("test_ray_executor.py",)
NLI_FILES = ("test_nli_judge.py",)

# Whole files whose every test takes seconds (apps run through Streamlit's AppTest, subprocess runs
# of the pipeline), and single tests, "file.py::name" (without parameters). Measured from
# `pytest --durations=0` of a whole run; a test of 4 s or more goes here.
SLOW_FILES: frozenset[str] = frozenset({
    "test_kill_resume.py",
    "test_bench_smoke.py",
    "test_determinism.py",
})
SLOW_TESTS: frozenset[str] = frozenset({  # 4-14 s each in a two-worker run at load 5-20 (2026-11-27)
    "test_embedding.py::test_vectors_do_not_depend_on_thread_count_or_batching",
    "test_embedding.py::test_encode_async_equals_encode_and_shares_work",
    "test_collect.py::test_fifty_queries_with_429_5xx_and_timeouts",
    "test_collect.py::test_killed_midway_and_resumed",
    "test_collect.py::test_two_hundred_answers_killed_and_resumed_at_concurrency_four",
    "test_text.py::test_five_megabyte_answer",
    "test_audit_scorecard.py::test_a_census_gives_back_the_hand_labelled_scorecard",
    "test_audit_scorecard.py::test_two_people_who_disagree_count_half_each",
    "test_audit_scorecard.py::test_the_judge_only_column_is_the_judges_scorecard",
    "test_app_uncertainty.py::test_inspector_shows_uncertain_count_and_the_judges_reliability",
    "test_no_raw_missing.py::test_page_shows_no_raw_missing_value",
    "test_no_raw_missing.py::test_scorecard_shows_no_raw_missing_value_on_any_dataset",
    "test_lexical_judge.py::test_its_agreement_with_the_experts_on_rand_val_is_the_calibrations_record",
    "test_study_page.py::test_page_renders_with_simulated_log",
    "test_fuzz_inputs.py::test_canonical_objects_end_in_result_or_clear_error",
    "test_audit_publish_page.py::test_an_uploaded_file_lands_its_good_rows_and_is_published_as_a_judge",
    "test_paste.py::test_rendered_source_lists_come_back",
    "test_offline_checks.py::test_decidable_support_cases",
    "test_conflict_page.py::test_judge_without_sides_shows_the_datasets_judge_with_them",
    "test_engine_hostile.py::test_failing_run_keeps_written_results",
    "test_conflict_probe.py::test_words_recover_bias_and_effect_within_intervals",
    "test_default_data.py::test_the_lexical_judges_figures_reach_its_reliability_line",  # 34 s
    "test_aee_importer.py::test_cli_import_prints_parity_scorecard",  # 18 s
})


def _word(name: str, word: str) -> bool:
    return re.search(rf"(^|_){word}(_|$)", name) is not None


def markers_for(file: str, name: str, fixtures: Iterable[str]) -> set[str]:
    """The group markers a test gets from its file name, its function name and its fixtures."""
    fixtures = set(fixtures)
    base = name.split("[", 1)[0]
    out: set[str] = set()
    if file.startswith("test_browser") or file in BROWSER_FILES or "browser" in fixtures:
        out.add("browser")
    if file in RAY_FILES or "cluster" in fixtures or _word(base, "ray"):
        out.add("ray")
    if file in NLI_FILES or _word(base, "nli"):
        out.add("nli")
    if file in SLOW_FILES or f"{file}::{base}" in SLOW_TESTS:
        out.add("slow")
    return out


def apply_markers(items: list[pytest.Item]) -> None:
    for item in items:
        for marker in markers_for(item.path.name, item.name, getattr(item, "fixturenames", ())):
            item.add_marker(marker)
