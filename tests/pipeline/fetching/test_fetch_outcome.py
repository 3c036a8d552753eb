"""Issue 32 item 3: missing source text is fetched (Re-score, `aee score`), and a failed fetch says
whose fault it is. A machine without a network never makes a dead source; dead means the site
answered that the page is gone. Every server here is a stub on 127.0.0.1; a failed name lookup or a
missing route is injected into the fetcher (nothing reaches for any other host)."""

from __future__ import annotations

import errno
import http.server
import ipaddress
import json
import re
import socket
import threading
from functools import partial

import pytest
from streamlit.testing.v1 import AppTest

import pipeline.fetching.fetch as fetch_module
import pipeline.fetching.fill_sources as fill_sources
from pipeline.cli import main
from pipeline.fetching.fetch import FetchResult, fetch_source
from pipeline.fetching.fetch_outcome import GIVE_UP_AFTER, fetch_outcomes, plain_reason
from pipeline.storage.paths import REPO_ROOT

PAGE = ("<html><head><title>Street trees</title></head><body><p>Street trees lower summer surface temperatures "
        "by several degrees in dense neighbourhoods.</p></body></html>")


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - the http.server name
        if self.path.startswith("/gone"):
            body, status = b"no such page", 404
        elif self.path.startswith("/broken"):
            body, status = b"server error", 500
        else:
            body, status = PAGE.encode(), 200
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture()
def stub():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


def _local_fetch(monkeypatch, base: str) -> None:
    """The fetcher as the app and CLI call it, allowed to reach this stub (and nothing else private)."""
    port = base.rsplit(":", 1)[1]
    allowed = partial(fetch_source, allow_hosts={f"127.0.0.1:{port}"}, cache=False)
    monkeypatch.setattr(fill_sources, "fetch_source", lambda url, **kw: allowed(url, timeout=kw.get("timeout", 10)))
    monkeypatch.setattr(fetch_module, "fetch_source", lambda url, **kw: allowed(url, timeout=kw.get("timeout", 10)))


def _no_dns(monkeypatch) -> list[str]:
    """Every name lookup fails as on a machine without a network; returns the hosts asked."""
    asked: list[str] = []

    def fail(host, port):
        asked.append(host)
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
    monkeypatch.setattr(fetch_module, "_resolve", fail)
    return asked


def _result(url, ok=False, status=None, reason=""):
    return FetchResult(url, url, ok, status, reason, "text/html" if ok else "", "", "page text" if ok else "")


# ---- the rules ---------------------------------------------------------------------------------


def test_injected_lookup_and_route_failures_read_in_plain_words(monkeypatch):
    _no_dns(monkeypatch)
    dns = fetch_source("https://example.org/a", cache=False)
    assert dns.reason.startswith("dns error") and "Errno" in dns.reason  # the low-level cause is kept...
    assert plain_reason(dns) == "the site's name could not be looked up"  # ...and never shown as is
    monkeypatch.setattr(fetch_module, "_resolve", lambda host, port: [ipaddress.ip_address("192.0.2.10")])
    monkeypatch.setattr(fetch_module, "_check_address", lambda *a: None)  # a documentation address, never contacted

    def no_route(address, timeout):
        raise OSError(errno.ENETUNREACH, "Network is unreachable")
    monkeypatch.setattr(fetch_module, "_connect", no_route)
    route = fetch_source("https://example.org/b", cache=False)
    outcome = fetch_outcomes([route.url], lambda u: route)[route.url]
    assert outcome.state == "unreachable" and outcome.why == "this machine could not reach the web"
    for r in (dns, route, _result("u", status=404, reason="http 404 Not Found"), _result("u", status=503, reason="http 503 x"),
              _result("u", reason="timeout"), _result("u", reason="refused: private address 10.0.0.1 port 80 (host x)")):
        assert not re.search(r"errno|\[|gaierror|\d{3,}\s*\]", plain_reason(r), re.I), plain_reason(r)


