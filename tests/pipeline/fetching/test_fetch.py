"""Tests for pipeline.fetching.fetch against a real http.server on 127.0.0.1 (and ::1 when available).

Nothing here contacts any other address: refusals are checked with `_connect` wrapped so a test
fails if the fetcher even tries to open a socket to a refused target.
"""

from __future__ import annotations

import gzip
import http.server
import ipaddress
import json
import socket
import threading
import time
from collections import Counter

import pytest
from fetch_server import (
    ARTICLE,
    ARTICLE_SENTENCES,
    HIDDEN_HTML,
    PDF_BYTES,
    _isolated_cache,
    connects,
    local,
    server,
    url,
)
from timing import guard

from pipeline.fetching import extract_worker, fetch, fetch_text
from pipeline.fetching.fetch import FetchResult, fetch_many, fetch_source

# --- successful fetches ---------------------------------------------------------------------


def test_html_article_main_text(server, connects):
    r = fetch_source(url(server, "/article"), **local(server))
    assert isinstance(r, FetchResult)
    assert r.ok and r.status == 200 and r.reason == ""
    assert r.content_type == "text/html"
    assert r.title.startswith("Reservoir levels rise")  # <title> or the article's <h1>
    for sentence in ARTICLE_SENTENCES:
        assert sentence in r.text
    # boilerplate and scripts are not part of the main text
    assert "Cookie settings" not in r.text
    assert "About us" not in r.text
    assert "tracking" not in r.text
    assert r.final_url == r.url
    assert len(r.fetched_at) == 10 and r.fetched_at[4] == "-"
    assert r.from_cache is False
    assert r.injection_kinds == ()
    assert connects == [("127.0.0.1", server.server_port)]


def test_html_fallback_stripper_when_trafilatura_fails(server, monkeypatch):
    import trafilatura

    def broken(*args, **kwargs):
        raise RuntimeError("extractor unavailable")

    monkeypatch.setattr(trafilatura, "bare_extraction", broken)
    monkeypatch.setattr(extract_worker, "IN_PROCESS", True)  # the patch above lives in this process
    r = fetch_source(url(server, "/article"), cache=False, **local(server))
    assert r.ok and r.title == "Reservoir levels rise"
    assert ARTICLE_SENTENCES[0] in r.text
    assert "tracking" not in r.text  # scripts are dropped by the stripper too


def test_plain_text(server):
    r = fetch_source(url(server, "/plain"), **local(server))
    assert r.ok and r.content_type == "text/plain"
    assert r.text == "Plain text source.\nSecond line."


def test_declared_charset(server):
    r = fetch_source(url(server, "/latin1"), **local(server))
    assert r.ok and r.text == "Caf\u00e9 cr\u00e8me br\u00fbl\u00e9e"


def test_meta_charset_sniffed(server):
    r = fetch_source(url(server, "/meta-charset"), **local(server))
    assert r.ok
    assert "Na\u00efve r\u00e9sum\u00e9 text." in r.text
    assert r.title == "T\u00eate"


def test_gzip_body(server):
    r = fetch_source(url(server, "/gzip"), **local(server))
    assert r.ok and r.text == "compressed text body"


def test_gzip_bomb_capped(server):
    r = fetch_source(url(server, "/gzip-bomb"), max_bytes=100_000, **local(server))
    assert not r.ok and r.reason.startswith("too large") and r.status == 200


def test_pdf_text_when_pypdf_available(server):
    pytest.importorskip("pypdf")
    r = fetch_source(url(server, "/pdf"), **local(server))
    assert r.ok, r.reason
    assert r.content_type == "application/pdf"
    assert "Hello PDF world" in r.text


def test_pdf_not_supported_without_library(server, monkeypatch):
    monkeypatch.setattr(fetch_text, "_load_pdf_reader", lambda: None)
    r = fetch_source(url(server, "/pdf"), **local(server))
    assert not r.ok and r.reason == "pdf not supported" and r.status == 200


def test_unsupported_content_type(server):
    r = fetch_source(url(server, "/image"), **local(server))
    assert not r.ok and r.reason == "unsupported content type: image/png"


def test_empty_body_is_not_ok(server):
    r = fetch_source(url(server, "/empty"), **local(server))
    assert not r.ok and r.reason == "no text extracted"


def test_hidden_injection_reported_from_raw_html(server):
    r = fetch_source(url(server, "/hidden"), **local(server))
    assert r.ok
    assert "css_hidden" in r.injection_kinds
    assert "html_comment" in r.injection_kinds
    assert "ignore_instructions" in r.injection_kinds


# --- failures that are recorded -------------------------------------------------------------


def test_404_recorded(server):
    r = fetch_source(url(server, "/missing"), **local(server))
    assert not r.ok and r.status == 404 and r.reason == "http 404 Not Found"
    assert r.text == ""


def test_huge_body_capped(server):
    t0 = time.monotonic()
    r = fetch_source(url(server, "/huge"), max_bytes=200_000, **local(server))
    assert not r.ok and r.status == 200
    assert r.reason == "too large: more than max_bytes 200000"
    assert time.monotonic() - t0 < 5


def test_size_cap_failures_not_cached(server):
    small = fetch_source(url(server, "/article"), max_bytes=100, **local(server))
    assert not small.ok and small.reason.startswith("too large")
    again = fetch_source(url(server, "/article"), **local(server))  # a bigger cap fetches for real
    assert again.ok and not again.from_cache


def test_declared_length_refused_before_reading(server):
    r = fetch_source(url(server, "/huge-declared"), max_bytes=200_000, **local(server))
    assert not r.ok and r.reason.startswith("too large: Content-Length 50000000")


