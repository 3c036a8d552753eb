"""The gate every chat client sends through (pipeline/judges/backends/llm_retry.py): a bound on
requests at once across threads, and a server's Retry-After holding off every request, not only
the refused one. (The same bound across Ray workers: test_executor.py and test_ray_executor.py.)"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from openai_fixtures import TEST_KEY, sample_answer

from pipeline.judges.backends.llm_retry import Gate
from pipeline.judges.backends.openai_judge import OpenAIJudge
from pipeline.testing.fake_openai import FakeOpenAIServer, FakeResponse


def test_the_gate_admits_at_most_its_bound():
    gate, lock = Gate(3), threading.Lock()
    inside, most = [0], [0]

    def request(_: int) -> None:
        with gate:
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            time.sleep(0.02)
            with lock:
                inside[0] -= 1

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(request, range(24)))
    assert most[0] == 3 and inside[0] == 0


def test_a_hold_off_keeps_everyone_out_until_it_passes():
    gate = Gate(4)
    gate.hold_off(0.3)
    gate.hold_off(0.1)  # never shortens the first
    started = time.monotonic()
    with gate:
        waited = time.monotonic() - started
    assert waited >= 0.28


def test_retry_after_from_one_request_holds_off_the_others():
    answer, statements = sample_answer(2)
    arrivals: list[float] = []

    def reply(request):
        arrivals.append(time.monotonic())
        if len(arrivals) == 1:
            return FakeResponse(status=429, headers={"Retry-After": "0.6"}, content="slow down")
        return FakeResponse(content='{"results": [{"id": 1, "label": "full", "passage": "P1", "quote": ""}, '
                                    '{"id": 2, "label": "none", "passage": "P1", "quote": ""}]}', delay=0.05)

    with FakeOpenAIServer() as server:
        server.handler = reply
        judge = OpenAIJudge(base_url=server.base_url, api_key=TEST_KEY, model="m", concurrency=2, backoff_base=0.01)
        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(lambda s: judge.support(answer, statements, s), [*answer.sources] * 3))
    assert all(v.error == "" for verdicts in results for v in verdicts)
    refused = arrivals[0]
    # the request admitted beside the refused one may arrive at once; nothing else until 0.6 s passed
    early = [t - refused for t in arrivals[1:] if 0.15 < t - refused < 0.55]
    assert not early, early