def test_whose_fault_over_a_batch():
    gone, page, dns = (_result("https://a/gone", status=404, reason="http 404 Not Found"),
                       _result("https://b/page", ok=True, status=200),
                       _result("https://c/x", reason="dns error: [Errno -2] Name or service not known"))
    by_url = {r.url: r for r in (gone, page, dns)}
    out = fetch_outcomes(by_url, by_url.__getitem__)
    # some site answered, so the one name that could not be looked up is that site's, not the machine's
    assert {u: o.state for u, o in out.items()} == {"https://a/gone": "gone", "https://b/page": "page", "https://c/x": "failed"}
    # nothing answered at all: every lookup failure is this machine's, and the batch stops trying early
    asked: list[str] = []
    urls = [f"https://site{k}.example/p" for k in range(5)]

    def offline(url):
        asked.append(url)
        return _result(url, reason="dns error: [Errno -3] Temporary failure in name resolution")
    out = fetch_outcomes(urls, offline)
    assert {o.state for o in out.values()} == {"unreachable"} and len(asked) == GIVE_UP_AFTER


# ---- aee score ---------------------------------------------------------------------------------


def _answer_file(tmp_path, base: str):
    obj = {"answer_id": "trees-1", "engine": "E", "query": "Do street trees cool cities?", "query_type": "expertise",
           "answer": "Street trees lower summer surface temperatures by several degrees [1]. "
                     "Shade from trees cuts the energy used for cooling [2].",
           "sources": [{"index": 1, "url": f"{base}/trees"}, {"index": 2, "url": f"{base}/gone"}]}
    path = tmp_path / "answer.json"
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


def _score_json(capsys, *args) -> tuple[dict, str]:
    capsys.readouterr()
    assert main(["score", *args, "--judge", "offline", "--json"]) == 0
    out = capsys.readouterr()
    return json.loads(out.out), out.err


def test_aee_score_fetches_missing_text_and_only_a_gone_page_is_dead(tmp_path, monkeypatch, capsys, stub):
    _local_fetch(monkeypatch, stub)
    report, err = _score_json(capsys, str(_answer_file(tmp_path, stub)), "--fetch-missing")
    sources = {s["index"]: s for s in report["sources"]}
    assert (sources[1]["fetch_ok"], sources[1]["text_origin"]) == (True, "page")
    assert sources[2]["fetch_ok"] is False  # the site answered 404: a dead source
    assert report["metrics"]["dead_source_share"]["value"] == pytest.approx(0.5, abs=1e-9)
    assert "Source 2: the site answered that the page is gone (HTTP 404); it counts as dead." in err and "Errno" not in err
    assert report["statements"][0]["status"] != "unchecked"  # the fetched page was judged


def test_aee_score_without_a_network_blames_no_source(tmp_path, monkeypatch, capsys, stub):
    _local_fetch(monkeypatch, stub)
    _no_dns(monkeypatch)
    report, err = _score_json(capsys, str(_answer_file(tmp_path, "https://trees.example.org")), "--fetch-missing")
    assert [s["fetch_ok"] for s in report["sources"]] == [None, None]
    assert [s["text_origin"] for s in report["sources"]] == ["unreachable", "unreachable"]
    assert report["metrics"]["dead_source_share"]["value"] == pytest.approx(0.0, abs=1e-9)
    assert {s["status_reason"] for s in report["statements"]} == {"not checked: this machine could not reach the web"}
    assert report["unchecked_support"]["causes"] == {"sources not reached: this machine had no network": 4}
    assert "Sources 1, 2 not checked: this machine could not reach the web." in err and "Errno" not in err


def test_aee_score_fetch_defaults_and_no_fetch(tmp_path, monkeypatch, capsys, stub):
    _local_fetch(monkeypatch, stub)
    path = str(_answer_file(tmp_path, stub))
    report, _ = _score_json(capsys, path)  # the suite sets AEE_FETCH=off: nothing fetched by default
    assert [s["fetch_ok"] for s in report["sources"]] == [None, None]
    monkeypatch.delenv("AEE_FETCH")
    report, _ = _score_json(capsys, path)  # a machine with a network fetches by default
    assert [s["fetch_ok"] for s in report["sources"]] == [True, False]
    report, _ = _score_json(capsys, path, "--no-fetch")
    assert [s["fetch_ok"] for s in report["sources"]] == [None, None]


# ---- Re-score ----------------------------------------------------------------------------------

RESCORE = str(REPO_ROOT / "pages" / "rescore.py")


def _paste(base: str) -> str:
    return ("Street trees lower summer surface temperatures by several degrees [1]. "
            f"Shade from trees cuts the energy used for cooling [2].\n\nSources:\n[1] {base}/trees\n[2] {base}/gone\n")


