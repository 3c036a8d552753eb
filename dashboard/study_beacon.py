"""Study events sent by the browser without a script run: the time on an answer when the participant
moves to another one or leaves (issue 45 item 12), and each hover over and click on a citation marker
(item 10).

The answer component can report through its state, but each report costs a script run. When the
participant closes the tab, that message is lost: the page is gone before a run could record it.
And a marker click's run, or the run that reported the last answer's time as the next one opened,
redrew the page just as the participant reached for the Query box, so at 390 px the first click
there was now and then lost (a scripted class recorded 14 answers instead of ~25).
Browsers offer a message that needs no run and outlives the page, `navigator.sendBeacon`; this
module is its receiving end, a route of the dashboard's ASGI app (`dashboard/serve.py`, the way
`aee app` starts the dashboard). Under a bare `streamlit run app.py` there is no route and the
component reports through its state as before.

The inspector registers each recording browser session under an unguessable token, with the answers
it showed and their study context (engine, query id, query type). A beacon names the token, an
answer that session showed, a one-off id and either the milliseconds the answer was on screen (a
dwell row) or a hover or click on a marker with the source number it points to; nothing else is
read, so a beacon can add one such row to a study someone is recording and nothing more. Bodies
are bounded, each id counts once, and the registry holds a bounded number of sessions.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from datetime import datetime, timezone
from typing import Any

from pipeline.study.log import MAX_DWELL_SECONDS

__all__ = ["PATH", "enabled", "receive", "recorded", "register", "routes"]

PATH = "/_aee/dwell"
MAX_BODY = 2048  # bytes of one beacon
MAX_SESSIONS = 2000  # recording sessions kept (the oldest go first)
MAX_ANSWERS = 500  # answers one session can report on
MAX_IDS = 2000  # beacon ids remembered per session (each counts once)
MAX_SOURCE_RANK = 10_000  # a marker's source number (a marker may point past the listed sources)
MARKER_EVENTS = ("hover", "click")

_LOCK = threading.Lock()
_SESSIONS: OrderedDict[str, dict[str, Any]] = OrderedDict()
_SERVED = False  # True once dashboard/serve.py has mounted the route in this process


def routes() -> list:
    """The route for dashboard/serve.py; mounting it turns beacons on for the pages of this process."""
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    global _SERVED

    async def endpoint(request: Request) -> Response:
        from starlette.concurrency import run_in_threadpool

        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY:
                return Response(status_code=413)
        return Response(status_code=await run_in_threadpool(receive, body))

    _SERVED = True
    return [Route(PATH, endpoint, methods=["POST"])]


def enabled() -> bool:
    """Whether this process serves the route (not under a bare `streamlit run app.py`)."""
    return _SERVED


def register(token: str, *, study_id: str, participant: str, session: str, alignment: str, answer_id: str,
             context: dict[str, str]) -> None:
    """Remember that this recording session shows `answer_id` (with its study context)."""
    with _LOCK:
        entry = _SESSIONS.get(token)
        who = (study_id, participant, session, alignment)
        if entry is None or entry["who"] != who:  # a changed code or study starts afresh
            entry = {"who": who, "answers": OrderedDict(), "ids": OrderedDict(), "rows": 0}
        _SESSIONS[token] = entry
        _SESSIONS.move_to_end(token)
        while len(_SESSIONS) > MAX_SESSIONS:
            _SESSIONS.popitem(last=False)
        entry["answers"][answer_id] = dict(context)
        entry["answers"].move_to_end(answer_id)
        while len(entry["answers"]) > MAX_ANSWERS:
            entry["answers"].popitem(last=False)


def recorded(token: str) -> int:
    """How many rows this session's beacons have written (for the page's count of recorded events)."""
    with _LOCK:
        entry = _SESSIONS.get(token)
        return int(entry["rows"]) if entry is not None else 0


def _event_fields(msg: dict[str, Any]) -> dict[str, Any] | None:
    """The row fields a beacon asks for: a dwell time or a marker event; None when malformed."""
    kind = msg.get("event", "dwell")  # a beacon without `event` is a dwell time (the first kind sent)
    if kind == "dwell":
        ms = msg.get("ms")
        if isinstance(ms, bool) or not isinstance(ms, (int, float)) or not 0 < ms <= MAX_DWELL_SECONDS * 1000:
            return None
        return {"event": "dwell", "source_rank": None, "dwell_seconds": round(float(ms) / 1000, 3)}
    if kind in MARKER_EVENTS:
        rank = msg.get("source")
        if isinstance(rank, bool) or not isinstance(rank, int) or not 1 <= rank <= MAX_SOURCE_RANK:
            return None
        return {"event": kind, "source_rank": rank}
    return None


def receive(body: bytes) -> int:
    """Record one beacon as a study log row; the HTTP status to answer with (204 recorded, 400
    malformed, 404 unknown session or answer, 409 an id already counted, 500 the log could not be
    written)."""
    from pipeline.study import StudyLogError, recorder

    try:
        msg = json.loads(body[:MAX_BODY].decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return 400
    if not isinstance(msg, dict):
        return 400
    token, answer, beacon_id = msg.get("token"), msg.get("answer"), msg.get("id")
    if not (isinstance(token, str) and isinstance(answer, str) and isinstance(beacon_id, str)
            and all(0 < len(v) <= 200 for v in (token, answer, beacon_id))):
        return 400
    fields = _event_fields(msg)
    if fields is None:
        return 400
    with _LOCK:
        entry = _SESSIONS.get(token)
        if entry is None or answer not in entry["answers"]:
            return 404
        if beacon_id in entry["ids"]:
            return 409
        entry["ids"][beacon_id] = time.monotonic()
        while len(entry["ids"]) > MAX_IDS:
            entry["ids"].popitem(last=False)
        study_id, participant, session, alignment = entry["who"]
        context = entry["answers"][answer]
    row = {"participant": participant, "session": session, "engine": context["engine"],
           "query_id": context["query_id"], "query_type": context["query_type"], "alignment": alignment,
           "timestamp": datetime.now(timezone.utc), **fields}
    try:
        recorder.append_events(study_id, [row])
    except (StudyLogError, OSError):
        with _LOCK:  # not written: the same beacon may be sent again
            entry["ids"].pop(beacon_id, None)
        return 500
    with _LOCK:
        entry["rows"] += 1
    return 204
