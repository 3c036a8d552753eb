"""`aee collect --repeat K --spacing S --wave W`: each query asked K times, resumable, each capture
keeping its time, repeat index and wave, and importing as K distinct answers."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from pipeline.cli import main as cli_main
from pipeline.collect.client import Backoff
from pipeline.collect.run import CollectConfig, answer_file_id, collect, plan
from pipeline.importers.engines import iter_answers
from pipeline.testing.fake_engines import FakeEngineServer
from pipeline.testing.fake_variation import Variation

KEY = "sk-test-repeat-KEY0042"
FAST = Backoff(base=0.01, cap=0.05, attempts=3)


@pytest.fixture
def server(monkeypatch, tmp_path):
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    with FakeEngineServer(expected_key=KEY, variation=Variation(seed=3)) as srv:
        monkeypatch.setenv("AEE_COLLECT_PERPLEXITY_BASE_URL", srv.base_url)
        monkeypatch.setenv("PERPLEXITY_API_KEY", KEY)
        yield srv


def _queries(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps({"query": f"Is claim {k} true?"}) + "\n" for k in range(n)), encoding="utf-8")
    return path


def _envelopes(folder: Path) -> list[dict]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.json")) if not p.name.startswith("_")]


def test_repeats_are_asked_saved_and_imported_apart(server, tmp_path):
    out = tmp_path / "caps"
    config = CollectConfig(engine="perplexity", queries=str(_queries(tmp_path, 5)), out=out, repeat=3, concurrency=3,
                           progress=False, backoff=FAST, wave="2026-w48")
    report = collect(config)
    assert (report.queries, report.captured, report.failed) == (15, 15, 0)
    envelopes = _envelopes(out)
    assert len(envelopes) == 15
    assert sorted(e["repeat"] for e in envelopes) == [0] * 5 + [1] * 5 + [2] * 5
    assert {e["wave"] for e in envelopes} == {"2026-w48"}
    assert all(e["captured_at"] for e in envelopes)
    # each asking is a new draw of the fake engine: the three answers to one query differ
    texts = {e["response"]["choices"][0]["message"]["content"] for e in envelopes if e["query"] == "Is claim 0 true?"}
    assert len(texts) == 3
    answers = list(iter_answers(out))
    assert len({a.answer.answer_id for a in answers}) == 15
    assert sorted(a.answer.meta["repeat"] for a in answers) == sorted(str(e["repeat"]) for e in envelopes)
    assert {a.answer.meta["wave"] for a in answers} == {"2026-w48"}

    # resume: two lost captures are asked again, nothing else
    lost = sorted(out.glob("perplexity-*-r2.json"))[:2]
    for path in lost:
        path.unlink()
    before = len(server.requests)
    again = collect(config)
    assert (again.already, again.asked, again.captured) == (13, 2, 2)
    assert len(server.requests) - before == 2
    assert sorted(p.name for p in out.glob("perplexity-*-r2.json"))[:2] == [p.name for p in lost]


def test_first_asking_keeps_the_old_file_name():
    assert answer_file_id("perplexity", "sonar", "q") == answer_file_id("perplexity", "sonar", "q", 0, "")
    assert answer_file_id("perplexity", "sonar", "q", 1) != answer_file_id("perplexity", "sonar", "q")


def test_spacing_starts_each_round_later(server, tmp_path):
    config = CollectConfig(engine="perplexity", queries=str(_queries(tmp_path, 2)), out=tmp_path / "c", repeat=2, spacing=0.6,
                           concurrency=4, progress=False, backoff=FAST)
    began = time.monotonic()
    collect(config)
    times = {}
    for entry in server.requests:
        times.setdefault(entry.query, []).append(entry.at)
    for query, at in times.items():
        assert len(at) == 2, query
        # The second round may start no sooner than 0.6 s after the run began. Compared with the run's
        # start, not with the first round's arrival, which a busy machine can delay by any amount.
        assert at[1] - began >= 0.6 - 0.005, (query, round(at[1] - began, 3))


def test_dry_run_counts_every_repeat(server, tmp_path, capsys):
    lines = plan(CollectConfig(engine="perplexity", queries=str(_queries(tmp_path, 4)), out=tmp_path / "d", repeat=3,
                               spacing=60, progress=False))
    text = "\n".join(lines)
    assert "each asked 3 times (rounds 60 s apart)" in text
    assert "calls: 12 " in text
    code = cli_main(["collect", "--engine", "perplexity", "--queries", str(_queries(tmp_path, 4)), "--out", str(tmp_path / "d"),
                     "--repeat", "0", "--dry-run"])
    assert code == 2 and "--repeat" in capsys.readouterr().err


def test_canonical_records_carry_wave_repeat_and_time(tmp_path):
    from pipeline.errors import InputError
    from pipeline.importers.canonical import parse_answer
    from pipeline.testing.fake_variation import canonical_record

    record = canonical_record("E", "Is it so?", 2, Variation(), wave="spring", captured_at="2026-03-01T10:00:00+00:00")
    meta = parse_answer(record, "r").answer.meta
    assert (meta["wave"], meta["repeat"], meta["captured_at"]) == ("spring", "2", "2026-03-01T10:00:00+00:00")
    for bad in ({"repeat": -1}, {"repeat": "2"}, {"wave": 3}):
        with pytest.raises(InputError) as err:
            parse_answer({**record, **bad}, "r")
        assert next(iter(bad)) in str(err.value)


def test_envelope_without_repeat_keeps_its_old_id(tmp_path):
    from pipeline.importers.engines import engine_answer
    from pipeline.testing.fake_engines import varied_perplexity

    response = varied_perplexity("Is it so?", 0, Variation())
    plain = engine_answer({"query": "Is it so?", "engine": "perplexity", "response": response}, "e")
    first = engine_answer({"query": "Is it so?", "engine": "perplexity", "response": response, "repeat": 0}, "e")
    again = engine_answer({"query": "Is it so?", "engine": "perplexity", "response": response, "repeat": 1}, "e")
    assert plain.answer.answer_id == first.answer.answer_id != again.answer.answer_id
    assert again.answer.meta["repeat"] == "1" and "repeat" not in plain.answer.meta
