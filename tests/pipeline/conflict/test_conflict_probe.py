"""The convincingness probe end to end against the local fake OpenAI-compatible server.

The fake "model" is scripted: it takes the side of the passage shown first with a known extra
logit (an order bias), prefers the passage with the relevance prefix by a known logit (a relevance
effect), and otherwise follows a hidden strength per paragraph. From the same script the test
computes the win-rates, the order bias and the perturbation effects independently, and the probe
must recover them: exactly from log-probabilities, within its intervals from sampled words.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from tolerances import close

from pipeline.cli import main
from pipeline.conflict import probe_ask, probe_run
from pipeline.conflict.perturb import PERTURBATIONS, RELEVANCE_PREFIX, parse_perturbations
from pipeline.conflict.probe_data import load_probe_data
from pipeline.conflict.probe_stats import mean_interval, wilson
from pipeline.testing.fake_openai import FakeOpenAIServer, FakeResponse, chat_completion

ORDER_LOGIT = 1.0  # the first passage's side gets this much extra log-odds
RELEVANCE_LOGIT = 1.5  # a passage opening with the relevance prefix gets this much
PREFIX = RELEVANCE_PREFIX.split("{")[0]
STRENGTHS = (-0.6, -0.2, 0.3, 0.7)


def _data(tmp_path: Path, questions: int = 4, per_side: int = 4) -> tuple[Path, dict[str, float], dict[str, str]]:
    """Questions whose paragraphs each carry a code word the fake model looks up."""
    strength, stance_of, lines = {}, {}, []
    for q in range(questions):
        paragraphs = []
        for stance in ("yes", "no"):
            for k in range(per_side):
                code = f"code{q}{stance}{k}"
                strength[code] = STRENGTHS[(k + q + (stance == "no")) % len(STRENGTHS)]
                stance_of[code] = stance
                paragraphs.append({"id": f"{stance}{k}", "stance": stance.upper() if k == 0 else stance,
                                   "url": f"https://s{k}.example/{code}",
                                   "text": f"Paragraph {code} may possibly argue {stance} about topic {q}!"})
        lines.append(json.dumps({"id": f"q{q}", "question": f"Is claim {q} true?", "paragraphs": paragraphs}))
    path = tmp_path / "probe.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path, strength, stance_of


def _p_first(first: str, second: str, strength: dict[str, float]) -> tuple[float, str, str]:
    """P(the answer takes the first passage's side), and the two passages' codes."""
    c1, c2 = re.search(r"code\w+", first).group(0), re.search(r"code\w+", second).group(0)
    z = ORDER_LOGIT + strength[c1] - strength[c2] + RELEVANCE_LOGIT * (first.startswith(PREFIX) - second.startswith(PREFIX))
    return 1 / (1 + math.exp(-z)), c1, c2


def _passages(user: str) -> tuple[str, str]:
    m = re.search(r"Passage 1:\n(.*)\n\nPassage 2:\n(.*)\n\nRelying only", user, re.DOTALL)
    return m.group(1), m.group(2)


def _script(strength, stance_of, *, logprobs: bool):
    def handler(req):
        body = req.body or {}
        if not logprobs and body.get("logprobs"):
            return FakeResponse(status=400, content="logprobs are not supported by this server")
        first, second = _passages(req.messages[1]["content"])
        p_first, c1, _ = _p_first(first, second, strength)
        p_yes = p_first if stance_of[c1] == "yes" else 1 - p_first
        if logprobs:
            word = "Yes" if p_yes >= 0.5 else "No"
            out = chat_completion(word)
            out["choices"][0]["logprobs"] = {"content": [{"token": word, "logprob": math.log(max(p_yes, 1 - p_yes)), "top_logprobs": [
                {"token": "Yes", "logprob": math.log(p_yes)}, {"token": " no", "logprob": math.log(1 - p_yes)},
                {"token": "Maybe", "logprob": -9.0}]}]}
            return out
        u = int(hashlib.sha256(req.raw.encode()).hexdigest()[:12], 16) / 16**12  # a fixed "random" draw per prompt
        return "Yes." if u < p_yes else "no"
    return handler


def _expected(data_path: Path, strength, stance_of, perturbations: list[str]) -> tuple[dict, float]:
    """From the script alone: per (variant, paragraph) the soft and hard win-rate, and the mean
    P(first passage's side) in the original variant."""
    data = load_probe_data(data_path)
    calls = probe_run.plan_calls(data, perturbations, "m", None)
    wins: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
    firsts = []
    for c in calls:
        first, second = _passages(c.messages[1]["content"])
        p_first, c1, _ = _p_first(first, second, strength)
        p_yes = p_first if stance_of[c1] == "yes" else 1 - p_first
        if c.variant == "original":
            firsts.append(p_first)
        for pid, stance in ((c.yes_id, "yes"), (c.no_id, "no")):
            p_side = p_yes if stance == "yes" else 1 - p_yes
            wins.setdefault((c.variant, c.question_id, pid), []).append((p_side, float(p_side >= 0.5 if stance == "yes" else p_side > 0.5)))
    table = {k: (sum(s for s, _ in v) / len(v), sum(h for _, h in v) / len(v)) for k, v in wins.items()}
    return table, sum(firsts) / len(firsts)


@pytest.fixture
def server():
    with FakeOpenAIServer() as s:
        yield s


def _asker(server, **kw) -> probe_ask.Asker:
    return probe_ask.Asker("fake-model", server.base_url, "sk-test-key-1234567890", max_retries=0, timeout=5, **kw)


def test_logprobs_recover_order_bias_and_relevance_effect_exactly(server, tmp_path):
    path, strength, stance_of = _data(tmp_path, questions=3)
    server.handler = _script(strength, stance_of, logprobs=True)
    perturbations = parse_perturbations("relevance_prefix,references")
    result = probe_run.run_probe(load_probe_data(path), _asker(server), probe_ask.ProbeCache(tmp_path / "c.sqlite"),
                                 perturbations=perturbations, out_dir=tmp_path / "run", concurrency=8, progress=False)
    expected, first_share = _expected(path, strength, stance_of, perturbations)
    s = result.summary
    assert s["calls"] == 3 * 16 * 2 * 4 and s["read_from_logprobs"] == s["calls"] and s["failed"] == 0
    # order bias: the probe's soft first-position share is the script's mean P(first side)
    assert s["order_bias"]["first_share_soft"] == pytest.approx(first_share, abs=1e-9)
    assert first_share > 0.65  # the scripted bias is visible, not hidden by the strengths
    # every paragraph's soft and hard win-rate, in every variant
    for r in result.paragraphs.to_dict("records"):
        soft, hard = expected[(r["variant"], r["question_id"], r["paragraph_id"])]
        assert r["p_win"] == pytest.approx(soft, abs=1e-9) and r["win_rate"] == pytest.approx(hard, abs=1e-12)
        assert r["comparisons"] == 8 and r["ci_low"] <= r["win_rate"] <= r["ci_high"]
    effects = result.effects.set_index(["perturbation", "baseline"])

    def true_effect(name: str, base: str) -> float:
        keys = [k for k in expected if k[0] == name and k[2].startswith("yes")]
        return sum(expected[k][0] - expected[(base, k[1], k[2])][0] for k in keys) / len(keys)

    relevance = effects.loc[("relevance_prefix", "control")]
    assert relevance["effect_soft"] == pytest.approx(true_effect("relevance_prefix", "control"), abs=1e-9)
    assert relevance["effect_soft"] > 0.2 and relevance["soft_ci_low"] > 0 and relevance["ci_low"] > 0
    # the script ignores references and the control sentence: no effect at all
    for name, base in (("references", "control"), ("control", "original")):
        assert effects.loc[(name, base), "effect_soft"] == pytest.approx(0.0, abs=1e-12)
        assert effects.loc[(name, base), "effect"] == close(0.0)
    assert effects.loc[("relevance_prefix", "control"), "paragraphs"] == 12  # the yes paragraphs it edited
    # the files on disk hold the same numbers
    on_disk = probe_run.load_run(tmp_path / "run")
    assert on_disk["summary"]["order_bias"]["first_share_soft"] == pytest.approx(first_share, abs=1e-9)
    assert len(on_disk["calls"]) == s["calls"] and set(on_disk["effects"]["perturbation"]) == {"control", "relevance_prefix", "references"}


def test_words_recover_bias_and_effect_within_intervals(server, tmp_path):
    path, strength, stance_of = _data(tmp_path, questions=6)
    server.handler = _script(strength, stance_of, logprobs=False)
    asker = _asker(server)
    perturbations = parse_perturbations("relevance_prefix")
    result = probe_run.run_probe(load_probe_data(path), asker, probe_ask.ProbeCache(tmp_path / "c.sqlite"),
                                 perturbations=perturbations, out_dir=tmp_path / "run", concurrency=8, progress=False)
    s = result.summary
    assert asker.logprobs is False and s["read_from_word"] == s["calls"] == 6 * 16 * 2 * 3
    bodies = [r.body for r in server.chat_requests]
    assert sum(1 for b in bodies if b.get("logprobs")) <= 8  # asked once per worker before it learnt, then never
    expected, first_share = _expected(path, strength, stance_of, perturbations)
    bias = s["order_bias"]
    assert bias["first_ci"][0] <= first_share <= bias["first_ci"][1]
    assert abs(bias["first_share"] - first_share) < 0.08 and bias["first_share_soft"] is None
    keys = [k for k in expected if k[0] == "relevance_prefix" and k[2].startswith("yes")]
    true_effect = sum(expected[k][0] - expected[("control", k[1], k[2])][0] for k in keys) / len(keys)
    relevance = result.effects.set_index(["perturbation", "baseline"]).loc[("relevance_prefix", "control")]
    assert relevance["ci_low"] <= true_effect <= relevance["ci_high"] and relevance["ci_low"] > 0
    assert relevance["effect_soft"] is None or relevance["effect_soft"] != relevance["effect_soft"]


def test_perturbing_the_no_side(server, tmp_path):
    path, strength, stance_of = _data(tmp_path, questions=2, per_side=2)
    server.handler = _script(strength, stance_of, logprobs=True)
    perturbations = parse_perturbations("relevance_prefix")
    result = probe_run.run_probe(load_probe_data(path), _asker(server), probe_ask.ProbeCache(tmp_path / "c.sqlite"),
                                 perturbations=perturbations, out_dir=tmp_path / "run", perturb_stance="no", progress=False)
    edited = result.paragraphs[result.paragraphs["perturbed"]]
    assert set(edited["stance"]) == {"no"} and set(edited["variant"]) == {"control", "relevance_prefix"}
    effect = result.effects.set_index(["perturbation", "baseline"]).loc[("relevance_prefix", "control")]
    assert effect["stance"] == "no" and effect["paragraphs"] == 4 and effect["effect_soft"] > 0.2
    prompts = [r.messages[1]["content"] for r in server.chat_requests if PREFIX in r.messages[1]["content"]]
    assert prompts and all(re.search(PREFIX + r"[^\n]*\nParagraph code\d+no", p) for p in prompts)


def test_resume_asks_only_what_failed(server, tmp_path):
    path, strength, stance_of = _data(tmp_path, questions=2, per_side=2)
    good = _script(strength, stance_of, logprobs=True)
    server.handler = lambda req: FakeResponse(status=500) if "code0yes1" in req.raw else good(req)
    cache = probe_ask.ProbeCache(tmp_path / "c.sqlite")
    data = load_probe_data(path)
    first = probe_run.run_probe(data, _asker(server), cache, perturbations=[], out_dir=tmp_path / "run", progress=False)
    failed = first.summary["failed"]
    assert failed == 4 and first.calls["error"].str.contains("500").sum() == 4  # yes1 of q0: 2 opponents x 2 orders
    assert first.paragraphs.set_index(["question_id", "paragraph_id"]).loc[("q0", "yes1"), "unreadable"] == 4
    server.reset()
    server.handler = good
    second = probe_run.run_probe(data, _asker(server), cache, perturbations=[], out_dir=tmp_path / "run", progress=False)
    assert len(server.chat_requests) == failed and second.summary["failed"] == 0
    assert second.summary["from_cache"] == second.summary["calls"] - failed
    # a rerun of a complete run asks nothing
    server.reset()
    server.handler = good
    probe_run.run_probe(data, _asker(server), cache, perturbations=[], out_dir=tmp_path / "run", progress=False)
    assert server.chat_requests == []


def test_effect_interval_covers_the_truth_in_simulation():
    """The effect interval's coverage, by simulation: 20 edited paragraphs, 8 sampled comparisons
    each under the control and under a perturbation with known win probabilities. The 95% interval
    must hold the true mean change in at least ~95% of runs (t over paragraphs is a little
    conservative here: 97.5%)."""
    rng = np.random.default_rng(7)
    base = rng.uniform(0.2, 0.8, size=20)
    lift = rng.uniform(0.0, 0.4, size=20)
    truth = float(np.mean(np.clip(base + lift, 0, 1) - base))
    covered = 0
    for _ in range(400):
        diff = (rng.binomial(8, np.clip(base + lift, 0, 1)) - rng.binomial(8, base)) / 8
        low, high = mean_interval(diff)
        covered += low <= truth <= high
    assert 0.93 <= covered / 400 <= 0.99


def test_cli_run_dry_run_and_bad_input(server, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("AEE_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    path, strength, stance_of = _data(tmp_path, questions=2, per_side=2)
    server.handler = _script(strength, stance_of, logprobs=True)
    base = ["probe", "conflict", "--data", str(path), "--model", "fake-model", "--base-url", server.base_url, "--no-progress"]
    assert main(base + ["--dry-run", "--perturb", "relevance_prefix", "--price-in", "1", "--price-out", "2"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["calls"] == 2 * 4 * 2 * 3 and plan["to_send"] == plan["calls"] and server.chat_requests == []
    assert plan["calls_by_variant"] == {"original": 16, "control": 16, "relevance_prefix": 16}
    assert plan["cost_usd"] == pytest.approx(plan["input_tokens"] / 1e6 + 2 * plan["output_tokens"] / 1e6)
    assert main(base + ["--perturb", "relevance_prefix", "--name", "cli-run"]) == 0
    out = capsys.readouterr().out
    assert "effect of relevance_prefix vs control on yes paragraphs" in out and "order bias" in out
    assert probe_run.list_runs() == [tmp_path / "results" / "_probes" / "conflict" / "cli-run"]
    assert "sk-" not in (tmp_path / "results" / "_probes" / "conflict" / "cli-run" / "summary.json").read_text()
    assert main(base + ["--dry-run", "--perturb", "relevance_prefix"]) == 0
    assert json.loads(capsys.readouterr().out)["to_send"] == 0  # all in the cache now

    bad = tmp_path / "bad.jsonl"
    for content, needle in (('{"question": "Q?", "paragraphs": [{"text": "t", "stance": "maybe"}]}', "bad.jsonl:1"),
                            ("not json", "bad.jsonl:1"),
                            ('{"question": "Q?", "paragraphs": [{"text": "t", "stance": "yes"}]}', "no question has both")):
        bad.write_text(content + "\n")
        assert main(["probe", "conflict", "--data", str(bad), "--model", "m", "--base-url", server.base_url]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and needle in err and len(err.strip().splitlines()) == 1
    assert main(base + ["--perturb", "louder"]) == 2
    assert "unknown perturbation louder" in capsys.readouterr().err


def test_failed_calls_say_why_one_line_per_distinct_reason(server, tmp_path, capsys, monkeypatch):
    """Issue 31 re-check: the probe printed only "216 calls failed"; it now lists the reasons."""
    monkeypatch.setenv("AEE_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    path, strength, stance_of = _data(tmp_path, questions=2, per_side=2)
    good = _script(strength, stance_of, logprobs=False)

    def handler(req):
        if "code0yes1" in req.raw:
            return FakeResponse(body={"id": "x", "object": "chat.completion", "choices": []})
        if "code1no0" in req.raw:
            return FakeResponse(status=400, body={"error": {"message": "model overloaded today"}})
        return good(req)

    server.handler = handler
    base = ["probe", "conflict", "--data", str(path), "--model", "fake-model", "--base-url", server.base_url,
            "--no-progress", "--perturb", "control", "--no-logprobs"]
    assert main(base + ["--name", "why"]) == 1
    out = capsys.readouterr().out.splitlines()
    head = next(k for k, line in enumerate(out) if "calls failed" in line)
    failed = int(out[head].split()[0])
    reasons = out[head + 1: head + 3]
    assert out[head].endswith("why:") and all(line.startswith("  ") for line in reasons), out
    assert sorted(int(line.split(" x ")[0]) for line in reasons) == [8, 8] and failed == 16
    texts = sorted(line.split(" x ", 1)[1] for line in reasons)
    assert texts[0].startswith("HTTP 400: ") and "model overloaded today" in texts[0]
    assert texts[1] == "server returned no choices"
    summary = json.loads((tmp_path / "results" / "_probes" / "conflict" / "why" / "summary.json").read_text())
    assert sum(r["calls"] for r in summary["failure_reasons"]) == failed


def test_a_redirect_refusal_stops_the_probe_and_keeps_the_last_run(server, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("AEE_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    path, strength, stance_of = _data(tmp_path, questions=2, per_side=2)
    server.handler = _script(strength, stance_of, logprobs=True)
    out_dir = tmp_path / "probe-out"
    base = ["probe", "conflict", "--data", str(path), "--model", "fake-model", "--no-progress", "--out", str(out_dir)]
    assert main(base + ["--base-url", server.base_url, "--perturb", "control"]) == 0
    before = {p.name: p.read_bytes() for p in out_dir.iterdir()}
    capsys.readouterr()
    with FakeOpenAIServer() as elsewhere:
        server.reset()
        server.handler = lambda req: FakeResponse(status=302, headers={"Location": f"{elsewhere.base_url}/canary"})
        code = main(base + ["--base-url", server.base_url, "--perturb", "relevance_prefix", "--concurrency", "4"])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2
        assert len(err) == 1 and err[0].startswith("error: field '--base-url': the probe stopped at its first refused call")
        assert "redirect refused" in err[0] and "another port" in err[0]
        assert len(server.chat_requests) == 1 and elsewhere.chat_requests == []  # one call, then nothing
    assert {p.name: p.read_bytes() for p in out_dir.iterdir()} == before  # the last good run's files stay


def test_perturbations_keep_the_code_and_change_the_text():
    text = "Coffee clearly PROVES it may possibly help! Some evidence suggests so. In May it could not."
    out = {name: p.apply(text, "Does coffee help?") for name, p in PERTURBATIONS.items()}
    assert out["control"].startswith(text) and out["control"] != text
    assert out["relevance_prefix"].startswith("This passage is about the question: Does coffee help?\n")
    assert out["references"].endswith("(2023).") and "References" in out["references"]
    assert out["neutral"] == "Coffee indicates it may possibly help. Some evidence suggests so. In May it could not."
    assert "will certainly help" in out["confident"] and "Strong evidence shows so." in out["confident"]
    assert "In May" in out["confident"] and "will not" in out["confident"]  # the month and the negation survive
    with pytest.raises(ValueError):
        parse_perturbations("relevance_prefix,shouting")
    assert parse_perturbations("all")[0] == "control" and parse_perturbations("") == []


def test_reading_replies():
    assert probe_ask.read_reply("Yes", None).answer == "yes"
    assert probe_ask.read_reply(" no, because", None) == probe_ask.ProbeReply("no", None, "word", " no, because")
    assert probe_ask.read_reply("It depends", None).method == "unparsed"
    lp = {"content": [{"token": " ", "logprob": -0.01, "top_logprobs": [{"token": " ", "logprob": -0.01}]},
                      {"token": "No", "logprob": math.log(0.6), "top_logprobs": [
                          {"token": "No", "logprob": math.log(0.6)}, {"token": "YES", "logprob": math.log(0.2)},
                          {"token": "yes", "logprob": math.log(0.1)}]}]}
    reply = probe_ask.read_reply("No", lp)
    assert reply.answer == "no" and reply.p_yes == pytest.approx(0.3 / 0.9) and reply.method == "logprobs"
    assert wilson(0, 0) == (None, None)
    low, high = wilson(8, 10)
    assert (low, high) == close((0.4902, 0.9433), 5e-5)  # the four decimals of the published Wilson table


def test_bundled_illustrative_set():
    data = load_probe_data()
    assert data.illustrative and len(data.questions) == 6 and not data.skipped
    assert all(len(q.side("yes")) == 3 and len(q.side("no")) == 3 for q in data.questions)
    assert all(p.url.split("/")[2].endswith(".example") for q in data.questions for p in q.paragraphs)
    frame = pd.DataFrame([{"q": q.id, "n": len(q.paragraphs)} for q in data.questions])
    assert frame["n"].sum() == 36
