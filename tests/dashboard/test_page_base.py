"""dashboard/page_base.py: the middleware that tells the browser where the app's root is, so a page
opened directly never asks `/<page>/_stcore/health` first. Driven here with a stub ASGI app; the
browser side is in tests/browser/test_browser_links.py."""

from __future__ import annotations

import asyncio

import pytest

from dashboard.page_base import SCRIPT, PageBaseMiddleware, is_page_path

HTML = b"<!DOCTYPE html><html><head><title>Streamlit</title></head><body></body></html>"


def _call(path: str, method: str = "GET", status: int = 200, ctype: bytes = b"text/html", body: bytes = HTML,
          chunks: int = 1, root: str = "") -> tuple[list[dict], list]:
    seen_headers: list = []

    async def app(scope, receive, send):
        seen_headers.extend(scope["headers"])
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", ctype), (b"content-length", str(len(body)).encode())]})
        size = max(1, len(body) // chunks)
        parts = [body[k:k + size] for k in range(0, len(body), size)] or [b""]
        for k, part in enumerate(parts):
            await send({"type": "http.response.body", "body": part, "more_body": k < len(parts) - 1})

    sent: list[dict] = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request"}

    scope = {"type": "http", "method": method, "path": path, "root_path": root,
             "headers": [(b"accept-encoding", b"gzip"), (b"host", b"127.0.0.1")]}
    asyncio.run(PageBaseMiddleware(app)(scope, receive, send))
    return sent, seen_headers


def _body(sent: list[dict]) -> bytes:
    return b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


@pytest.mark.parametrize("path", ["/", "/scorecard", "/inspector"])
def test_page_html_gets_the_base_script_with_a_correct_length(path):
    sent, headers = _call(path, chunks=3)
    body = _body(sent)
    assert body.startswith(b"<!DOCTYPE html><html><head>" + SCRIPT) and body.endswith(b"</html>")
    length = dict(sent[0]["headers"])[b"content-length"]
    assert int(length) == len(body)
    assert b"accept-encoding" not in dict(headers)  # asked uncompressed, so it can be edited


@pytest.mark.parametrize("path, method, status, ctype", [
    ("/_stcore/health", "GET", 200, b"text/plain"), ("/static/js/index.js", "GET", 200, b"text/javascript"),
    ("/scorecard", "POST", 200, b"text/html"), ("/scorecard", "GET", 404, b"text/html"),
    ("/media/abc.png", "GET", 200, b"image/png"), ("/scorecard", "GET", 200, b"application/json"),
])
def test_everything_else_passes_through_unchanged(path, method, status, ctype):
    body = b"<head>not a page</head>"
    sent, headers = _call(path, method=method, status=status, ctype=ctype, body=body)
    assert _body(sent) == body
    if not is_page_path(path) or method != "GET":
        assert b"accept-encoding" in dict(headers)


def test_served_under_a_path_prefix():
    sent, _ = _call("/audit/scorecard", root="/audit")
    assert SCRIPT in _body(sent)


def test_script_names_every_page_and_holds_no_data():
    from dashboard.pages_registry import PAGES

    text = SCRIPT.decode()
    assert all(f'"{p.url_path}"' in text for p in PAGES)
    assert "BACKEND_BASE_URL" in text and "innerHTML" not in text and "eval(" not in text
