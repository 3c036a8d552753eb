"""CachingJudge: SQLite cache in front of any judge."""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from openai_fixtures import (  # (fixtures are used by name)
    TEST_KEY,
    FakeResponse,
    _server_module,
    fake_openai,
    make_judge,
    sample_answer,
    smart_reply,
)
from timing import guard
from tolerances import close

from pipeline.judges.base import BaseJudge, Judge
from pipeline.judges.cache import CachingJudge, cache_key, default_cache_path
from pipeline.records import Answer, Source, Statement, Verdict

REPO = Path(__file__).resolve().parents[3]


class ScriptedJudge(BaseJudge):
    """A trivial judge: fixed labels, counts its calls. Declares no key material (the widest, from
    BaseJudge), except in `DeclaringJudge` below."""

    def __init__(self, name: str = "scripted", prompt_version: str = "v1", temperature: float = 0.0, seed: int | None = None, fail: bool = False):
        self.name = name
        self.prompt_version = prompt_version
        self.temperature = temperature
        self.seed = seed
        self.fail = fail
        self.calls = 0
        self._lock = threading.Lock()

    def _v(self, answer, kind, label, **kw):
        with self._lock:
            self.calls += 1
        raw = "boom" if self.fail else f"{kind}:{label}:{self.calls}"
        return Verdict(answer.answer_id, kind, None if self.fail else label, self.name, self.prompt_version, raw=raw,
                       error="call" if self.fail else "", **kw)

    def relevance(self, answer, statements):
        return [dataclasses.replace(self._v(answer, "relevance", "relevant"), statement_index=s.index) for s in statements]

    def stance(self, answer, statements):
        return [dataclasses.replace(self._v(answer, "stance", "neutral"), statement_index=s.index) for s in statements]

    def confidence(self, answer):
        return self._v(answer, "confidence", "3")

    def support(self, answer, statements, source):
        return [
            dataclasses.replace(self._v(answer, "support", "partial"), statement_index=s.index, source_index=source.index,
                                score=0.5, evidence="some passage")
            for s in statements
        ]


class DeclaringJudge(ScriptedJudge):
    """Declares that its support verdicts read only the statements' texts and the source's text."""

    def cache_material(self, method, answer, statements, sources):
        if method == "support":
            return [[[s.text for s in statements], src.text] for src in sources]
        return super().cache_material(method, answer, statements, sources)


def run_all(judge, answer, statements):
    out = list(judge.relevance(answer, statements))
    out += judge.stance(answer, statements)
    out.append(judge.confidence(answer))
    for source in answer.sources:
        out += judge.support(answer, statements, source)
    return out


# ---------------------------------------------------------------- with the real OpenAI judge


def test_rerun_makes_zero_requests(make_judge, fake_openai, tmp_path):
    db = tmp_path / "judges.sqlite"
    answer, statements = sample_answer(4)
    fake_openai.handler = smart_reply()
    first = CachingJudge(make_judge(), db)
    assert isinstance(first, Judge)
    v1 = run_all(first, answer, statements)
    n_requests = len(fake_openai.chat_requests)
    assert n_requests == 5  # relevance, stance, confidence, 2 sources
    assert first.misses == 5 and first.hits == 0
    first.close()

    second = CachingJudge(make_judge(), db)  # new process-like start: new judge, new wrapper
    v2 = run_all(second, answer, statements)
    assert len(fake_openai.chat_requests) == n_requests  # zero new requests
    assert second.hits == 5 and second.misses == 0
    assert v1 == v2 and all(type(v) is Verdict for v in v2)


def test_call_failures_are_not_cached_but_parse_failures_are(make_judge, fake_openai, tmp_path):
    cache = CachingJudge(make_judge(max_retries=0), tmp_path / "c.sqlite")
    answer, statements = sample_answer(2)
    fake_openai.enqueue(FakeResponse(status=503))
    failed = cache.relevance(answer, statements)
    assert failed[0].label is None and failed[0].error == "call"
    assert len(cache) == 0
    fake_openai.enqueue("garbage", "more garbage")
    unparsable = cache.relevance(answer, statements)
    assert unparsable[0].label is None and unparsable[0].error == "parse"
    before = len(fake_openai.chat_requests)
    assert cache.relevance(answer, statements) == unparsable
    assert len(fake_openai.chat_requests) == before and cache.hits == 1


