"""A small real conflict-probe run for the tests that need one on disk (tests/pages/test_conflict_page.py,
tests/browser/test_browser.py): the bundled illustrative set against the fake OpenAI server."""

from __future__ import annotations

from pathlib import Path

from pipeline.conflict import probe_ask, probe_run
from pipeline.conflict.perturb import parse_perturbations
from pipeline.conflict.probe_data import load_probe_data
from pipeline.testing.fake_openai import FakeOpenAIServer


def write_probe_run(results: Path, name: str = "fake-illustrative") -> Path:
    """A small real probe run on the bundled illustrative set against the fake server: the model
    always answers with the first passage's side, and with the side of a passage that opens with
    the relevance prefix."""
    def handler(req):
        user = req.messages[1]["content"]
        first = user.split("Passage 2:")[0]
        second = user.split("Passage 2:")[1]
        from pipeline.conflict.perturb import RELEVANCE_PREFIX

        prefix = RELEVANCE_PREFIX.split("{")[0]
        chosen = second if prefix in second and prefix not in first else first
        data = load_probe_data()
        for q in data.questions:
            for p in q.paragraphs:
                if p.text[:60] in chosen:
                    return "Yes" if p.stance == "yes" else "No"
        return "Maybe"

    data = load_probe_data()
    # two questions keep it quick
    small = type(data)(data.path, data.sha256, data.questions[:2], data.skipped)
    with FakeOpenAIServer() as server:
        server.handler = handler
        asker = probe_ask.Asker("fake-model", server.base_url, None, max_retries=0, timeout=5)
        probe_run.run_probe(small, asker, probe_ask.ProbeCache(results.parent / "probe-cache.sqlite"),
                            perturbations=parse_perturbations("relevance_prefix,references"),
                            out_dir=probe_run.probes_root(results) / name, concurrency=4, progress=False)
    return probe_run.probes_root(results) / name
