"""An engine is what was asked for (issue 42): provider and requested model. The model the reply
names is kept as a field; when it changes between waves, `aee compare` and the summaries say so."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from pipeline.cli import main as cli_main
from pipeline.consistency.summary import SUMMARY_FILE
from pipeline.importers.engines import engine_answer, iter_answers
from pipeline.runner import run_dataset
from pipeline.storage.store import result_set

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "engines" / "perplexity_sonar.json"


def _envelope(model: str | None, reply: str, query: str, wave: str = "", repeat: int = 0) -> dict:
    env = copy.deepcopy(json.loads(FIXTURE.read_text(encoding="utf-8")))
    env["query"] = query
    env["response"]["model"] = reply
    env["response"]["id"] = f"{query}-{reply}-{wave}-{repeat}"
    env.pop("request", None)
    if model is not None:
        env["model"] = model
    if wave:
        env["wave"], env["repeat"] = wave, repeat
    return env


def test_requested_models_stay_apart_and_the_reply_is_kept():
    # three requests (one a typo) answered by the same default model: three engines, not one
    asked = {m: engine_answer(_envelope(m, "sonar", "Is it so?"), m).answer for m in ("sonar", "sonar-pro", "sonr")}
    assert {m: a.engine for m, a in asked.items()} == {"sonar": "perplexity:sonar", "sonar-pro": "perplexity:sonar-pro",
                                                        "sonr": "perplexity:sonr"}
    assert {a.meta["model"] for a in asked.values()} == {"sonar"}  # what the reply said, kept
    assert asked["sonr"].meta["requested_model"] == "sonr"
    # no envelope model and no request: the reply's model is all there is
    assert engine_answer(_envelope(None, "sonar-pro", "Is it so?"), "x").answer.engine == "perplexity:sonar-pro"
    # the request body says what was asked when the envelope does not
    env = _envelope(None, "sonar-2026-02", "Is it so?")
    env["request"] = {"model": "sonar", "messages": []}
    assert engine_answer(env, "x").answer.engine == "perplexity:sonar"


@pytest.fixture
def dated(tmp_path, monkeypatch):
    """One engine (perplexity, requested sonar) whose replies name a dated version that moves on
    between two waves: 6 queries x 2 repeats per wave."""
    folder = tmp_path / "caps"
    for wave, reply in (("w1", "sonar-2026-01"), ("w2", "sonar-2026-02")):
        (folder / wave).mkdir(parents=True)
        for q in range(6):
            for r in range(2):
                env = _envelope("sonar", reply, f"Question {q}?", wave, r)
                (folder / wave / f"q{q}-r{r}.json").write_text(json.dumps(env), encoding="utf-8")
    monkeypatch.setenv("AEE_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("AEE_OVER_TIME_MEANING", "lexical")
    return folder


def test_a_dated_reply_model_stays_one_engine_and_is_flagged(dated, capsys):
    answers = list(iter_answers(dated))
    assert {a.answer.engine for a in answers} == {"perplexity:sonar"} and len(answers) == 24
    run_dataset("dated", dated, judge_name="recorded", progress=False)
    summary = json.loads((result_set("dated") / "recorded" / SUMMARY_FILE).read_text(encoding="utf-8"))
    assert summary["engines"] == ["perplexity:sonar"]
    assert summary["model_changes"] == [{"engine": "perplexity:sonar", "from_wave": "w1", "to_wave": "w2",
                                         "from_models": ["sonar-2026-01"], "to_models": ["sonar-2026-02"]}]
    assert cli_main(["compare", "--dataset", "dated", "--judge", "recorded", "--waves", "w1,w2"]) == 0
    out = capsys.readouterr().out
    assert ("model change: perplexity:sonar: the replies name sonar-2026-01 in wave w1 and sonar-2026-02 in wave w2: "
            "the engine may have changed between them") in out
    assert cli_main(["compare", "--dataset", "dated", "--judge", "recorded", "--waves", "w1,w2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["model_changes"][0]["to_models"] == ["sonar-2026-02"]


def test_the_over_time_page_flags_the_reply_model_change(dated, tmp_path, monkeypatch):
    pytest.importorskip("streamlit.testing.v1")
    from streamlit.testing.v1 import AppTest

    run_dataset("dated", dated, judge_name="recorded", progress=False)
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "pages" / "over_time.py"), default_timeout=60)
    at.query_params["dataset"] = "dated"
    at.run()
    assert not at.exception, at.exception
    warnings = [w.value for w in at.warning]
    assert any("perplexity\\:sonar\\: the replies name sonar\\-2026\\-01 in wave w1 and sonar\\-2026\\-02 in wave w2" in w
               for w in warnings), warnings
    text = "\n".join([m.value for m in at.markdown] + [c.value for c in at.caption])
    # 6 queries: too few for an interval, and the page says so
    assert "No interval where a design is too small for one: 6 queries\\: too few for an interval \\(at least 10\\)" in text
    assert "a paired t over the queries both waves answered" in text and "alpha 0.05" in text.replace("\\", "")


def test_consistency_says_when_a_design_is_too_small_for_an_interval(dated, capsys):
    run_dataset("dated", dated, judge_name="recorded", progress=False)
    assert cli_main(["consistency", "--dataset", "dated", "--judge", "recorded"]) == 0
    out = capsys.readouterr().out
    assert "no interval (6 queries: too few for an interval (at least 10)) over 6 queries" in out
