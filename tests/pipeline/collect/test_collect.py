"""`aee collect` against the fake engine server (127.0.0.1): every answer saved once, retries on 429,
5xx and timeouts, resume after an interruption without asking a saved query again, keys in no
file written and in no message, query sets, and pages fetched for `--sources fetch`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from timing import SLOWDOWN, guard

from pipeline.cli import main as cli_main
from pipeline.collect.client import Backoff
from pipeline.collect.queries import LIU_SETS, load_queries
from pipeline.collect.run import CollectConfig, answer_file_id, collect
from pipeline.errors import InputError
from pipeline.importers.engines import iter_answers
from pipeline.storage.store import result_set
from pipeline.testing.fake_engines import FakeEngineServer

ROOT = Path(__file__).resolve().parents[3]
KEY = "sk-test-Zq81mXKEYSECRET0042"
ENGINES = {"perplexity": "PERPLEXITY_API_KEY", "openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY",
           "gemini": "GEMINI_API_KEY", "you": "YDC_API_KEY", "exa": "EXA_API_KEY"}
FAST = Backoff(base=0.01, cap=0.05, attempts=5)
# the client's timeout: a local reply takes milliseconds, so 0.6 s on a quiet machine, more on a loaded one
CLIENT_TIMEOUT = 0.6 * SLOWDOWN


@pytest.fixture
def server(monkeypatch, tmp_path):
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("AEE_SHARED_DIR", "/work/shared" if Path("/work/shared").is_dir() else str(ROOT.parent / "shared"))
    with FakeEngineServer(expected_key=KEY) as srv:
        for engine, key_var in ENGINES.items():
            monkeypatch.setenv(f"AEE_COLLECT_{engine.upper()}_BASE_URL", srv.base_url)
            monkeypatch.setenv(key_var, KEY)
        yield srv


def queries_file(tmp_path: Path, n: int = 50) -> Path:
    path = tmp_path / "queries.jsonl"
    path.write_text("".join(json.dumps({"query": f"Should question {k} be asked?", "query_type": "debate"}) + "\n"
                            for k in range(n)), encoding="utf-8")
    return path


def all_text(folder: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in folder.rglob("*") if p.is_file())


def test_fifty_queries_with_429_5xx_and_timeouts(server, tmp_path):
    qs = queries_file(tmp_path)
    server.add_fault(lambda q: q == "Should question 3 be asked?", status=429, retry_after="0", times=2)
    server.add_fault(lambda q: q == "Should question 8 be asked?", status=503, times=1)
    server.add_fault(lambda q: q == "Should question 9 be asked?", status=529, times=1)
    server.add_fault(lambda q: q == "Should question 21 be asked?", delay=2 * CLIENT_TIMEOUT, times=1)  # longer than the timeout
    out = tmp_path / "out"
    report = collect(CollectConfig("perplexity", str(qs), out, timeout=CLIENT_TIMEOUT, backoff=FAST, concurrency=4, progress=False))
    assert (report.queries, report.captured, report.failed, report.rejected) == (50, 50, 0, 0)
    assert report.retries == {"429": 2, "5xx": 2, "timeout": 1}
    assert report.requests == 55 == len(server.requests)
    asked = Counter(r.query for r in server.requests)
    assert asked["Should question 3 be asked?"] == 3 and asked["Should question 21 be asked?"] == 2
    assert sum(1 for q, n in asked.items() if n == 1) == 46
    files = sorted(p for p in out.glob("perplexity-*.json"))
    assert len(files) == 50
    env = json.loads(files[0].read_text())
    assert set(env) >= {"query", "query_type", "engine", "format", "model", "captured_at", "request", "response", "collector"}
    assert env["collector"]["file_id"] == files[0].stem and "id" not in env
    assert env["request"] == {"model": "sonar", "messages": [{"role": "user", "content": env["query"]}]}
    assert KEY not in all_text(out)
    answers = list(iter_answers(out))
    assert len(answers) == 50 and all(a.answer.query_type == "debate" and a.answer.engine == "perplexity:sonar" for a in answers)
    # a rerun asks nothing: every answer is on disk
    again = collect(CollectConfig("perplexity", str(qs), out, backoff=FAST, progress=False))
    assert (again.already, again.asked, len(server.requests)) == (50, 0, 55)


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_every_engine_is_collected_and_imports(server, tmp_path, engine):
    out = tmp_path / engine
    report = collect(CollectConfig(engine, str(queries_file(tmp_path, 3)), out, backoff=FAST, progress=False))
    assert report.captured == 3
    answers = list(iter_answers(out))
    assert [len(a.statements) for a in answers] == [2, 2, 2]
    assert all(a.statements[1].text.startswith("A second claim") for a in answers)
    if engine != "exa":  # Exa cites at the answer level
        assert all([s.citations for s in a.statements] == [(1,), (2,)] for a in answers)
    assert KEY not in all_text(out)
    assert all(KEY not in json.dumps(r.body) for r in server.requests)  # the key travels in a header only


def test_refused_key_stops_the_run_and_is_never_repeated(server, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PERPLEXITY_API_KEY", "sk-wrong-key-ABCDEFGH123")
    out = tmp_path / "out"
    code = cli_main(["collect", "--engine", "perplexity", "--queries", str(queries_file(tmp_path, 10)), "--out", str(out),
                     "--no-progress", "--concurrency", "1"])
    captured = capsys.readouterr()
    assert code == 2
    assert "refused" in captured.err and "401" in captured.err
    assert "sk-wrong-key-ABCDEFGH123" not in captured.err + captured.out + all_text(out)
    assert len(server.requests) == 1  # stopped at the first refusal


def test_dry_run_sends_nothing(server, tmp_path, capsys):
    qs = queries_file(tmp_path, 12)
    out = tmp_path / "out"
    collect(CollectConfig("anthropic", str(qs), out, limit=2, backoff=FAST, progress=False))
    n = len(server.requests)
    assert cli_main(["collect", "--engine", "anthropic", "--queries", str(qs), "--out", str(out), "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert "12 queries to consider, 2 already collected" in text and "10 to ask (10 debate, 0 expertise)" in text
    assert "estimated cost: $0.45 (10 x $0.045" in text and "key: found" in text
    assert len(server.requests) == n and KEY not in text


def test_unreadable_answer_is_kept_apart_and_not_asked_again(server, tmp_path):
    qs = queries_file(tmp_path, 4)
    server.add_fault(lambda q: q == "Should question 2 be asked?", body={"choices": [{"message": {"content": ""}}]})
    out = tmp_path / "out"
    report = collect(CollectConfig("perplexity", str(qs), out, backoff=FAST, progress=False))
    assert (report.captured, report.rejected) == (3, 1)
    assert len(list((out / "_rejected").glob("*.json"))) == 1 and len(list(iter_answers(out))) == 3
    again = collect(CollectConfig("perplexity", str(qs), out, backoff=FAST, progress=False))
    assert again.asked == 0


def test_sources_fetch_stores_pages_and_dead_sources(server, tmp_path, results_root):
    qs = queries_file(tmp_path, 3)
    out = tmp_path / "out"
    collect(CollectConfig("you", str(qs), out, backoff=FAST, progress=False))  # snippets first
    assert {s.text_origin for a in iter_answers(out) for s in a.answer.sources} == {"snippet"}
    n = len(server.requests)
    report = collect(CollectConfig("you", str(qs), out, backoff=FAST, progress=False, sources="fetch",
                                   fetch_allow_hosts=(f"127.0.0.1:{urlsplit(server.base_url).port}",)))
    assert report.asked == 0 and len(server.requests) == n  # pages added without asking the engine again
    assert report.pages_fetched == 6
    answers = list(iter_answers(out))
    assert {(s.fetch_ok, s.text_origin) for a in answers for s in a.answer.sources} == {(True, "page")}
    assert "first claim holds" in answers[0].answer.sources[0].text
    assert {a.answer.meta["sources"] for a in answers} == {"fetch"}
    # without permission to reach 127.0.0.1 the fetcher refuses: those sources are dead, not silently empty
    out2 = tmp_path / "out2"
    collect(CollectConfig("exa", str(qs), out2, backoff=FAST, progress=False, sources="fetch"))
    assert {(s.fetch_ok, s.text) for a in iter_answers(out2) for s in a.answer.sources} == {(False, "")}
    assert cli_main(["run", "--dataset", "fetched", "--path", str(out), "--judge", "recorded", "--no-progress"]) == 0
    manifest = json.loads((result_set("fetched", results_root) / "recorded" / "manifest.json").read_text())
    assert manifest["config"]["sources"] == {"fetch": 3} and manifest["config"]["formats"] == {"you": 3}


# ---- interrupted and resumed, in a real process --------------------------------------------------


def _start(qs: Path, out: Path, base: str, tmp_path: Path) -> subprocess.Popen:
    env = {**os.environ, "AEE_COLLECT_PERPLEXITY_BASE_URL": base, "PERPLEXITY_API_KEY": KEY,
           "AEE_CACHE_DIR": str(tmp_path / "cache"), "AEE_RESULTS_DIR": str(tmp_path / "results")}
    return subprocess.Popen([sys.executable, "-m", "pipeline", "collect", "--engine", "perplexity", "--queries", str(qs),
                             "--out", str(out), "--concurrency", "3", "--no-progress", "--backoff", "0.01"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_files(out: Path, n: int, proc: subprocess.Popen, timeout: float | None = None) -> None:
    deadline = time.monotonic() + (timeout or guard(60))
    while time.monotonic() < deadline and proc.poll() is None:
        if out.is_dir() and len(list(out.glob("perplexity-*.json"))) >= n:
            return
        time.sleep(0.02)
    raise AssertionError(f"collect did not write {n} files in time (exit {proc.poll()})")


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_killed_midway_and_resumed(server, tmp_path, how):
    server.delay = 0.08
    qs = queries_file(tmp_path, 50)
    out = tmp_path / "out"
    proc = _start(qs, out, server.base_url, tmp_path)
    _wait_for_files(out, 15, proc)
    proc.send_signal(getattr(signal, how))
    stdout, stderr = proc.communicate(timeout=guard(60))
    saved_at_stop = {json.loads(p.read_text())["query"] for p in out.glob("perplexity-*.json")}
    asked_at_stop = Counter(r.query for r in server.requests)
    assert 15 <= len(saved_at_stop) < 50
    if how == "SIGTERM":  # graceful: what was in flight was finished and saved
        assert proc.returncode == 130 and "interrupted" in stderr
        assert set(asked_at_stop) == saved_at_stop
    else:  # killed outright: at most the requests in flight (3) were lost
        assert len(set(asked_at_stop) - saved_at_stop) <= 3
    if how == "SIGTERM":
        assert not list(out.glob(".*.tmp"))  # no half-written file (a SIGKILL may leave one: the next run removes it)
    resumed = _start(qs, out, server.base_url, tmp_path)
    stdout, stderr = resumed.communicate(timeout=guard(120))
    assert resumed.returncode == 0, stderr
    assert not list(out.glob(".*.tmp"))
    asked = Counter(r.query for r in server.requests)
    assert len(list(out.glob("perplexity-*.json"))) == 50 == len(asked)
    assert all(asked[q] == 1 for q in saved_at_stop)  # nothing saved was asked again
    twice = {q for q, n in asked.items() if n > 1}
    assert (twice == set()) if how == "SIGTERM" else (len(twice) <= 3 and not twice & saved_at_stop)
    assert KEY not in all_text(out) + stdout + stderr


# ---- query sets ----------------------------------------------------------------------------------


def test_query_sets(tmp_path, monkeypatch):
    monkeypatch.setenv("AEE_SHARED_DIR", "/work/shared")
    if not Path("/work/shared/data/liu2023").is_dir():
        pytest.skip("Liu et al. sets not in ../shared")
    debate = load_queries("liu:debate")
    # 1,000 lines, one question twice ("Should capital punishment be abolished?"): asked once
    assert len(debate) == 999 and debate[0].query == "Should countries put a tax on products that harm the environment?"
    assert {q.query_type for q in debate} == {"debate"}
    allsouls = load_queries("liu:allsouls", "expertise")
    assert len(allsouls) == 999 and allsouls[0].query == "Are modern politicians merely managers?" and allsouls[0].query_id == "1"
    assert {q.query_type for q in allsouls} == {"expertise"}
    csv_path = tmp_path / "q.csv"
    csv_path.write_text("query,query_type\nWhy is the sky blue?,expertise\nShould zoos exist?,debate\nWhy is the sky blue?,\n")
    assert [(q.query, q.query_type) for q in load_queries(str(csv_path))] == [("Why is the sky blue?", "expertise"),
                                                                             ("Should zoos exist?", "debate")]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query": "ok?"}\n{"query_type": "debate"}\n')
    with pytest.raises(InputError, match="bad.jsonl:2"):
        load_queries(str(bad))
    with pytest.raises(InputError, match="liu:debate or liu:allsouls"):
        load_queries("liu:nope")


def test_liu_set_downloads_once_and_checks_the_pinned_hash(tmp_path, monkeypatch):
    """Without ../shared the set comes from the pinned URL (here a local server), kept only when its
    SHA-256 matches."""
    import http.server
    import threading

    from pipeline.collect import queries

    source = Path("/work/shared/data/liu2023/davinci-debate-1k.jsonl")
    if not source.is_file():
        pytest.skip("Liu et al. sets not in ../shared")
    served = {"/c/davinci_debate/davinci-debate-1k.jsonl": source.read_bytes(), "/c/allsouls/allsouls.jsonl": b'{"prompt_text": "x"}\n'}

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):  # noqa: N802
            data = served.get(self.path, b"")
            self.send_response(200 if data else 404)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("AEE_SHARED_DIR", str(tmp_path / "no-shared"))
        monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
        monkeypatch.setattr(queries, "LIU_REPO", f"http://127.0.0.1:{httpd.server_address[1]}")
        monkeypatch.setattr(queries, "LIU_COMMIT", "c")
        assert len(load_queries("liu:debate")) == 999
        assert (tmp_path / "cache" / "liu2023" / LIU_SETS["debate"].file).is_file()
        with pytest.raises(InputError, match="pinned SHA-256"):
            load_queries("liu:allsouls")
        assert not (tmp_path / "cache" / "liu2023" / "allsouls.jsonl").exists()
    finally:
        httpd.shutdown()


def test_base_url_with_a_version_segment_and_an_odd_model_name():
    from pipeline.collect.providers import PROVIDERS, Endpoint

    openai = Endpoint(PROVIDERS["openai"], "https://proxy.example/v1", None)
    assert openai.url(PROVIDERS["openai"].request("q", "m")[0]) == "https://proxy.example/v1/responses"
    gemini = Endpoint(PROVIDERS["gemini"], "https://g.example", None)
    path = PROVIDERS["gemini"].request("q", "gemini-x/../../other?key=1")[0]
    assert gemini.url(path) == "https://g.example/v1beta/models/gemini-x%2F..%2F..%2Fother%3Fkey%3D1:generateContent"


def test_answer_ids_are_per_engine_model_and_query():
    a = answer_file_id("perplexity", "sonar", "Why?")
    assert a == answer_file_id("perplexity", "sonar", "Why?") and a.startswith("perplexity-")
    assert len({a, answer_file_id("perplexity", "sonar-pro", "Why?"), answer_file_id("exa", "sonar", "Why?")}) == 3


def test_a_bad_fetch_allow_host_is_one_line_and_exit_2(tmp_path, capsys):
    from pipeline.cli import main

    qs = queries_file(tmp_path, 1)
    code = main(["collect", "--engine", "you", "--queries", str(qs), "--out", str(tmp_path / "o"), "--dry-run",
                 "--fetch-allow-host", "127.0.0.1:99999"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "field '--fetch-allow-host'" in err and "HOST:PORT" in err


# ---- concurrency across answers, shared rate limits, kill and resume at scale --------------------


def test_a_429_pauses_every_worker_for_its_retry_after(server, tmp_path):
    server.delay = 0.02
    server.add_fault(lambda q: q == "Should question 5 be asked?", status=429, retry_after="0.5", times=1)
    report = collect(CollectConfig("gemini", str(queries_file(tmp_path, 24)), tmp_path / "out", concurrency=4, progress=False,
                                   backoff=Backoff(base=0.01, cap=2.0, attempts=5)))  # Retry-After honoured up to 2 s
    assert (report.captured, report.rate_pauses, report.retries) == (24, 1, {"429": 1})
    log = sorted(server.requests, key=lambda r: r.at)
    refused = next(r.at for r in log if r.status == 429)
    # at most the three requests already in flight when the 429 came back reach the server in the pause
    during = [r for r in log if refused < r.at < refused + 0.4]
    assert len(during) <= 3, [round(r.at - refused, 3) for r in during]
    assert any(r.at >= refused + 0.45 for r in log)


def test_requests_per_minute_spaces_request_starts(server, tmp_path):
    """600 a minute is a slot every 0.1 s. A busy machine can only make a request arrive later than its
    slot, never earlier, so the k-th arrival comes at least k slots after the run began; gaps between
    neighbouring arrivals are not compared (a worker woken late lets the next slot overtake it)."""
    began = time.monotonic()
    report = collect(CollectConfig("exa", str(queries_file(tmp_path, 8)), tmp_path / "out", backoff=FAST, concurrency=4,
                                   requests_per_minute=600, progress=False))
    assert report.captured == 8
    starts = sorted(r.at for r in server.requests)
    late = [round(at - began, 3) for k, at in enumerate(starts) if at - began < k * 0.1 - 0.005]
    assert not late, late  # 0.005 s: the clock's resolution


def test_the_rate_gate_hands_out_slots_one_interval_apart(monkeypatch):
    """The gate's own promise, on a clock the test moves: eight workers asking at once get slots
    0.1 s apart, and a 429's pause pushes the next slot past it."""
    from pipeline.collect import client

    now = [100.0]
    slept: list[float] = []
    monkeypatch.setattr(client.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(client.time, "sleep", slept.append)
    gate = client.RateGate(600)
    for _ in range(8):
        assert gate.wait()
    assert slept[0] == pytest.approx(0.1, abs=1e-9) and len(slept) == 7
    assert [round(s, 9) for s in slept] == [round(0.1 * k, 9) for k in range(1, 8)]
    gate.pause(2.0)
    slept.clear()
    assert gate.wait()
    assert slept == [pytest.approx(2.0, abs=1e-9)] and gate.pauses == 1


def test_dry_run_states_the_pace(server, tmp_path, capsys):
    qs = queries_file(tmp_path, 30)
    assert cli_main(["collect", "--engine", "perplexity", "--queries", str(qs), "--out", str(tmp_path / "o"), "--dry-run",
                     "--rpm", "50", "--concurrency", "4"]) == 0
    text = capsys.readouterr().out
    assert "estimated cost: $0.18 (30 x $0.006" in text
    assert "at most 4 request(s) in flight, at most 50 a minute (at least 0.6 min)" in text
    assert len(server.requests) == 0


def test_two_hundred_answers_killed_and_resumed_at_concurrency_four(server, tmp_path):
    """200 queries at --concurrency 4; the run is killed outright partway and started again: every
    answer is saved exactly once, none lost, and only requests in flight at the kill were asked twice."""
    server.delay = 0.015
    qs = queries_file(tmp_path, 200)
    out = tmp_path / "out"
    env = {**os.environ, "AEE_COLLECT_PERPLEXITY_BASE_URL": server.base_url, "PERPLEXITY_API_KEY": KEY,
           "AEE_CACHE_DIR": str(tmp_path / "cache"), "AEE_RESULTS_DIR": str(tmp_path / "results")}
    cmd = [sys.executable, "-m", "pipeline", "collect", "--engine", "perplexity", "--queries", str(qs), "--out", str(out),
           "--concurrency", "4", "--no-progress", "--backoff", "0.01"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for_files(out, 60, proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=guard(60))
    saved = {p.stem for p in out.glob("perplexity-*.json")}
    assert 60 <= len(saved) < 200
    resumed = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=guard(300))
    assert resumed.returncode == 0, resumed.stderr
    files = sorted(out.glob("perplexity-*.json"))
    queries = [json.loads(p.read_text())["query"] for p in files]
    expected = {f"Should question {k} be asked?" for k in range(200)}
    assert len(files) == 200 and set(queries) == expected and len(set(queries)) == 200  # none lost, none twice
    assert all(p.stem == answer_file_id("perplexity", "sonar", q) for p, q in zip(files, queries))
    asked = Counter(r.query for r in server.requests if r.status == 200)
    twice = {q for q, n in asked.items() if n > 1}
    assert len(twice) <= 4 and not any(answer_file_id("perplexity", "sonar", q) in saved for q in twice)
    answers = list(iter_answers(out))
    assert len({a.answer.answer_id for a in answers}) == 200
    assert not list(out.glob(".*.tmp"))


def test_a_capture_and_the_same_response_exported_by_hand_import_alike(server, tmp_path):
    """What `aee collect` saved and the provider's JSON saved by hand (bare, or in a hand-written
    envelope) give the same records: ids, engine, text, sources, statements and their citations."""
    import dataclasses

    from pipeline.importers.engines import ImportOptions

    for engine in ("perplexity", "openai", "anthropic", "gemini", "you", "exa"):
        out = tmp_path / engine
        collect(CollectConfig(engine, str(queries_file(tmp_path, 1)), out, backoff=FAST, progress=False))
        (capture,) = out.glob(f"{engine}-*.json")
        envelope = json.loads(capture.read_text())
        by_hand = tmp_path / f"{engine}-export.json"
        by_hand.write_text(json.dumps(envelope["response"], indent=2))  # what a person saves from the API
        written = tmp_path / f"{engine}-envelope.json"
        written.write_text(json.dumps({"query": envelope["query"], "engine": engine, "query_type": "debate",
                                       "response": envelope["response"]}))
        (a,) = iter_answers(capture)
        (b,) = iter_answers(by_hand, None, ImportOptions(query=envelope["query"], query_type="debate"))
        (c,) = iter_answers(written)
        provenance = ("captured_at", "request", "source_file", "requested_model")  # what was asked: the envelope says it
        for other in (b, c):
            strip = {k: v for k, v in a.answer.meta.items() if k not in provenance}
            assert {k: v for k, v in other.answer.meta.items() if k not in provenance} == strip, engine
            # the engine is what was asked for (the capture's model); a response saved without its
            # request can only say what answered (the reply's model, which may name a dated version)
            asked, replied = envelope["model"], a.answer.meta.get("model", "")
            assert a.answer.engine == (f"{engine}:{asked}" if asked else f"{engine}:{replied}" if replied else engine), engine
            assert other.answer.engine == (f"{engine}:{replied}" if replied else engine), engine
            assert (dataclasses.replace(other.answer, meta={}, dataset="", engine="")
                    == dataclasses.replace(a.answer, meta={}, dataset="", engine="")), engine
            assert other.statements == a.statements, engine


def test_timeout_is_a_total_deadline_for_a_trickling_reply():
    """Issue 31: a reply trickling a byte every 0.2 s (each read well within the timeout) was held
    60 s with --timeout 3; now the whole reply is cut at the timeout."""
    import threading

    from pipeline.collect.client import post_json
    from pipeline.testing.stub_server import StubRequest, StubServer

    class Trickle(StubServer):
        def handle_post(self, request: StubRequest) -> None:
            request.read_body()
            body = b'{"choices": [' + b" " * 200 + b"]}"
            try:
                request.send_response(200)
                request.send_header("Content-Type", "application/json")
                request.send_header("Content-Length", str(len(body)))
                request.end_headers()
                for byte in body:
                    request.wfile.write(bytes([byte]))
                    request.wfile.flush()
                    time.sleep(0.2)
            except OSError:
                pass

    with Trickle() as srv:
        started = time.monotonic()
        result = post_json(f"http://127.0.0.1:{srv.port}/chat/completions", {}, {"q": 1}, timeout=1.5,
                           backoff=Backoff(base=0.01, cap=0.01, attempts=2), stop=threading.Event())
        elapsed = time.monotonic() - started
    assert not result.ok and result.error == "no full reply within 1.5 s", result.error
    assert result.retries == {"timeout": 1} and result.attempts == 2
    assert elapsed < 15, elapsed  # two attempts of 1.5 s each, far below the 40 s the trickle would take


def _unreadable_replies(server) -> None:
    """Questions 1 and 2 get replies that cannot be saved and read back: one holding NaN, one a lone
    surrogate."""
    from pipeline.testing.fake_engines import fake_answer

    nan_reply = fake_answer("/chat/completions", "Should question 1 be asked?", server.base_url)
    nan_reply["usage"] = {"cost": float("nan")}
    surrogate_reply = fake_answer("/chat/completions", "Should question 2 be asked?", server.base_url)
    surrogate_reply["choices"][0]["message"]["content"] += " \ud800"
    server.add_fault(lambda q: q == "Should question 1 be asked?", body=nan_reply, times=5)
    server.add_fault(lambda q: q == "Should question 2 be asked?", body=surrogate_reply, times=5)


def test_a_reply_that_cannot_be_read_back_is_rejected_once_not_saved_and_not_asked_again(server, tmp_path, capsys,
                                                                                         monkeypatch):
    """Issue 31: a reply holding NaN was saved as captured (then `aee run --path` refused the whole
    folder); one holding a lone surrogate failed and was asked (and paid for) again on every run."""
    monkeypatch.setenv("AEE_RESULTS_DIR", str(tmp_path / "results"))
    qs = queries_file(tmp_path, 4)
    _unreadable_replies(server)
    out = tmp_path / "out"
    report = collect(CollectConfig("perplexity", str(qs), out, backoff=FAST, progress=False))
    assert (report.captured, report.rejected, report.failed) == (2, 2, 0)
    reasons = sorted(f["error"] for f in report.failures)
    assert "the response cannot be saved and read back: it holds NaN or Infinity" in reasons[0]
    assert "the response cannot be saved and read back: it holds a lone surrogate (\\ud800)" in reasons[1]
    kept = [json.loads(p.read_text(encoding="utf-8")) for p in sorted((out / "_rejected").glob("*.json"))]
    assert len(kept) == 2 and {str(k["response"].get("usage")) for k in kept} >= {"{'cost': 'nan'}"}
    again = collect(CollectConfig("perplexity", str(qs), out, backoff=FAST, progress=False))
    assert (again.already, again.asked) == (4, 0)  # nothing asked (or paid for) again
    assert len(server.requests) == 4
    assert cli_main(["run", "--dataset", "readback", "--path", str(out), "--no-progress"]) == 0
    assert "2 answers" in capsys.readouterr().out


def test_each_rejected_reply_says_why_and_a_rerun_keeps_the_record(server, tmp_path, capsys):
    """Issue 31 re-check: the terminal said only "1 rejected", and a rerun wrote `failures: []` over
    the only summary of the rejection. Each rejection is now one line, and `_collect.json` keeps a
    cumulative list of every rejected reply with the folder they are kept in."""
    qs = queries_file(tmp_path, 4)
    _unreadable_replies(server)
    out = tmp_path / "out"
    command = ["collect", "--engine", "perplexity", "--queries", str(qs), "--out", str(out), "--no-progress", "--backoff", "0"]
    assert cli_main(command) == 0  # two captured, two rejected for good: nothing left to retry
    err = capsys.readouterr().err.splitlines()
    ids = {q: answer_file_id("perplexity", "sonar", f"Should question {q} be asked?") for q in (1, 2)}
    lines = [line for line in err if line.startswith("rejected ")]
    assert lines == sorted(lines) and len(lines) == 2
    assert any(line.startswith(f"rejected {ids[1]} (Should question 1 be asked?): the response cannot be saved and read "
                               "back: it holds NaN or Infinity") for line in lines), lines
    assert any(line.startswith(f"rejected {ids[2]} (Should question 2 be asked?): ") and "lone surrogate (\\ud800)" in line
               for line in lines), lines
    assert any(line.startswith("2 replies rejected: kept in ") for line in err)

    def recorded() -> dict:
        return json.loads((out / "_collect.json").read_text(encoding="utf-8"))

    first = recorded()
    assert first["rejected_dir"] == str(out / "_rejected")
    assert [r["id"] for r in first["rejected"]] == sorted(ids.values())
    assert cli_main(command) == 0  # the rerun asks nothing
    assert capsys.readouterr().err == ""
    again = recorded()
    assert again["report"]["failures"] == [] and again["rejected"] == first["rejected"]
    assert len(server.requests) == 4


def test_rejection_lines_are_bounded(server, tmp_path, capsys):
    qs = queries_file(tmp_path, 14)
    server.add_fault(lambda q: True, body={"choices": [{"message": {"content": ""}}]}, times=100)
    code = cli_main(["collect", "--engine", "perplexity", "--queries", str(qs), "--out", str(tmp_path / "out"),
                     "--no-progress", "--backoff", "0"])
    err = capsys.readouterr().err.splitlines()
    assert code == 1  # asked 14, captured none
    assert sum(line.startswith("rejected ") for line in err) == 10 and "and 4 more" in err
    assert all("the response holds no answer text" in line for line in err if line.startswith("rejected "))


@pytest.mark.parametrize(("failing", "expected"), [(0, 0), (2, 1), (5, 1)], ids=["none", "some", "all"])
def test_the_exit_code_says_whether_queries_failed(server, tmp_path, capsys, failing, expected):
    """Issue 31 re-check: every query timing out exited 0. Now 1 when any query failed (a rerun
    retries it), 0 when every query asked has its envelope; a stopped run stays 2."""
    qs = queries_file(tmp_path, 5)
    bad = {f"Should question {k} be asked?" for k in range(failing)}
    server.add_fault(lambda q: q in bad, status=500, times=100)
    code = cli_main(["collect", "--engine", "perplexity", "--queries", str(qs), "--out", str(tmp_path / "out"),
                     "--no-progress", "--retries", "0", "--backoff", "0"])
    err = capsys.readouterr().err.splitlines()
    assert code == expected
    assert sum(line.startswith("failed ") and "500" in line for line in err) == failing
