"""Tell the browser where the app's root is, so a page opened directly asks the server once.

Opened at `/scorecard`, Streamlit's frontend does not know whether `scorecard` is a page or the
path the app is served under, so it first asks `/scorecard/_stcore/health` and
`/scorecard/_stcore/host-config` (two 404s on every directly opened page, and a retry delay)
before trying `/_stcore/...`. The frontend reads its server's address from `window.__streamlit`
when the page defines it; this ASGI middleware writes that address into the HTML of every page,
computed in the browser from the page names of the registry: the path minus a trailing page name.

Only GET requests for a page (the root or one path segment without a dot) are touched, and only
when the answer is Streamlit's HTML; everything else passes through unchanged.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Awaitable, Callable

from dashboard.pages_registry import PAGES

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_PAGE_PATH = re.compile(r"^/(?:[A-Za-z0-9_-]{1,100}/?)?$")


def base_script(slugs: list[str]) -> bytes:
    """The inline script that sets the frontend's server address (a constant for a page list)."""
    names = json.dumps(slugs)
    js = ("(function(){var pages=" + names + ";var parts=location.pathname.replace(/\\/+$/,'').split('/');"
          "if(pages.indexOf(parts[parts.length-1])>=0){parts.pop();}"
          "window.__streamlit=Object.assign({},window.__streamlit||{},"
          "{BACKEND_BASE_URL:location.origin+parts.join('/')+'/'});})();")
    return f"<script>{js}</script>".encode()


SCRIPT = base_script([p.url_path for p in PAGES])
# The layout for narrow screens (dashboard/static/layout.css, layout.js): constant files of the app.
_STATIC = Path(__file__).resolve().parent / "static"
LAYOUT = (f"<style>{(_STATIC / 'layout.css').read_text(encoding='utf-8')}</style>"
          f"<script>{(_STATIC / 'layout.js').read_text(encoding='utf-8')}</script>").encode()


def is_page_path(path: str) -> bool:
    """The root or one page name ("/", "/scorecard"): what a reader opens, never an asset or an API."""
    return bool(_PAGE_PATH.match(path)) and "_stcore" not in path


class PageBaseMiddleware:
    """ASGI middleware: inject `SCRIPT` at the top of `<head>` in the app's HTML pages."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        root = scope.get("root_path", "") or ""
        if root and path.startswith(root):
            path = path[len(root):] or "/"
        if scope.get("type") != "http" or scope.get("method") != "GET" or not is_page_path(path):
            await self.app(scope, receive, send)
            return
        # the HTML must come back uncompressed to be edited; it is a few kilobytes
        scope = dict(scope, headers=[(k, v) for k, v in scope.get("headers", []) if k.lower() != b"accept-encoding"])
        start: Message | None = None
        chunks: list[bytes] = []

        async def capture(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
                return
            if message["type"] != "http.response.body" or start is None:
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body"):
                return
            body = b"".join(chunks)
            headers = list(start.get("headers", []))
            kind = next((v for k, v in headers if k.lower() == b"content-type"), b"")
            if start.get("status") == 200 and kind.startswith(b"text/html") and b"<head>" in body:
                body = body.replace(b"<head>", b"<head>" + SCRIPT + LAYOUT, 1)
                headers = [(k, v) for k, v in headers if k.lower() != b"content-length"]
                headers.append((b"content-length", str(len(body)).encode()))
                start = dict(start, headers=headers)
            await send(start)
            await send({"type": "http.response.body", "body": body, "more_body": False})

        await self.app(scope, receive, capture)
