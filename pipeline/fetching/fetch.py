"""Fetch a cited source safely and turn it into plain text.

Source URLs come from answer engines, i.e. from the open web, so the fetcher treats every URL as
hostile:

- only http and https;
- the host is resolved once and every address is checked: loopback, private, link-local,
  multicast, reserved, unspecified and cloud-metadata addresses are refused unless the caller
  allows them (`allow_hosts` for named hosts / addresses / networks, each with a port, or alone
  for its web ports 80 and 443 only; `allow_private` for private ranges; metadata endpoints need
  an `allow_hosts` entry of their own: their name or their one address, never a network that
  merely holds them, such as 0.0.0.0/0 or 169.254.0.0/16). A port is part of what is allowed: allowing a local mirror
  never lets a redirect reach another service of that machine (ssh on 22, a database);
- the connection goes to the address that was checked (the Host header and TLS SNI still carry
  the name), so a DNS answer that changes between check and connect cannot redirect us;
- redirects are followed by hand and each hop is checked the same way before any connection;
- the body is streamed and capped at `max_bytes`, and a watchdog closes the socket when the total
  time budget is spent, so a slow or endless server cannot hold a worker.

Nothing here raises for network or content problems: the result says `ok=False` and why, so
metrics can exclude dead sources. Results that reflect the server's answer are cached per URL and
UTC day as JSON under `cache_dir()/fetch/`.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import datetime as _dt
import hashlib
import http.client
import ipaddress
import json
import logging
import os
import re
import socket
import ssl
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any, Collection, Iterable
from urllib.parse import quote, urljoin, urlsplit

from pipeline.fetching.fetch_text import _decode_transfer, _extract, _Stop
from pipeline.storage.paths import cache_dir

log = logging.getLogger(__name__)

USER_AGENT = "aee-audit-fetcher/0.1 (answer-engine audit toolkit)"
CACHE_VERSION = 2  # 2: the addresses a fetch contacted are kept with their ports
REDIRECT_CODES = frozenset({301, 302, 303, 307, 308})

# Well-known instance-metadata endpoints. They are refused even with allow_private=True, because
# leaking cloud credentials is the classic SSRF payoff; only an explicit allow_hosts entry opens
# them.
METADATA_IPS = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "169.254.170.2", "100.100.100.200", "fd00:ec2::254")
)
METADATA_HOSTS = frozenset(
    {"metadata.google.internal", "metadata.goog", "metadata", "instance-data",
     "instance-data.ec2.internal"}
)

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True, slots=True)
class FetchResult:
    """What one fetch produced. `ok=False` always comes with a `reason`."""

    url: str  # as requested
    final_url: str  # after redirects; the refused hop when a redirect was refused
    ok: bool
    status: int | None  # last HTTP status received; None when no response was received
    reason: str  # "" when ok, else a short cause ("http 404 Not Found", "timeout", ...)
    content_type: str = ""  # media type without parameters, e.g. "text/html"
    title: str = ""
    text: str = ""  # extracted main text
    fetched_at: str = ""  # ISO date (UTC) of the fetch, e.g. "2026-11-22"
    from_cache: bool = False
    # Injection-like kinds found in the raw document (HTML markup included, so hidden-text
    # tricks survive text extraction); see pipeline.injection.injection.
    injection_kinds: tuple[str, ...] = ()


# --- address policy -------------------------------------------------------------------------


WEB_PORTS = {"http": 80, "https": 443}  # what an allow_hosts entry without a port opens
_ENTRY_PORT_RE = re.compile(r"(?:\[(?P<v6>[^\]]+)\]|(?P<host>[^:\[\]]+))(?::(?P<port>[0-9]{1,5}))?")


def parse_allow_entry(entry: str) -> tuple[str, int | None]:
    """An `allow_hosts` entry -> (host name, IP address or CIDR network, port or None).

    Forms: `host:port`, `192.0.2.7:8080`, `[::1]:8080`, `10.0.0.0/8:8080`, or the same without a
    port (then only the web ports, 80 for http and 443 for https, are open). A bare IPv6 address
    (`::1`) has no port; write `[::1]:8080` for one. ValueError for anything else."""
    item = str(entry).strip().lower().rstrip(".")
    if item.count(":") > 1 and not item.startswith("["):  # a bare IPv6 address or network: no port
        try:
            ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise ValueError(f"not a host, host:port, address or network: {str(entry)[:80]!r}") from None
        return item, None
    m = _ENTRY_PORT_RE.fullmatch(item)
    if not m:
        raise ValueError(f"not a host, host:port, address or network: {str(entry)[:80]!r}")
    host = (m.group("v6") or m.group("host") or "").strip().rstrip(".")
    port = int(m.group("port")) if m.group("port") else None
    if not host or (port is not None and not 1 <= port <= 65535):
        raise ValueError(f"not a host, host:port, address or network: {str(entry)[:80]!r}")
    return host, port


@dataclass(frozen=True)
class _Policy:
    # (name, port or None) and (network, port or None): None = the web ports only
    names: frozenset[tuple[str, int | None]]
    networks: tuple[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, int | None], ...]
    allow_private: bool

    @classmethod
    def build(cls, allow_hosts: Collection[str], allow_private: bool) -> _Policy:
        names: set[tuple[str, int | None]] = set()
        networks = []
        for entry in allow_hosts or ():
            if not str(entry).strip():
                continue
            host, port = parse_allow_entry(entry)
            try:
                networks.append((ipaddress.ip_network(host, strict=False), port))
            except ValueError:
                names.add((host, port))
        return cls(frozenset(names), tuple(networks), bool(allow_private))

    @staticmethod
    def _port_ok(allowed: int | None, port: int) -> bool:
        return port in WEB_PORTS.values() if allowed is None else port == allowed

    def listed(self, host: str, ip: IpAddress, port: int) -> bool:
        return (any(name == host and self._port_ok(p, port) for name, p in self.names)
                or any(ip in net and self._port_ok(p, port) for net, p in self.networks))

    def names_exactly(self, host: str, ip: IpAddress, port: int) -> bool:
        """True when an entry names this one address (a network of one address), or this host when
        it is a metadata host name, for this port: what opens a cloud-metadata address. A wider
        network that happens to hold it (0.0.0.0/0, 169.254.0.0/16) does not: whoever wrote it meant
        a range, not the metadata service; nor does another name that resolves there."""
        targets = {ip, _embedded_v4(ip)}
        return (any(name == host and host in METADATA_HOSTS and self._port_ok(p, port) for name, p in self.names)
                or any(net.num_addresses == 1 and net.network_address in targets and self._port_ok(p, port)
                       for net, p in self.networks))

    def names_host(self, host: str) -> bool:
        """True when some entry names this host (the only way to open a cloud-metadata name)."""
        return any(name == host for name, _ in self.names)


def _embedded_v4(ip: IpAddress) -> IpAddress:
    """The IPv4 address hidden in an IPv4-mapped, 6to4 or Teredo IPv6 address, if any."""
    if isinstance(ip, ipaddress.IPv6Address):
        for inner in (ip.ipv4_mapped, ip.sixtofour, ip.teredo[1] if ip.teredo else None):
            if inner is not None:
                return inner
    return ip


def _address_problem(ip: IpAddress) -> str | None:
    """Why this address must not be contacted by default, or None for a public address."""
    for candidate in (ip, _embedded_v4(ip)):
        if candidate in METADATA_IPS:
            return "cloud metadata"
    ip = _embedded_v4(ip)
    checks = (
        ("unspecified", ip.is_unspecified),
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),
        ("multicast", ip.is_multicast),
        ("private", ip.is_private),
        ("reserved", ip.is_reserved),
        ("non-global", not ip.is_global),
    )
    for name, hit in checks:
        if hit:
            return name
    return None


def _check_address(host: str, ip: IpAddress, port: int, policy: _Policy) -> None:
    problem = _address_problem(ip)
    if problem == "cloud metadata":
        if policy.names_exactly(host, ip, port):
            return
    elif problem is None or policy.listed(host, ip, port):
        return
    if problem != "cloud metadata" and policy.allow_private:
        return
    raise _Stop(f"refused: {problem} address {ip} port {port} (host {host})", refused=True)


# --- URL handling ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Target:
    scheme: str
    host: str  # ASCII (IDNA) host name or IP literal, no brackets
    port: int
    path: str  # request target: path + query, percent-encoded


_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")


def _parse(url: str) -> _Target:
    if not isinstance(url, str) or not url.strip():
        raise _Stop("invalid url: empty", refused=True)
    url = url.strip()
    if _CONTROL_RE.search(url):
        raise _Stop("invalid url: control characters", refused=True)
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise _Stop(f"invalid url: {exc}", refused=True) from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise _Stop(
            f"unsupported scheme: {scheme or 'none'} (only http and https)", refused=True
        )
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise _Stop("invalid url: no host", refused=True)
    try:
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError:
        raise _Stop("invalid url: bad port", refused=True) from None
    if "%" in host:  # IPv6 zone ids only make sense on the local link
        raise _Stop("invalid url: zone id in host", refused=True)
    try:
        ipaddress.ip_address(host)
    except ValueError:
        try:
            host = host.encode("idna").decode("ascii").lower()
        except UnicodeError:
            raise _Stop("invalid url: bad host name", refused=True) from None
    path = quote(parts.path or "/", safe="/%:@!$&'()*+,;=-._~")
    if parts.query:
        path += "?" + quote(parts.query, safe="/%:@!$&'()*+,;=-._~?")
    return _Target(scheme, host, port, path)


def _check_host(target: _Target, policy: _Policy) -> None:
    if target.host in METADATA_HOSTS and not policy.names_host(target.host):
        raise _Stop(f"refused: cloud metadata host {target.host}", refused=True)


def _resolve(host: str, port: int) -> list[IpAddress]:
    """All addresses for host (a literal IP resolves to itself without any lookup)."""
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    seen: list[IpAddress] = []
    for info in infos:
        addr = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
        if addr not in seen:
            seen.append(addr)
    return seen


# --- connections pinned to a checked address ------------------------------------------------


def _connect(address: tuple[str, int], timeout: float | None) -> socket.socket:
    """Open a TCP connection to an already-checked numeric address (tests wrap this)."""
    return socket.create_connection(address, timeout=timeout)


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """HTTP connection to a fixed IP while the Host header keeps the URL's name."""

    def __init__(self, host: str, port: int, ip: str, timeout: float):
        super().__init__(host, port, timeout=timeout)
        self._pinned_ip = ip

    def connect(self) -> None:
        self.sock = _connect((self._pinned_ip, self.port), self.timeout)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """HTTPS to a fixed IP; SNI and certificate checks use the URL's host name."""

    def __init__(self, host: str, port: int, ip: str, timeout: float, context: ssl.SSLContext):
        super().__init__(host, port, timeout=timeout, context=context)
        self._pinned_ip = ip
        self._pinned_context = context  # kept here: HTTPSConnection's own copy is private

    def connect(self) -> None:
        sock = _connect((self._pinned_ip, self.port), self.timeout)
        self.sock = self._pinned_context.wrap_socket(sock, server_hostname=self.host)