def test_slow_endpoint_times_out(server):
    t0 = time.monotonic()
    r = fetch_source(url(server, "/slow"), timeout=0.5, **local(server))
    elapsed = time.monotonic() - t0
    assert not r.ok and r.reason == "timeout" and r.status is None
    assert elapsed < 2


def test_trickling_body_hits_total_time_cap(server):
    # Each chunk arrives well within any per-read timeout; only a total budget stops this.
    t0 = time.monotonic()
    r = fetch_source(url(server, "/trickle"), timeout=1.0, **local(server))
    elapsed = time.monotonic() - t0
    assert not r.ok and r.reason == "timeout" and r.status == 200
    assert elapsed < 2.5


def test_timeouts_are_not_cached(server):
    fetch_source(url(server, "/slow"), timeout=0.3, **local(server))
    assert not (fetch.cache_dir() / "fetch").exists() or not any(
        (fetch.cache_dir() / "fetch").glob("*.json")
    )


def test_5xx_not_cached(server):
    before = server.hits["/error"]
    a = fetch_source(url(server, "/error"), **local(server))
    b = fetch_source(url(server, "/error"), **local(server))
    assert a.status == 503 and not a.ok and not b.from_cache
    assert server.hits["/error"] == before + 2


def test_connection_refused(server):
    with socket.socket() as s:  # a port that was free a moment ago and has no listener
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = fetch_source(f"http://127.0.0.1:{port}/", allow_hosts={f"127.0.0.1:{port}"})
    assert not r.ok and r.reason.startswith("connection error") and r.status is None


# --- redirects ------------------------------------------------------------------------------


def test_redirect_chain_followed(server):
    r = fetch_source(url(server, "/redirect/3"), **local(server))
    assert r.ok and r.final_url == url(server, "/plain")
    assert r.url == url(server, "/redirect/3")


def test_absolute_redirect(server):
    r = fetch_source(url(server, "/absolute-redirect"), **local(server))
    assert r.ok and r.final_url == url(server, "/plain")


def test_too_many_redirects(server):
    r = fetch_source(url(server, "/redirect/5"), max_redirects=2, **local(server))
    assert not r.ok and r.reason == "too many redirects (more than 2)" and r.status == 302
    loop = fetch_source(url(server, "/loop"), **local(server))
    assert not loop.ok and loop.reason.startswith("too many redirects")


def test_redirect_without_location(server):
    r = fetch_source(url(server, "/no-location"), **local(server))
    assert not r.ok and r.reason == "redirect without Location header" and r.status == 302


@pytest.mark.parametrize(
    ("path", "target", "why"),
    [
        ("/to-private", "http://10.0.0.1/", "private address 10.0.0.1"),
        ("/to-metadata", "http://169.254.169.254/latest/meta-data", "cloud metadata address"),
        ("/to-file", "file:///etc/passwd", "unsupported scheme: file"),
        ("/to-ipv6-loopback", None, "loopback address ::1"),
    ],
)
def test_redirect_to_forbidden_target_refused_without_connecting(server, connects, path,
                                                                target, why):
    r = fetch_source(url(server, path), **local(server))
    assert not r.ok and r.status is None
    assert r.reason.startswith("redirect to ") and " refused: " in r.reason
    assert why in r.reason
    if target:
        assert r.final_url == target
    # only the allowed server itself was contacted, once
    assert connects == [("127.0.0.1", server.server_port)]


def test_an_allowed_host_opens_its_port_only(server, connects):
    # the attack: a local mirror allowed, then a redirect to ssh on the same machine
    r = fetch_source(url(server, "/to-ssh"), **local(server))
    assert not r.ok and r.final_url == "http://127.0.0.1:22/"
    assert r.reason == "redirect to http://127.0.0.1:22/ refused: refused: loopback address 127.0.0.1 port 22 (host 127.0.0.1)"
    assert connects == [("127.0.0.1", server.server_port)]
    # a bare host opens its web ports (80, 443) only, never the test server's port
    bare = fetch_source(url(server, "/plain"), allow_hosts={"127.0.0.1"}, cache=False)
    assert not bare.ok and f"port {server.server_port}" in bare.reason
    assert connects == [("127.0.0.1", server.server_port)]


@pytest.mark.parametrize(("entry", "parsed"), [
    ("127.0.0.1:8080", ("127.0.0.1", 8080)), ("mirror.local:443", ("mirror.local", 443)),
    ("Mirror.Local.", ("mirror.local", None)), ("[::1]:8080", ("::1", 8080)), ("::1", ("::1", None)),
    ("10.0.0.0/8:8080", ("10.0.0.0/8", 8080)), ("[fd00::/8]", ("fd00::/8", None)),
])
def test_allow_entries_name_a_host_and_its_port(entry, parsed):
    assert fetch.parse_allow_entry(entry) == parsed


@pytest.mark.parametrize("entry", ["127.0.0.1:0", "127.0.0.1:70000", "host:port", "a:b:c]", "[::1", "x:8080:9"])
def test_bad_allow_entries_are_refused(entry):
    with pytest.raises(ValueError, match="not a host, host:port"):
        fetch.parse_allow_entry(entry)


def test_redirect_refusals_are_not_cached(server):
    fetch_source(url(server, "/to-private"), **local(server))
    before = server.hits["/to-private"]
    r = fetch_source(url(server, "/to-private"), **local(server))
    assert not r.from_cache and server.hits["/to-private"] == before + 1