def test_sampling_openai_judge_is_not_cached(make_judge, fake_openai, tmp_path):
    fake_openai.handler = smart_reply()
    answer, statements = sample_answer(1)
    sampling = CachingJudge(make_judge(temperature=0.8), tmp_path / "c.sqlite")
    sampling.relevance(answer, statements)
    sampling.relevance(answer, statements)
    assert len(fake_openai.chat_requests) == 2 and sampling.bypassed == 2 and len(sampling) == 0
    seeded = CachingJudge(make_judge(temperature=0.8, seed=3), tmp_path / "c.sqlite")
    seeded.relevance(answer, statements)
    seeded.relevance(answer, statements)
    assert len(fake_openai.chat_requests) == 3 and seeded.hits == 1


def test_no_api_key_in_cache_file(make_judge, fake_openai, tmp_path):
    db = tmp_path / "c.sqlite"
    fake_openai.handler = lambda req: json.dumps({"results": [{"id": 1, "label": "core", "note": f"key {TEST_KEY}"}]})
    cache = CachingJudge(make_judge(), db)
    answer, statements = sample_answer(1)
    cache.relevance(answer, statements)
    cache.close()
    blob = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("c.sqlite"))
    assert TEST_KEY.encode() not in blob and b"DoNotLeak" not in blob
    assert "openai:fake-model".encode() in blob  # the cache did store something


# ---------------------------------------------------------------- keys


def test_different_prompt_version_gives_different_key():
    answer, statements = sample_answer(2)
    a = cache_key(ScriptedJudge(prompt_version="v1"), "relevance", answer, statements)
    b = cache_key(ScriptedJudge(prompt_version="v2"), "relevance", answer, statements)
    c = cache_key(ScriptedJudge(name="other"), "relevance", answer, statements)
    d = cache_key(ScriptedJudge(), "stance", answer, statements)
    assert len({a, b, c, d}) == 4


def test_key_depends_on_inputs_only():
    answer, statements = sample_answer(2)
    judge = ScriptedJudge()
    base = cache_key(judge, "support", answer, statements, answer.sources[0])
    assert base == cache_key(ScriptedJudge(), "support", answer, statements, answer.sources[0])
    other_source = dataclasses.replace(answer.sources[0], text=answer.sources[0].text + " more")
    assert base != cache_key(judge, "support", answer, statements, other_source)
    other_statements = [dataclasses.replace(statements[0], text="changed")] + statements[1:]
    assert base != cache_key(judge, "support", answer, other_statements, answer.sources[0])
    other_query = dataclasses.replace(answer, query="Another question?")
    assert base != cache_key(judge, "support", other_query, statements, answer.sources[0])
    renamed = dataclasses.replace(answer, answer_id="zzz", engine="other")
    assert base == cache_key(judge, "support", renamed, statements, answer.sources[0])


def test_openai_judge_settings_change_the_key(make_judge):
    answer, statements = sample_answer(1)
    keys = {
        cache_key(make_judge(), "relevance", answer, statements),
        cache_key(make_judge(model="other-model"), "relevance", answer, statements),
        cache_key(make_judge(max_passage_chars=1234), "relevance", answer, statements),
        cache_key(make_judge(seed=5), "relevance", answer, statements),
    }
    assert len(keys) == 4
    assert cache_key(make_judge(), "relevance", answer, statements) == cache_key(make_judge(timeout=9), "relevance", answer, statements)


def test_two_wrapper_instances_share_entries(tmp_path):
    db = tmp_path / "c.sqlite"
    answer, statements = sample_answer(3)
    inner = ScriptedJudge()
    one, two = CachingJudge(inner, db), CachingJudge(inner, db)
    v1 = run_all(one, answer, statements)
    calls = inner.calls
    v2 = run_all(two, answer, statements)
    assert inner.calls == calls and v1 == v2
    assert two.hits == 5 and one.misses == 5


# ---------------------------------------------------------------- behaviour with a scripted judge


def test_scripted_judge_cached_and_identical(tmp_path):
    inner = ScriptedJudge()
    cache = CachingJudge(inner, tmp_path / "c.sqlite")
    answer, statements = sample_answer(3)
    first = run_all(cache, answer, statements)
    assert inner.calls == 3 + 3 + 1 + 3 * 2
    again = run_all(cache, answer, statements)
    assert again == first and inner.calls == 13
    assert cache.stats == {"hits": 5, "misses": 5, "bypassed": 0}
    assert again[6].score is None and again[7].score == close(0.5) and again[7].evidence == "some passage"


def test_sampling_scripted_judge_bypasses(tmp_path):
    inner = ScriptedJudge(temperature=1.0)
    cache = CachingJudge(inner, tmp_path / "c.sqlite")
    answer, statements = sample_answer(1)
    cache.confidence(answer)
    cache.confidence(answer)
    assert inner.calls == 2 and cache.bypassed == 2 and len(cache) == 0