_SSL_CONTEXT: ssl.SSLContext | None = None


def _ssl_context() -> ssl.SSLContext:
    global _SSL_CONTEXT
    if _SSL_CONTEXT is None:
        _SSL_CONTEXT = ssl.create_default_context()
    return _SSL_CONTEXT


class _Watchdog:
    """Shut the socket down when the time budget ends, so no blocking read outlives it."""

    def __init__(self, sock: socket.socket, seconds: float):
        self.fired = False
        self._sock = sock
        self._timer = threading.Timer(max(seconds, 0.0), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        self.fired = True
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def cancel(self) -> None:
        self._timer.cancel()


def _remaining(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise _Stop("timeout")
    return left


def _open(target: _Target, ips: list[IpAddress], deadline: float) -> http.client.HTTPConnection:
    """Connect to the first reachable checked address."""
    last: Exception | None = None
    for ip in ips:
        left = _remaining(deadline)
        if target.scheme == "https":
            conn: http.client.HTTPConnection = _PinnedHTTPSConnection(
                target.host, target.port, str(ip), left, _ssl_context()
            )
        else:
            conn = _PinnedHTTPConnection(target.host, target.port, str(ip), left)
        try:
            conn.connect()
            return conn
        except (TimeoutError, socket.timeout):
            conn.close()
            raise _Stop("timeout") from None
        except ssl.SSLError as exc:
            conn.close()
            raise _Stop(f"tls error: {exc}") from None
        except OSError as exc:
            conn.close()
            last = exc
    raise _Stop(f"connection error: {last}")


# --- reading and decoding -------------------------------------------------------------------


def _read_body(
    resp: http.client.HTTPResponse, sock: socket.socket, deadline: float, max_bytes: int
) -> bytes:
    length = resp.getheader("Content-Length")
    if length and length.strip().isdigit() and int(length) > max_bytes:
        raise _Stop(f"too large: Content-Length {int(length)} > max_bytes {max_bytes}",
                    resp.status)
    buf = bytearray()
    while True:
        # http.client hands the socket to the response on "Connection: close", so the
        # timeout is set on the socket object we kept, not on conn.sock.
        sock.settimeout(_remaining(deadline))
        chunk = resp.read1(65536)
        if not chunk:
            break
        buf += chunk
        if len(buf) > max_bytes:
            raise _Stop(f"too large: more than max_bytes {max_bytes}", resp.status)
    return bytes(buf)


# --- cache ----------------------------------------------------------------------------------


def _today() -> str:
    return _dt.datetime.now(_dt.timezone.utc).date().isoformat()


def _cache_file(url: str, day: str):
    key = hashlib.sha256(f"{day}\n{url}".encode("utf-8")).hexdigest()
    return cache_dir() / "fetch" / f"{key}.json"


def _cache_read(url: str, day: str, policy: _Policy) -> FetchResult | None:
    path = _cache_file(url, day)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("version") != CACHE_VERSION or data["result"]["url"] != url:
            return None
        # A page fetched under a wider allowlist must not leak to a narrower caller: re-check
        # every address the original fetch contacted against the current policy.
        for host, ip, port in data.get("contacted", []):
            _check_address(host, ipaddress.ip_address(ip), int(port), policy)
            if host in METADATA_HOSTS and not policy.names_host(host):
                return None
        fields = dict(data["result"])
        fields["injection_kinds"] = tuple(fields.get("injection_kinds") or ())
        fields["from_cache"] = True
        return FetchResult(**fields)
    except _Stop:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _cacheable(result: FetchResult) -> bool:
    # Cache what the server said (content, 404, unsupported type...), not refusals or
    # transient failures (timeouts, connection errors, 5xx, 429), which a later run should
    # retry, nor size-cap failures, which depend on the caller's max_bytes.
    return (
        result.status is not None
        and result.status < 500
        and result.status != 429
        and result.reason != "timeout"
        and not result.reason.startswith("too large")
    )


def _cache_write(result: FetchResult, day: str, contacted: list[tuple[str, str, int]]) -> None:
    path = _cache_file(result.url, day)
    payload = {
        "version": CACHE_VERSION,
        "result": {**dataclasses.asdict(result), "from_cache": False,
                   "injection_kinds": list(result.injection_kinds)},
        "contacted": [list(c) for c in contacted],
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(payload, fh, ensure_ascii=False)
            os.replace(tmp, path)  # atomic, so concurrent readers never see half a file
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as exc:
        log.warning("could not write fetch cache %s: %s", path, exc)


# --- the fetch itself -----------------------------------------------------------------------


def _fetch_live(
    url: str, policy: _Policy, deadline: float, max_bytes: int, max_redirects: int,
    contacted: list[tuple[str, str, int]], trail: list[str], day: str,
) -> FetchResult:
    current = url
    status: int | None = None
    for hop in range(max_redirects + 1):
        trail.append(current)
        try:
            target = _parse(current)
            _check_host(target, policy)
            try:
                ips = _resolve(target.host, target.port)
            except (socket.gaierror, UnicodeError, OSError) as exc:
                raise _Stop(f"dns error: {exc}") from None
            if not ips:
                raise _Stop("dns error: no addresses")
            for ip in ips:  # every answer must pass, not just the one we will use
                _check_address(target.host, ip, target.port, policy)
        except _Stop as stop:
            if hop and stop.refused:
                raise _Stop(f"redirect to {current} refused: {stop.reason}", None,
                            refused=True) from None
            raise
        conn = _open(target, ips, deadline)
        contacted.append((target.host, conn._pinned_ip, target.port))  # type: ignore[attr-defined]
        sock = conn.sock
        watchdog = _Watchdog(sock, deadline - time.monotonic())
        try:
            try:
                conn.request("GET", target.path, headers={
                    "User-Agent": USER_AGENT,
                    "Accept": "text/html,application/xhtml+xml,text/plain;q=0.9,"
                              "application/pdf;q=0.8,*/*;q=0.1",
                    "Accept-Encoding": "gzip, deflate",
                    "Connection": "close",
                })
                resp = conn.getresponse()
                status = resp.status
                if status in REDIRECT_CODES:
                    location = resp.getheader("Location")
                    if not location:
                        raise _Stop("redirect without Location header", status)
                    current = urljoin(current, location.strip())
                    continue
                if not 200 <= status < 300:
                    raise _Stop(f"http {status} {resp.reason}".strip(), status)
                body = _read_body(resp, sock, deadline, max_bytes)
                if watchdog.fired:  # the shutdown looks like a clean EOF to the reader
                    raise _Stop("timeout", status)
                body = _decode_transfer(body, resp.getheader("Content-Encoding") or "",
                                        max_bytes, status)
                content_type = resp.getheader("Content-Type") or ""
            except _Stop:
                raise
            except Exception as exc:
                if watchdog.fired or time.monotonic() >= deadline or isinstance(
                    exc, (TimeoutError, socket.timeout)
                ):
                    raise _Stop("timeout", status) from None
                if isinstance(exc, ssl.SSLError):
                    raise _Stop(f"tls error: {exc}", status) from None
                raise _Stop(f"connection error: {type(exc).__name__}: {exc}", status) from None
        finally:
            watchdog.cancel()
            conn.close()
        mime, title, text, kinds = _extract(body, content_type, current, status)
        if not text.strip():
            return FetchResult(url, current, False, status, "no text extracted", mime, title,
                               "", day, False, kinds)
        return FetchResult(url, current, True, status, "", mime, title, text, day, False, kinds)
    raise _Stop(f"too many redirects (more than {max_redirects})", status)


def fetch_source(
    url: str,
    *,
    allow_hosts: Collection[str] = (),
    allow_private: bool = False,
    timeout: float = 10,
    max_bytes: int = 5_000_000,
    cache: bool = True,
    max_redirects: int = 5,
) -> FetchResult:
    """Fetch `url` under the safety rules above; never raises for network or content errors.

    `allow_hosts` lists host names, IP addresses or CIDR networks that may be contacted even
    though they are not public, each with the port it may be contacted on (`127.0.0.1:8080`), or
    without one for the web ports 80 and 443 only (`parse_allow_entry`); it does not restrict
    public hosts. ValueError for an entry of another form. `allow_private` opens every
    non-public range except cloud-metadata endpoints. `timeout` bounds the whole fetch,
    redirects included (DNS lookups excepted: they follow the system resolver's own timeout).
    """
    day = _today()
    policy = _Policy.build(allow_hosts, allow_private)
    if cache:
        hit = _cache_read(url, day, policy)
        if hit is not None:
            return hit
    deadline = time.monotonic() + max(float(timeout), 0.0)
    contacted: list[tuple[str, str, int]] = []
    trail: list[str] = []  # every URL tried, so a failure reports where it stopped
    try:
        result = _fetch_live(url, policy, deadline, int(max_bytes), int(max_redirects),
                             contacted, trail, day)
    except _Stop as stop:
        final = trail[-1] if trail else url
        result = FetchResult(url, final, False, stop.status, stop.reason, "", "", "", day)
    except Exception as exc:  # a bug or an odd library error must not kill a batch
        log.exception("unexpected fetch failure for %s", url)
        final = trail[-1] if trail else url
        result = FetchResult(url, final, False, None, f"error: {type(exc).__name__}: {exc}",
                             "", "", "", day)
    if cache and _cacheable(result):
        _cache_write(result, day, contacted)
    return result


def fetch_many(
    urls: Iterable[str], *, max_workers: int = 4, **kwargs: Any
) -> list[FetchResult]:
    """Fetch many URLs with a small thread pool; results in input order, duplicates fetched
    once. Keyword arguments go to `fetch_source`."""
    url_list = list(urls)
    unique = list(dict.fromkeys(url_list))
    if not unique:
        return []
    workers = max(1, min(int(max_workers), 8, len(unique)))
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers,
                                               thread_name_prefix="fetch") as pool:
        results = dict(zip(unique, pool.map(lambda u: fetch_source(u, **kwargs), unique)))
    return [results[u] for u in url_list]
