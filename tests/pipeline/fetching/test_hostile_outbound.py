"""Every call the toolkit makes with the user's API key stays on the endpoint the user configured: a
server answering `302 Location: http://127.0.0.1:<another port>/canary` (or 307, or a redirect to
another scheme) gets the request refused with a line saying so, and the canary server never sees the
key, for each call site: `aee collect`, the OpenAI judge (plain and Azure), the chat caller behind
MiniCheck, and the conflict probe. Only 127.0.0.1 is contacted. And what the fetcher brings back
(issue 46): text only when it is text, and the cloud-metadata address only by its own entry."""

from __future__ import annotations

import json
import random
import threading
from pathlib import Path

import pytest
from timing import guard

from pipeline.cli import main as cli_main
from pipeline.collect.client import Backoff, post_json
from pipeline.conflict import probe_ask
from pipeline.fetching.outbound import hop_problem, origin_of
from pipeline.judges.backends.llm_client import ChatCaller
from pipeline.judges.backends.llm_retry import EndpointRefused
from pipeline.judges.backends.openai_judge import OpenAIJudge
from pipeline.testing.fake_openai import chat_completion
from pipeline.testing.stub_server import StubRequest, StubServer

KEY = "sk-canary-test-KEY-0000SECRET9"


class Canary(StubServer):
    """Records every request it gets (headers included) and answers 200 with a valid chat reply."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[dict[str, str]] = []
        self._seen_lock = threading.Lock()

    def _log(self, request: StubRequest) -> None:
        with self._seen_lock:
            self.seen.append({"path": request.path, **{k.lower(): v for k, v in request.headers.items()}})

    def handle_get(self, request: StubRequest) -> None:
        self._log(request)
        request.send(200, json.dumps(chat_completion("yes")).encode())

    def handle_post(self, request: StubRequest) -> None:
        self._log(request)
        request.read_body()
        request.send(200, json.dumps(chat_completion("yes")).encode())

    def saw_key(self) -> bool:
        return any(KEY in value for entry in self.seen for value in entry.values())


class Redirector(StubServer):
    """Answers every request with a redirect (code `status`) to `target`."""

    def __init__(self, target: str, status: int = 302) -> None:
        super().__init__()
        self.target, self.status, self.hits = target, status, 0

    def _redirect(self, request: StubRequest) -> None:
        self.hits += 1
        request.read_body()
        request.send(self.status, b"{}", headers={"Location": self.target})

    handle_get = _redirect
    handle_post = _redirect

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@pytest.fixture(params=[302, 307])
def pair(request):
    with Canary() as canary, Redirector(f"http://127.0.0.1:{canary.port}/canary", status=request.param) as redirector:
        yield redirector, canary


def _refusal_said(text: str, canary: Canary) -> None:
    assert "redirect refused" in text and f"127.0.0.1:{canary.port}" in text and "another port" in text, text
    assert KEY not in text


def test_hop_rules_are_the_origin_of_the_configured_endpoint():
    assert origin_of("HTTPS://API.Example.COM/v1") == ("https", "api.example.com", 443)
    assert hop_problem("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v2") is None
    assert "another port" in hop_problem("http://127.0.0.1:8000/v1", "http://127.0.0.1:22/")
    assert "another host" in hop_problem("https://api.example.com", "https://evil.example.net/")
    assert "another scheme" in hop_problem("https://api.example.com", "http://api.example.com/")
    assert "another port" in hop_problem("https://api.example.com", "https://api.example.com:8443/")
    assert "unsupported scheme" in hop_problem("https://api.example.com", "file:///etc/passwd")


def test_collect_client_refuses_to_carry_the_key_elsewhere(pair):
    redirector, canary = pair
    result = post_json(f"{redirector.base_url}/chat/completions", {"Authorization": f"Bearer {KEY}"}, {"q": 1},
                       timeout=guard(5), backoff=Backoff(base=0.01, cap=0.01, attempts=3), secret=KEY)
    assert not result.ok and result.fatal and result.attempts == 1
    _refusal_said(result.error, canary)
    assert canary.seen == [] and redirector.hits == 1


def test_aee_collect_stops_with_one_line_and_the_canary_sees_nothing(pair, tmp_path, monkeypatch, capsys):
    redirector, canary = pair
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("AEE_COLLECT_PERPLEXITY_BASE_URL", redirector.base_url)
    monkeypatch.setenv("PERPLEXITY_API_KEY", KEY)
    queries = tmp_path / "q.jsonl"
    queries.write_text("".join(json.dumps({"query": f"Is question {k} fine?"}) + "\n" for k in range(5)), encoding="utf-8")
    out = tmp_path / "out"
    code = cli_main(["collect", "--engine", "perplexity", "--queries", str(queries), "--out", str(out), "--no-progress",
                     "--concurrency", "1"])
    captured = capsys.readouterr()
    assert code != 0
    _refusal_said(captured.err + captured.out, canary)
    assert not canary.saw_key() and canary.seen == []
    assert redirector.hits == 1  # the run stopped at the first refusal instead of asking every query
    assert KEY not in "".join(p.read_text(encoding="utf-8") for p in out.rglob("*") if p.is_file())


def test_openai_judge_refuses_and_does_not_retry(pair):
    """A refused redirect is a configuration error: the call raises, and every later call raises
    without sending anything (issue 31 re-check: the judge went on for 107 refused calls)."""
    redirector, canary = pair
    judge = OpenAIJudge(base_url=f"{redirector.base_url}/v1", api_key=KEY, model="m", max_retries=3, timeout=guard(5))
    with pytest.raises(EndpointRefused) as first:
        judge._call([{"role": "user", "content": "hello"}])
    _refusal_said(str(first.value), canary)
    with pytest.raises(EndpointRefused):
        judge._call([{"role": "user", "content": "again"}])
    assert canary.seen == [] and redirector.hits == 1 and judge.stats["requests"] == 1


def test_azure_judge_key_header_goes_nowhere_else(pair):
    redirector, canary = pair
    judge = OpenAIJudge(base_url=redirector.base_url, api_key=KEY, model="m", api_version="2024-06-01", max_retries=1,
                        timeout=guard(5))
    with pytest.raises(EndpointRefused) as refused:
        judge._call([{"role": "user", "content": "hello"}])
    _refusal_said(str(refused.value), canary)
    assert canary.seen == []  # httpx strips Authorization across origins, but not Azure's api-key: we refuse


def test_minicheck_chat_caller_refuses(pair):
    redirector, canary = pair
    caller = ChatCaller(base_url=f"{redirector.base_url}/v1", api_key=KEY, model="m", max_retries=2, timeout=guard(5))
    with pytest.raises(EndpointRefused) as refused:
        caller.complete([{"role": "user", "content": "hello"}])
    _refusal_said(str(refused.value), canary)
    assert canary.seen == [] and caller.stats.get("retries", 0) == 0 and redirector.hits == 1


def test_concurrent_judge_calls_send_one_request_to_a_redirecting_endpoint(pair):
    """Calls go one at a time until one has come back, so workers already waiting send nothing."""
    redirector, canary = pair
    judge = OpenAIJudge(base_url=f"{redirector.base_url}/v1", api_key=KEY, model="m", max_retries=0, timeout=guard(5),
                        concurrency=8)
    errors: list[BaseException] = []

    def call(k: int) -> None:
        try:
            judge._call([{"role": "user", "content": f"q{k}"}])
        except EndpointRefused as exc:
            errors.append(exc)

    threads = [threading.Thread(target=call, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=guard(60))  # a hang guard
    assert len(errors) == 8 and redirector.hits == 1 and canary.seen == []


DEMO = Path(__file__).resolve().parents[3] / "data" / "demo" / "answers.jsonl"


def _judge_env(monkeypatch, tmp_path, redirector) -> None:
    monkeypatch.setenv("AEE_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("AEE_FETCH", "off")
    monkeypatch.setenv("AEE_OPENAI_API_KEY", KEY)
    monkeypatch.setenv("AEE_OPENAI_BASE_URL", f"{redirector.base_url}/v1")


def test_aee_score_with_a_redirecting_judge_stops_with_one_error_line_and_exit_2(pair, tmp_path, monkeypatch, capsys):
    redirector, canary = pair
    _judge_env(monkeypatch, tmp_path, redirector)
    code = cli_main(["score", str(DEMO), "--judge", "openai", "--no-fetch"])
    captured = capsys.readouterr()
    assert code == 2
    errors = [line for line in captured.err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "judge stopped at its first refused call" in errors[0]
    _refusal_said(errors[0], canary)
    assert "not checked" not in captured.out  # no scorecard of unchecked statements
    assert redirector.hits == 1 and canary.seen == []


def test_aee_run_with_a_redirecting_judge_exits_2_and_keeps_the_earlier_results(pair, tmp_path, monkeypatch, capsys):
    redirector, canary = pair
    _judge_env(monkeypatch, tmp_path, redirector)
    assert cli_main(["run", "--dataset", "D", "--path", str(DEMO), "--judge", "offline", "--limit", "3", "--no-progress"]) == 0
    before = {p: p.read_bytes() for p in (tmp_path / "results").rglob("*") if p.is_file()}
    capsys.readouterr()
    code = cli_main(["run", "--dataset", "D", "--path", str(DEMO), "--judge", "openai", "--limit", "3", "--no-progress"])
    captured = capsys.readouterr()
    assert code == 2 and "judge stopped at its first refused call" in captured.err
    assert {p: p.read_bytes() for p in (tmp_path / "results").rglob("*") if p.is_file()} == before
    assert redirector.hits == 1 and canary.seen == []


def test_conflict_probe_refuses(pair):
    redirector, canary = pair
    asker = probe_ask.Asker("m", f"{redirector.base_url}/v1", KEY, timeout=guard(5), max_retries=2)
    reply = asker.ask([{"role": "user", "content": "yes or no?"}])
    assert reply.method == "error"
    _refusal_said(reply.error, canary)
    assert canary.seen == [] and redirector.hits == 1


def test_a_redirect_within_the_endpoint_is_still_followed(tmp_path):
    """Same origin, another path: followed (a trailing-slash redirect must keep working)."""

    class SameOrigin(Canary):
        def handle_post(self, request: StubRequest) -> None:
            if request.path.startswith("/old"):
                request.read_body()
                request.send(307, b"{}", headers={"Location": request.path.replace("/old", "/v1", 1)})
            else:
                super().handle_post(request)

    with SameOrigin() as server:
        caller = ChatCaller(base_url=f"http://127.0.0.1:{server.port}/old", api_key=KEY, model="m", max_retries=0)
        reply = caller.complete([{"role": "user", "content": "hello"}])
        assert reply.error is None and reply.text == "yes"
        assert [entry["path"] for entry in server.seen] == ["/v1/chat/completions"]


def test_the_project_has_no_other_keyed_client():
    """Every OpenAI-compatible client in pipeline/ is built through `guarded_openai`, every keyed urllib
    call through `guarded_opener` (a new call site must come here and get its own test)."""
    root = Path(__file__).resolve().parents[3] / "pipeline"
    offenders = []
    for path in root.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for needle in ("openai.OpenAI(", "openai.AzureOpenAI(", "httpx.Client(", "requests.post("):
            if needle in text and "testing" not in path.parts:
                offenders.append(f"{path.relative_to(root)}: {needle}")
    assert offenders == []


# ---- issue 46: text kept only when it is text; the metadata address only by its own entry -------------


RANDOM_BYTES = random.Random(46).randbytes(300_000)


@pytest.fixture
def pages(tmp_path, monkeypatch):
    """A loopback server with binary bodies under text types, and the fetcher allowed to reach it."""
    from test_fetch import PDF_BYTES

    from pipeline.testing.stub_server import StubRequest, StubServer

    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    bodies = {"/random.txt": (RANDOM_BYTES, "text/plain"),
              "/random-utf8.txt": (RANDOM_BYTES, "text/plain; charset=utf-8"),
              "/random.html": (RANDOM_BYTES, "text/html"),
              "/paper.html": (PDF_BYTES, "text/html"),
              "/paper.txt": (PDF_BYTES, "text/plain"),
              "/accents.txt": ("Crème brûlée, naïve café.\fNext page\tcolumn\r\n".encode("cp1252") * 50,
                               "text/plain; charset=windows-1252")}

    class Pages(StubServer):
        def handle_get(self, request: StubRequest) -> None:
            body, kind = bodies[request.path]
            request.send(200, body, kind)

    with Pages() as server:
        yield f"http://127.0.0.1:{server.port}", {"allow_hosts": [f"127.0.0.1:{server.port}"]}


@pytest.mark.parametrize("path, kind", [("/random.txt", "text/plain"), ("/random-utf8.txt", "text/plain"),
                                        ("/random.html", "text/html")])
def test_random_bytes_served_as_text_are_not_kept_as_text(pages, path, kind):
    """Was: ok=true with up to 2 million characters of noise as the source's text."""
    from pipeline.fetching.fetch import fetch_source
    from pipeline.fetching.fetch_outcome import plain_reason

    base, allow = pages
    result = fetch_source(base + path, **allow)
    assert not result.ok and result.text == "" and result.status == 200
    assert result.reason.startswith(f"unsupported content: binary data served as {kind} ("), result.reason
    assert plain_reason(result) == "the page is a kind of file the fetcher cannot read"