def test_failed_results_are_not_stored(tmp_path):
    inner = ScriptedJudge(fail=True)
    cache = CachingJudge(inner, tmp_path / "c.sqlite")
    answer, statements = sample_answer(2)
    cache.support(answer, statements, answer.sources[0])
    cache.support(answer, statements, answer.sources[0])
    assert inner.calls == 4 and len(cache) == 0


def test_hit_for_same_text_under_other_ids_gets_its_own_ids(tmp_path):
    inner = DeclaringJudge()
    cache = CachingJudge(inner, tmp_path / "c.sqlite")
    answer, statements = sample_answer(2)
    cache.support(answer, statements, answer.sources[0])
    twin = dataclasses.replace(answer, answer_id="twin", sources=(dataclasses.replace(answer.sources[0], index=7),))
    twin_statements = [Statement("twin", s.index + 10, s.text) for s in statements]
    got = cache.support(twin, twin_statements, twin.sources[0])
    assert inner.calls == 2 and cache.hits == 1
    assert [(v.answer_id, v.statement_index, v.source_index) for v in got] == [("twin", 10, 7), ("twin", 11, 7)]


def test_undeclared_material_covers_every_input(tmp_path):
    # a judge that declares nothing is keyed by every input it is given: the same text under another
    # source number, another citation or another fetch status is a miss, never a borrowed verdict
    inner = ScriptedJudge()
    cache = CachingJudge(inner, tmp_path / "c.sqlite")
    answer, statements = sample_answer(2)
    cache.support(answer, statements, answer.sources[0])
    renumbered = dataclasses.replace(answer.sources[0], index=7)
    cache.support(dataclasses.replace(answer, sources=(renumbered, *answer.sources[1:])), statements, renumbered)
    cited = [dataclasses.replace(s, citations=(2,)) for s in statements]
    cache.support(answer, cited, answer.sources[0])
    dead = dataclasses.replace(answer.sources[1], fetch_ok=False)
    cache.support(dataclasses.replace(answer, sources=(answer.sources[0], dead)), statements, answer.sources[0])
    assert cache.hits == 0 and cache.misses == 4
    cache.support(dataclasses.replace(answer, answer_id="other", engine="other engine"), statements, answer.sources[0])
    assert cache.hits == 1  # the answer's id and engine are where it came from, not what it says


def test_threads_share_one_cache(tmp_path):
    inner = ScriptedJudge()
    cache = CachingJudge(inner, tmp_path / "c.sqlite")
    answer, statements = sample_answer(2)
    variants = [dataclasses.replace(answer, query=f"Question {i}?") for i in range(8)]
    errors: list[BaseException] = []

    def work(a: Answer) -> None:
        try:
            for _ in range(3):
                cache.relevance(a, statements)
                cache.support_many(a, statements, a.sources)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(v,)) for v in variants]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(cache) == 8 * 3  # relevance + 2 sources per variant
    assert cache.hits + cache.misses == 8 * 3 * 3


def test_wal_mode_and_second_process_reads(tmp_path):
    db = tmp_path / "c.sqlite"
    cache = CachingJudge(ScriptedJudge(), db)
    answer, statements = sample_answer(2)
    cache.relevance(answer, statements)
    mode = sqlite3.connect(db).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode.lower() == "wal"
    code = (
        "import sys, dataclasses; sys.path[:0] = sys.argv[2:5];"
        "from pathlib import Path; from pipeline.judges.cache import CachingJudge;"
        "from test_judge_cache import ScriptedJudge; from openai_fixtures import sample_answer;"
        "inner = ScriptedJudge(); c = CachingJudge(inner, Path(sys.argv[1]));"
        "a, s = sample_answer(2); c.relevance(a, s); c.confidence(a);"
        "print(inner.calls, c.hits, c.misses)"
    )
    # the project, the shared helpers (tests/) and this file's own folder, wherever the file sits
    # (os.path here: the layout script re-aims `Path(__file__)` chains at the same place when it moves a file)
    out = subprocess.run([sys.executable, "-c", code, str(db), str(REPO), str(REPO / "tests"), os.path.dirname(os.path.abspath(__file__))],
                         capture_output=True, text=True, timeout=guard(60))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "1", "1"]  # relevance hit, confidence computed in the child
    assert len(cache) == 2  # the parent sees the child's write


def test_default_path_follows_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cachedir"))
    assert default_cache_path() == tmp_path / "cachedir" / "judges.sqlite"
    cache = CachingJudge(ScriptedJudge())
    assert cache.path == tmp_path / "cachedir" / "judges.sqlite" and cache.path.exists()
    assert cache.name == "scripted" and cache.prompt_version == "v1" and cache.temperature == 0.0
