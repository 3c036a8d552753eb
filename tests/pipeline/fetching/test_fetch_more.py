"""Tests for pipeline.fetching.fetch, continued from tests/pipeline/fetching/test_fetch.py (same local server, tests/fetch_server.py):
refusals before any connection, the cache, many fetches at once, HTTPS to a pinned address and what
follows. Nothing here contacts an address other than 127.0.0.1 and ::1.
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
    _Server,
    _start,
    connects,
    local,
    server,
    url,
)
from timing import guard

from pipeline.fetching import extract_worker, fetch, fetch_text
from pipeline.fetching.fetch import FetchResult, fetch_many, fetch_source

# --- refusals before any connection ---------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "reason_start"),
    [
        ("http://10.0.0.1/", "refused: private address 10.0.0.1"),
        ("http://192.168.1.1/admin", "refused: private address 192.168.1.1"),
        ("http://169.254.169.254/latest/meta-data", "refused: cloud metadata address"),
        ("http://[fd00:ec2::254]/latest/meta-data", "refused: cloud metadata address"),
        ("http://metadata.google.internal/computeMetadata/v1/",
         "refused: cloud metadata host metadata.google.internal"),
        ("http://[::1]/", "refused: loopback address ::1"),
        ("http://localhost/", "refused: loopback address"),
        ("http://127.0.0.1/", "refused: loopback address 127.0.0.1"),
        ("http://2130706433/", "refused: loopback address 127.0.0.1"),  # decimal 127.0.0.1
        ("http://0.0.0.0/", "refused: unspecified address"),
        ("http://[::ffff:10.0.0.1]/", "refused: private address"),  # IPv4-mapped IPv6
        ("http://224.0.0.1/", "refused: multicast address"),
        ("http://169.254.1.1/", "refused: link-local address"),
        ("http://100.64.0.1/", "refused: "),  # carrier-grade NAT, not global
        ("file:///etc/passwd", "unsupported scheme: file"),
        ("gopher://x", "unsupported scheme: gopher"),
        ("ftp://example.com/file", "unsupported scheme: ftp"),
        ("data:text/plain,hello", "unsupported scheme: data"),
        ("javascript:alert(1)", "unsupported scheme: javascript"),
        ("not a url", "unsupported scheme: none"),
        ("http://", "invalid url: no host"),
        ("http://exa mple.com\r\nX: y", "invalid url: control characters"),
    ],
)
def test_refused_without_connecting(connects, target, reason_start):
    r = fetch_source(target)
    assert not r.ok and r.status is None
    assert r.reason.startswith(reason_start), r.reason
    assert connects == []


def test_allow_private_does_not_open_metadata(connects):
    r = fetch_source("http://169.254.169.254/latest/meta-data", allow_private=True)
    assert not r.ok and "cloud metadata" in r.reason
    assert connects == []


def test_allow_private_opens_loopback(server):
    r = fetch_source(url(server, "/plain"), allow_private=True)
    assert r.ok


def test_allowlist_accepts_networks(server):
    r = fetch_source(url(server, "/plain"), allow_hosts=[f"127.0.0.0/8:{server.server_port}"])
    assert r.ok
    r = fetch_source(url(server, "/plain"), allow_hosts=["127.0.0.0/8"], cache=False)  # web ports only
    assert not r.ok and r.reason.startswith(f"refused: loopback address 127.0.0.1 port {server.server_port}")


def test_hostname_resolving_to_private_is_refused(monkeypatch, connects):
    monkeypatch.setattr(fetch, "_resolve", lambda host, port: [ipaddress.ip_address("10.1.2.3")])
    r = fetch_source("http://innocent.example/page")
    assert not r.ok and r.reason == "refused: private address 10.1.2.3 port 80 (host innocent.example)"
    assert connects == []


def test_any_private_answer_refuses(monkeypatch, connects):
    # A name with one public and one private address is refused as a whole.
    monkeypatch.setattr(fetch, "_resolve", lambda host, port: [
        ipaddress.ip_address("93.184.216.34"), ipaddress.ip_address("127.0.0.1")])
    r = fetch_source("http://mixed.example/")
    assert not r.ok and "loopback" in r.reason
    assert connects == []


def test_connects_to_checked_address_with_original_host_header(server, monkeypatch, connects):
    # DNS rebinding: the first answer is checked and used; later answers are never consulted,
    # and the Host header still names the site.
    answers = iter([["127.0.0.1"], ["10.0.0.1"], ["10.0.0.1"]])
    monkeypatch.setattr(
        fetch, "_resolve", lambda host, port: [ipaddress.ip_address(a) for a in next(answers)]
    )
    r = fetch_source(f"http://rebind.example:{server.server_port}/echo-host",
                     allow_hosts={f"127.0.0.1:{server.server_port}"})
    assert r.ok, r.reason
    assert r.text == f"host=rebind.example:{server.server_port}"
    assert connects == [("127.0.0.1", server.server_port)]


def test_dns_failure_is_a_result(monkeypatch, connects):
    # Patched so the test sends no DNS query at all.
    def fail(host, port):
        raise socket.gaierror(-2, "Name or service not known")

    monkeypatch.setattr(fetch, "_resolve", fail)
    r = fetch_source("http://nothing.invalid/")
    assert isinstance(r, FetchResult) and not r.ok and r.status is None
    assert r.reason.startswith("dns error")
    assert connects == []


def test_ipv6_loopback_with_allowlist(connects):
    if not socket.has_ipv6:
        pytest.skip("no IPv6 support")
    try:
        srv = _start(("::1", 0, 0, 0), socket.AF_INET6)
    except OSError as exc:
        pytest.skip(f"cannot bind ::1: {exc}")
    try:
        r = fetch_source(f"http://[::1]:{srv.server_port}/echo-host", allow_hosts={f"[::1]:{srv.server_port}"})
        assert r.ok, r.reason
        assert r.text == f"host=[::1]:{srv.server_port}"
    finally:
        srv.shutdown()
        srv.server_close()


# --- cache ----------------------------------------------------------------------------------


def test_cache_hit_on_second_fetch(server):
    before = server.hits["/counted"]
    first = fetch_source(url(server, "/counted"), **local(server))
    second = fetch_source(url(server, "/counted"), **local(server))
    assert first.ok and not first.from_cache
    assert second.from_cache and second.text == first.text
    assert server.hits["/counted"] == before + 1
    files = list((fetch.cache_dir() / "fetch").glob("*.json"))
    assert len(files) == 1 and len(files[0].stem) == 64
    payload = json.loads(files[0].read_text())
    assert payload["result"]["url"] == url(server, "/counted")


def test_cache_off_refetches(server):
    before = server.hits["/counted"]
    fetch_source(url(server, "/counted"), cache=False, **local(server))
    fetch_source(url(server, "/counted"), cache=False, **local(server))
    assert server.hits["/counted"] == before + 2
    assert not (fetch.cache_dir() / "fetch").exists()


def test_404_is_cached(server):
    before = server.hits["/missing"]
    fetch_source(url(server, "/missing"), **local(server))
    r = fetch_source(url(server, "/missing"), **local(server))
    assert r.from_cache and r.status == 404 and not r.ok
    assert server.hits["/missing"] == before + 1


def test_cached_private_page_not_served_without_allowlist(server, connects):
    assert fetch_source(url(server, "/plain"), **local(server)).ok
    r = fetch_source(url(server, "/plain"))  # same URL and day, but no permission now
    assert not r.ok and not r.from_cache and r.reason.startswith("refused: loopback")
    assert len(connects) == 1


# --- many -----------------------------------------------------------------------------------


def test_fetch_many_keeps_order_and_dedupes(server):
    before = server.hits["/plain"]
    urls = [url(server, "/plain"), url(server, "/missing"), "gopher://x", url(server, "/plain")]
    results = fetch_many(urls, max_workers=3, cache=False, **local(server))
    assert [r.url for r in results] == urls
    assert [r.ok for r in results] == [True, False, False, True]
    assert server.hits["/plain"] == before + 1
    assert fetch_many([]) == []


# --- HTTPS to a pinned address ---------------------------------------------------------------


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory):
    """An HTTPS server on 127.0.0.1 with a self-signed certificate for rebind.example."""
    import shutil
    import ssl
    import subprocess

    if shutil.which("openssl") is None:
        pytest.skip("openssl command not available to make a test certificate")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    made = subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
         "-subj", "/CN=rebind.example", "-addext", "subjectAltName=DNS:rebind.example",
         "-keyout", str(key), "-out", str(cert)],
        capture_output=True, timeout=guard(60),
    )
    if made.returncode != 0:
        pytest.skip(f"openssl could not make a certificate: {made.stderr[-200:]!r}")
    srv = _Server(("127.0.0.1", 0), socket.AF_INET)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv, cert
    srv.shutdown()
    srv.server_close()


def test_https_uses_name_for_sni_and_certificate(tls_server, monkeypatch, connects):
    import ssl

    srv, cert = tls_server
    trusting = ssl.create_default_context(cafile=str(cert))
    monkeypatch.setattr(fetch, "_SSL_CONTEXT", trusting)
    monkeypatch.setattr(fetch, "_resolve", lambda host, port: [ipaddress.ip_address("127.0.0.1")])
    r = fetch_source(f"https://rebind.example:{srv.server_port}/echo-host",
                     allow_hosts={f"127.0.0.1:{srv.server_port}"}, cache=False)
    assert r.ok, r.reason
    assert r.text == f"host=rebind.example:{srv.server_port}"
    assert connects == [("127.0.0.1", srv.server_port)]


def test_https_certificate_is_verified(tls_server, monkeypatch):
    srv, _cert = tls_server
    monkeypatch.setattr(fetch, "_SSL_CONTEXT", None)  # the default, system-trusting context
    r = fetch_source(f"https://127.0.0.1:{srv.server_port}/plain", allow_hosts={f"127.0.0.1:{srv.server_port}"},
                     cache=False)
    assert not r.ok and r.reason.startswith("tls error") and r.status is None


# ---- extraction is bounded in time and size (issue 31) ----------------------------------------------


def test_a_page_of_word_paragraphs_is_read_within_the_bound(server):
    """4.8 MB of `<p>word `: over MAX_TRAFILATURA_CHARS, so the linear tag stripper reads it (was 413 s)."""
    started = time.monotonic()
    r = fetch_source(url(server, "/word-flood"), max_bytes=6_000_000, **local(server))
    elapsed = time.monotonic() - started
    assert r.ok, r.reason
    assert r.text.count("word") == 600_000
    assert elapsed < 120, elapsed  # a hang guard only; measured about 5 s on a quiet machine


def test_the_extractor_is_killed_at_its_deadline_and_the_stripper_takes_over(server, monkeypatch):
    """1.2 MB of the same markup keeps trafilatura busy well past a 1 s deadline: its process is
    killed and the tag stripper (linear) gives the text."""
    monkeypatch.setattr(extract_worker, "EXTRACT_SECONDS", 1.0)
    r = fetch_source(url(server, "/word-flood-small"), **local(server), cache=False)
    assert r.ok, r.reason
    assert r.text.count("word") == 150_000


def test_an_extractor_that_never_finishes_ends_the_fetch_with_a_reason(server, monkeypatch):
    monkeypatch.setattr(extract_worker, "EXTRACT_SECONDS", 0.0)  # no time at all: both tries time out
    monkeypatch.setattr(extract_worker, "STRIP_SECONDS", 0.0)
    r = fetch_source(url(server, "/article"), **local(server), cache=False)
    assert not r.ok and r.reason.startswith("extraction timed out"), r.reason
    monkeypatch.setattr(extract_worker, "EXTRACT_SECONDS", 20.0)
    again = fetch_source(url(server, "/article"), **local(server), cache=False)  # a fresh worker serves again
    assert again.ok, again.reason


def test_the_pdf_extractor_has_the_same_deadline(server, monkeypatch):
    pytest.importorskip("pypdf")
    monkeypatch.setattr(extract_worker, "EXTRACT_SECONDS", 0.0)
    r = fetch_source(url(server, "/pdf"), **local(server), cache=False)
    assert not r.ok and r.reason.startswith("extraction timed out (pdf"), r.reason