@pytest.mark.parametrize("path", ["/paper.html", "/paper.txt"])
def test_a_pdf_served_as_text_is_read_as_a_pdf(pages, path):
    pytest.importorskip("pypdf")
    from pipeline.fetching.fetch import fetch_source

    base, allow = pages
    result = fetch_source(base + path, **allow)
    assert result.ok and result.content_type == "application/pdf", result.reason
    assert "Hello PDF world" in result.text and "%PDF" not in result.text


def test_text_with_accents_form_feeds_and_tabs_is_still_text(pages):
    from pipeline.fetching.fetch import fetch_source

    base, allow = pages
    result = fetch_source(base + "/accents.txt", **allow)
    assert result.ok and result.text.startswith("Crème brûlée, naïve café.")


@pytest.mark.parametrize("entries", [["0.0.0.0/0"], ["169.254.0.0/16"], ["169.254.169.254:8080"],
                                     ["0.0.0.0/0", "::/0"]])
def test_a_network_that_holds_the_metadata_address_does_not_open_it(monkeypatch, entries):
    """Was: `--fetch-allow-host 0.0.0.0/0` or `169.254.0.0/16` let 169.254.169.254 through."""
    from pipeline.fetching import fetch

    contacted: list = []
    monkeypatch.setattr(fetch, "_connect", lambda address, timeout: contacted.append(address) or pytest.fail("connected"))
    result = fetch.fetch_source("http://169.254.169.254/latest/meta-data/", allow_hosts=entries)
    assert not result.ok and contacted == []
    assert result.reason == "refused: cloud metadata address 169.254.169.254 port 80 (host 169.254.169.254)"


@pytest.mark.parametrize("entry", ["169.254.169.254", "169.254.169.254/32", "169.254.169.254:80"])
def test_the_metadata_address_opens_by_its_own_entry(monkeypatch, entry):
    from pipeline.fetching import fetch

    contacted: list = []

    def refuse(address, timeout):
        contacted.append(address)
        raise ConnectionRefusedError(111, "Connection refused")  # nothing is sent anywhere

    monkeypatch.setattr(fetch, "_connect", refuse)
    result = fetch.fetch_source("http://169.254.169.254/latest/meta-data/", allow_hosts=[entry])
    assert contacted == [("169.254.169.254", 80)] and "cloud metadata" not in result.reason
