"""The room's door on the pages (`pipeline.room` has the rules): served beyond this machine, a
browser session must type the room's join code before it writes (labels, samples, classes, study
recordings); reading never needs it. Inside a room, a name belongs to the first session that used
it (`pipeline.audit.rooms`), the stored names carry the room's tag so two rooms never mix, and a
session's label writes are rate-limited.

On a server bound to 127.0.0.1 / localhost / ::1 nothing here asks for anything.
"""

from __future__ import annotations

import base64
import html
import io

import streamlit as st

from dashboard import data
from pipeline.audit.labels import clean_name, labels_path
from pipeline.audit.rooms import NameClaims, new_key
from pipeline.errors import InputError
from pipeline.room import RateLimit, code_matches, configured_code, room_id, served_to_network, student_urls

JOINED = "room_joined"  # session: the room tag once the join code was typed
KEY = "room_key"  # session: the key that owns this session's names
WRITES = "room_write_limit"
ATTEMPTS = "room_join_attempts"
LABEL_WRITES_PER_MINUTE = 60.0  # a careful person gives a label every few seconds; a script far more
LABEL_BURST = 20.0


def bind_address() -> str:
    return str(st.get_option("server.address") or "")


def served() -> bool:
    """The server listens beyond 127.0.0.1 / localhost / ::1 (127.0.0.2 counts as a network). No
    address at all is a script run without a server (AppTest); `aee app` always passes one and the
    checkout's .streamlit/config.toml sets localhost for a plain `streamlit run app.py`."""
    address = st.get_option("server.address")
    return address is not None and served_to_network(str(address))


def room() -> str | None:
    """This session's room tag when served and joined; None on a private server or before joining."""
    return st.session_state.get(JOINED) if served() else None


def can_write() -> bool:
    return not served() or bool(st.session_state.get(JOINED))


def session_key() -> str:
    return st.session_state.setdefault(KEY, new_key())


def join_form(action: str, key: str, where=None) -> bool:
    """True when this session may write; otherwise a join-code form saying why, and False."""
    if can_write():
        return True
    target = where or st
    code = configured_code()
    if code is None:
        target.warning(f"This server is reachable from a network without a join code, so nobody can {action} here. "
                       "Start it with `aee app --address ...` (it prints a code) or set AEE_JOIN_CODE.",
                       icon=":material/lock:")
        return False
    with target.form(f"room_join_{key}"):
        st.markdown(f"To {action}, type the room's join code (the teacher or editor has it). Reading needs no code.")
        typed = st.text_input("Join code", max_chars=12, key=f"room_code_{key}")
        go = st.form_submit_button("Join the room", icon=":material/key:")
    if go:
        attempts = st.session_state.setdefault(ATTEMPTS, RateLimit(per_minute=6, burst=5))
        if not attempts.allow():
            target.error("Too many tries: wait a minute.")
        elif code_matches(typed, code):
            st.session_state[JOINED] = room_id(code)
            st.rerun()
        else:
            target.error("That is not this room's join code.")
    return False


def writer_name(name: str) -> str:
    """The stored name of a person: in a room, tagged with the room so two rooms never mix."""
    tag = room()
    base = clean_name(name)
    return base if tag is None else clean_name(f"{base[:50]} [{tag}]")


def seat_writer_name(name: str) -> str:
    """The name part of a class seat's annotator (the seat code follows it), tagged in a room."""
    tag = room()
    base = clean_name(name)
    return base[:40] if tag is None else f"{base[:30]} [{tag}]"


def claim(name: str) -> None:
    """In a room, bind `name` to this session's key; InputError when another session owns it."""
    tag = room()
    if tag is None:
        return
    if not NameClaims(labels_path(data.results_root())).claim(tag, name, session_key()):
        raise InputError("another person in this room already uses this name; pick another one, or type the key "
                         "shown to you when you first used it")


def use_key(typed: str) -> None:
    """Adopt a key typed by its owner (carrying on after a reload or in another tab)."""
    text = "".join(str(typed or "").split()).upper()
    if text:
        st.session_state[KEY] = text[:32]


def allow_label_write() -> bool:
    """In a room, spend one label write of this session's allowance (False: wait)."""
    if room() is None:
        return True
    limit = st.session_state.setdefault(WRITES, RateLimit(per_minute=LABEL_WRITES_PER_MINUTE, burst=LABEL_BURST))
    ok = limit.allow()
    if not ok:
        st.session_state["room_write_refused"] = True
    return ok


def room_urls(path: str = "") -> list[str]:
    """The addresses people in the room open (empty on a private server)."""
    if not served():
        return []
    return student_urls(bind_address(), int(st.get_option("server.port")), path)


def qr_svg(url: str, scale: int = 4) -> str:
    """The QR code of a link as SVG (segno, pure Python)."""
    import segno

    out = io.BytesIO()
    segno.make(url, error="m").save(out, kind="svg", scale=scale, xmldecl=False, svgns=True, border=2,
                                    dark="#000", light="#fff")
    return out.getvalue().decode()


def qr_img(url: str, scale: int = 4) -> str:
    """An <img> of the link's QR code as a data: URI (st.html drops inline SVG; a data URI asks no host)."""
    encoded = base64.b64encode(qr_svg(url, scale).encode()).decode()
    return f'<img alt="QR code of {html.escape(url, quote=True)}" src="data:image/svg+xml;base64,{encoded}">'


def show_addresses(path: str, query: str, where=None, what: str = "this page") -> None:
    """Where people in the room open `path?query`, with a QR code of the first address; on a
    private server, how to serve a room instead."""
    target = where or st
    urls = [f"{u}{'?' + query if query else ''}" for u in room_urls(path)]
    if not urls:
        target.info("This server listens on this machine only: nobody else can open its links. To serve a class or a "
                    "newsroom, start it with `aee app --address 0.0.0.0` (or a network interface's name); it prints "
                    "the addresses to hand out and a join code.", icon=":material/wifi_off:")
        return
    items = "".join(f"<li><code>{html.escape(u)}</code></li>" for u in urls)
    target.html(f"<div class='aee-room'><div class='aee-room-qr'>{qr_img(urls[0])}</div><div><b>People in the room open {html.escape(what)} "
                f"at</b><ul>{items}</ul><span>Writing needs the room's join code; reading does not.</span></div></div>"
                "<style>.aee-room{display:flex;flex-wrap:wrap;gap:1rem;align-items:center}"
                ".aee-room code{overflow-wrap:anywhere}.aee-room-qr img{display:block}</style>")
