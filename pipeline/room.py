"""Serving a class or a newsroom from one machine: which addresses the people in the room can open,
whether the server is reachable beyond this machine, and the room's join code.

A server bound to 127.0.0.1, `localhost` or ::1 is private to this machine: nothing asks for a code.
Any other bind address counts as served to a network, including other loopback addresses such as
127.0.0.2 (the browser tests bind there to play a room without leaving the machine). Served to a
network, writing (labels, samples, classes, study recordings) needs the room's join code; reading
does not.

Addresses are read from this machine's own interfaces (psutil when installed, else the Linux
SIOCGIFADDR ioctl, else the host name); nothing here contacts another host.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import secrets
import socket
import struct
import sys
import time
from dataclasses import dataclass, field
from typing import Callable

from pipeline.audit.labels import CODE_ALPHABET  # no 0/O, 1/I/L: read aloud and typed

JOIN_CODE_ENV = "AEE_JOIN_CODE"
PRIVATE_ADDRESSES = frozenset({"127.0.0.1", "localhost", "::1"})
ANY_ADDRESSES = frozenset({"0.0.0.0", "::", ""})
JOIN_CODE_LENGTH = 6
_SIOCGIFADDR = 0x8915


def served_to_network(address: str | None) -> bool:
    """True unless the server listens on 127.0.0.1, localhost or ::1 only. An empty address is
    Streamlit's default, every interface."""
    return (address or "").strip().lower() not in PRIVATE_ADDRESSES


def new_join_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(JOIN_CODE_LENGTH))


def normalise_code(code: object) -> str:
    """A code as typed (spaces, dashes and case ignored)."""
    return "".join(str(code or "").split()).replace("-", "").upper()[:40]


def code_matches(typed: object, expected: str | None) -> bool:
    """The typed join code is the room's (constant-time comparison); never True without a code."""
    if not expected:
        return False
    return secrets.compare_digest(normalise_code(typed).encode(), normalise_code(expected).encode())


def room_id(code: str) -> str:
    """A short tag naming a room in stored names (the code itself is never stored)."""
    return hashlib.sha256(f"aee-room:{normalise_code(code)}".encode()).hexdigest()[:6]


def interface_addresses() -> dict[str, list[str]]:
    """{interface name: its addresses}, IPv4 first, from this machine only."""
    try:
        import psutil

        out: dict[str, list[str]] = {}
        for name, entries in psutil.net_if_addrs().items():
            for e in entries:
                if e.family in (socket.AF_INET, socket.AF_INET6):
                    out.setdefault(name, []).append(str(e.address).split("%", 1)[0])
        return out
    except ImportError:
        pass
    out = {}
    if sys.platform.startswith("linux"):
        import fcntl

        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            for _, name in socket.if_nameindex():
                try:
                    packed = fcntl.ioctl(s.fileno(), _SIOCGIFADDR, struct.pack("256s", name[:15].encode()))
                except OSError:  # an interface without an IPv4 address
                    continue
                out.setdefault(name, []).append(socket.inet_ntoa(packed[20:24]))
    if not out:
        try:
            infos = socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)
            out["host"] = sorted({str(i[4][0]) for i in infos})
        except OSError:
            pass
    return out


def resolve_bind(address: str) -> str:
    """The address to listen on: an interface name (`eth0`) becomes its first IPv4 address."""
    named = interface_addresses().get(address)
    if named:
        return next((a for a in named if ":" not in a), named[0])
    return address


def check_bind(address: str, port: int) -> None:
    """Refuse, before anything starts, a port outside 1-65535 and an address this machine cannot
    listen on (not an address, not one of its own, the port taken), with one line saying why;
    `address` as `resolve_bind` gave it. The server would otherwise end in a traceback after the
    URL was printed. A trial socket is bound and closed at once; nothing is contacted."""
    from pipeline.errors import InputError

    if not 1 <= port <= 65535:
        raise InputError(f"must be a port number from 1 to 65535 (got {port})", field="--port")
    host = address.strip()
    if host in ANY_ADDRESSES:
        host = "::" if host == "::" else "0.0.0.0"
    looks_numeric = bool(host) and all(ch.isdigit() or ch in ".:" for ch in host)
    if looks_numeric:
        try:
            ipaddress.ip_address(host)
        except ValueError:
            raise InputError(f"{host!r} is not an IP address (each part of an IPv4 address is 0 to 255)",
                             field="--address") from None
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError, ValueError):
        names = ", ".join(sorted(interface_addresses())) or "none found"
        raise InputError(f"{host!r} is neither an address, a host name nor an interface of this machine "
                         f"(interfaces: {names})", field="--address") from None
    reasons = []
    for family, kind, proto, _, where in found:
        trial = socket.socket(family, kind, proto)
        try:
            trial.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server will
            trial.bind(where)
            return
        except OSError as exc:
            reasons.append(exc.strerror or type(exc).__name__)
        finally:
            trial.close()
    raise InputError(f"cannot listen on {host} port {port}: {'; '.join(dict.fromkeys(reasons))}", field="--address")


def _reachable(addr: str) -> bool:
    try:
        ip = ipaddress.ip_address(addr)
    except ValueError:
        return False
    return not (ip.is_loopback or ip.is_link_local or ip.is_unspecified or ip.is_multicast)


def student_urls(address: str | None, port: int, path: str = "") -> list[str]:
    """The addresses a person in the room can open: every non-loopback address of this machine
    when bound to all interfaces, else the bind address itself."""
    bound = (address or "").strip()
    if bound in ANY_ADDRESSES:
        want_v6 = bound == "::"
        hosts = sorted({a for addrs in interface_addresses().values() for a in addrs
                        if _reachable(a) and (want_v6 or ":" not in a)}, key=lambda a: (":" in a, a))
    else:
        hosts = [bound]
    return [f"http://{f'[{h}]' if ':' in h else h}:{port}/{path.lstrip('/')}" for h in hosts]


def serve_lines(address: str, port: int, code: str | None) -> list[str]:
    """What `aee app` prints at start: where to open the app and, when served, the join code."""
    if not served_to_network(address):
        return [f"starting the dashboard on http://{address}:{port} (this machine only; "
                "`aee app --address 0.0.0.0` serves a room)"]
    urls = student_urls(address, port)
    lines = [f"starting the dashboard for a room, listening on {address}:{port}"]
    lines += [f"  open: {u}" for u in urls] or ["  no network address found on this machine"]
    lines.append(f"  join code (needed to write labels or record a study): {code}")
    lines.append("  anyone who can reach these addresses can read every page; only people with the code can write")
    return lines


@dataclass
class RateLimit:
    """A token bucket: `burst` writes at once, refilled at `per_minute`; `allow()` spends one."""

    per_minute: float = 60.0
    burst: float = 20.0
    clock: Callable[[], float] = time.monotonic
    _tokens: float = field(default=-1.0, repr=False)
    _last: float = field(default=0.0, repr=False)

    def allow(self) -> bool:
        now = self.clock()
        if self._tokens < 0:
            self._tokens, self._last = self.burst, now
        self._tokens = min(self.burst, self._tokens + (now - self._last) * self.per_minute / 60.0)
        self._last = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False


def configured_code() -> str | None:
    code = normalise_code(os.environ.get(JOIN_CODE_ENV, ""))
    return code or None