def _rescore(tmp_path, monkeypatch, base: str) -> AppTest:
    monkeypatch.setenv("AEE_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("AEE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("AEE_FETCH")  # the page's default: fetch
    at = AppTest.from_file(RESCORE, default_timeout=120).run()
    assert at.checkbox(key="rs_fetch").value is True
    at.text_area(key="rs_paste").set_value(_paste(base)).run()
    at.button(key="rs_parse").click().run()
    at.text_input(key="rs_query").set_value("Do street trees cool cities?")
    at.radio(key="rs_qtype").set_value("expertise")
    at.button(key="rs_score").click().run()
    assert not at.exception, at.exception
    return at


def _understood(at) -> list[str]:
    table = next(t.value for t in at.table if "address" in [str(c) for c in t.value.columns])
    return [str(v).replace("\\", "") for v in table["text"]]


def test_rescore_fetches_by_default_and_updates_what_was_understood(tmp_path, monkeypatch, stub):
    _local_fetch(monkeypatch, stub)
    at = _rescore(tmp_path, monkeypatch, stub)
    captions = " ".join(str(c.value) for c in at.caption).replace("\\", "")
    assert "Fetched the page of source 1." in captions and "Source 2: the site answered that the page is gone (HTTP 404)" in captions
    texts = _understood(at)
    assert texts[0].startswith("fetched on Score:") and "characters of the page" in texts[0]
    assert texts[1] == "fetched on Score: the site says the page is gone (a dead source)"


def test_rescore_offline_says_not_checked_never_dead(tmp_path, monkeypatch, stub):
    _local_fetch(monkeypatch, stub)
    _no_dns(monkeypatch)
    at = _rescore(tmp_path, monkeypatch, "https://trees.example.org")
    captions = " ".join(str(c.value) for c in at.caption).replace("\\", "")
    assert "this machine could not reach the web" in captions and "Errno" not in captions
    assert _understood(at) == ["not fetched: this machine could not reach the web (not checked, not dead)"] * 2
    data = json.loads(at.get("bidi_component")[0].proto.json)
    assert {v["reason"] for v in data["statements"].values()} == {"not checked: this machine could not reach the web"}
    assert data["sources"]["1"]["no_text"].startswith("No text: this machine could not reach the web")
    metrics = next(t.value for t in at.table if str(t.value.columns[0]) == "metric").set_index("metric")
    assert str(metrics.loc["Dead sources", "value"]).replace("\\", "") == "0.00%"


def test_rescore_query_error_sits_next_to_the_query_field(tmp_path, monkeypatch):
    monkeypatch.setenv("AEE_RESULTS_DIR", str(tmp_path / "results"))
    at = AppTest.from_file(RESCORE, default_timeout=120).run()
    at.text_area(key="rs_answer").set_value("Trees cool streets [1].")
    at.text_input(key="rs_src_url_0").set_value("https://trees.example.org/a")
    at.button(key="rs_score").click().run()
    assert not at.exception, at.exception
    # the first error on the page is the Query field's own, right under it (before the answer box)
    errors = [str(e.body).replace("\\", "") for e in at.error]
    assert errors and errors[0] == "Query: write the query the answer responds to"
    at.text_input(key="rs_query").set_value("Do trees cool streets?").run()
    at.button(key="rs_score").click().run()
    assert not any("write the query" in str(e.body) for e in at.error)


def test_notes_are_one_line_per_outcome_not_per_source():
    from pipeline.fetching.fetch_outcome import Outcome
    from pipeline.fetching.fill_sources import outcome_notes

    why = "this machine could not reach the web"
    done = [(1, Outcome("u1", "unreachable", why=why)), (2, Outcome("u2", "page", "text")),
            (3, Outcome("u3", "unreachable", why=why)),
            (4, Outcome("u4", "unreachable", why=why + " (not tried: the sources before it could not be reached)")),
            (5, Outcome("u5", "gone", why="the site answered that the page is gone (HTTP 410)"))]
    assert outcome_notes(done) == [
        "Sources 1, 3, 4 not checked: this machine could not reach the web (source 4 not tried: the sources before "
        "could not be reached). This is not the engine's fault and is not counted as dead; fetch again with a network, "
        "or paste the text.",
        "Fetched the page of source 2.",
        "Source 5: the site answered that the page is gone (HTTP 410); it counts as dead."]
