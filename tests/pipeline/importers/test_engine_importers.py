"""Golden tests: each engine's response format mapped to statements and the sources they cite.

The fixtures in tests/fixtures/engines/ are written by hand in each provider's documented shape
(capture envelopes around the response). Every expectation below was checked by reading the
fixture: which sentence a marker or span belongs to, which source number a URL gets.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path

import pytest

from pipeline.cli import main as cli_main
from pipeline.errors import InputError
from pipeline.importers import IMPORTERS, default_judge
from pipeline.importers.engine_common import Utf8Offsets, citation_warnings
from pipeline.importers.engines import ImportOptions, detect, engine_answer, iter_answers
from pipeline.metrics import score_answer
from pipeline.storage.store import result_set

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "engines"
MADRID = "https://www.madrid.es/portales/munimadrid/en/air-quality-report"
RETAIL = "https://retail-study.example.org/footfall-after-closures"
ZURICH = "https://www.stadt-zuerich.ch/en/mobility/cycling"
JS = "javascript:alert(document.cookie)"


def load(name: str):
    (answer,) = iter_answers(FIXTURES / name)
    return answer


def fixture(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def mapping(annotated) -> list[tuple[str, tuple[int, ...], tuple[int, ...]]]:
    """(statement text without its markers' URLs, cited sources, dangling) per statement."""
    return [(s.text, s.citations, s.dangling) for s in annotated.statements]


def notes(annotated) -> dict:
    return json.loads(annotated.answer.meta.get("citation_notes") or "{}")


def check_spans(annotated) -> None:
    text = annotated.answer.text
    assert all(text[s.start:s.end] == s.text for s in annotated.statements)
    for result in score_answer(annotated).values():
        assert result.value is None or result.value == result.value


# ---- Perplexity ---------------------------------------------------------------------------------


def test_perplexity_markers_map_to_citations_and_search_results():
    a = load("perplexity_sonar.json")
    check_spans(a)
    assert a.answer.engine == "perplexity:sonar-pro" and a.answer.query_type == "debate"
    assert [(s.index, s.url, s.title) for s in a.answer.sources] == [
        (1, MADRID, "Madrid Central: one year on"),
        (2, "https://air-study.example.com/no2-trends", "Air quality <img src=x onerror=alert(1)>"),
        (3, MADRID, "Madrid Central: one year on"),  # the engine listed this URL twice: kept as listed
        (4, JS, "Click me"),
    ]
    assert a.answer.sources[0].text == "Nitrogen dioxide at roadside monitors fell after the zone opened."
    assert {s.text_origin for s in a.answer.sources} == {"snippet"}
    assert a.answer.sources[3].text == "<script>document.location='https://evil.example'</script>"  # carried as text
    assert [(c, d) for _, c, d in mapping(a)] == [((1, 2), ()), ((3,), ()), ((4,), ()), ((), (7,)), ((1, 3), ())]
    assert mapping(a)[1][0].startswith("Shopkeepers often fear lost trade <script>alert(\"x\")</script>, yet")
    assert a.answer.meta["format"] == "perplexity" and a.answer.meta["sources"] == "snippet"


def test_perplexity_reasoning_block_is_not_answer_text():
    obj = fixture("perplexity_sonar.json")
    msg = obj["response"]["choices"][0]["message"]
    msg["content"] = "<think>The user asks about [2] cars.\nLet me think.</think>\n" + msg["content"]
    a = engine_answer(obj, "case")
    assert a.answer.text.startswith("Closing centres") and "<think>" not in a.answer.text
    assert notes(a)["reasoning_removed"] == 1
    assert [c for _, c, _ in mapping(a)][:2] == [(1, 2), (3,)]


def test_perplexity_with_search_results_only():
    obj = fixture("perplexity_sonar.json")
    del obj["response"]["citations"]
    a = engine_answer(obj, "case")
    assert [s.url for s in a.answer.sources] == [MADRID, "https://air-study.example.com/no2-trends", JS]
    assert [(c, d) for _, c, d in mapping(a)] == [((1, 2), ()), ((3,), ()), ((), (4,)), ((), (7,)), ((1, 3), ())]


# ---- OpenAI --------------------------------------------------------------------------------------


def test_openai_responses_spans_land_on_the_sentence_they_cite():
    a = load("openai_responses.json")
    check_spans(a)
    assert a.answer.engine == "openai:gpt-4.1-mini"  # the model asked for; the reply names a dated version
    assert a.answer.meta["model"] == "gpt-4.1-mini-2025-04-14" and a.answer.meta["requested_model"] == "gpt-4.1-mini"
    assert [(s.index, s.url, s.title) for s in a.answer.sources] == [
        (1, MADRID + "?utm_source=openai", "Madrid air quality report"),
        (2, RETAIL + "?utm_source=openai", "Footfall <script>alert(1)</script> after closures"),
        (3, ZURICH + "?utm_source=openai", "Cycling in Zürich"),
        (4, JS, "Help"),
        (5, "https://ghost.example.org/missing", "A page the text never links"),  # cited, offsets outside the text
    ]
    texts = [t for t, _, _ in mapping(a)]
    # the "([madrid.es](...))" written after the first full stop belongs to the first sentence
    assert texts[0].startswith("Closing city centres to cars lowers nitrogen dioxide. ([madrid.es](")
    assert texts[1].startswith("Shop revenue usually recovers within a year")
    assert texts[2].startswith("Zürich’s 🚲 share doubled")  # non-ASCII before a later span
    assert [(c, d) for _, c, d in mapping(a)] == [((1,), ()), ((2, 1), ()), ((3,), ()), ((4,), ())]
    assert notes(a) == {"spans_outside_text": 1, "spans_placed": 5}
    assert all(s.text == "" and s.text_origin == "" for s in a.answer.sources)  # no snippets in this API


def test_openai_offsets_off_their_link_are_repaired_by_the_url():
    obj = fixture("openai_responses.json")
    part = obj["response"]["output"][1]["content"][0]
    zurich = next(x for x in part["annotations"] if "zuerich" in x["url"])
    # offsets that do not hold the cited link (a client that counted differently or edited the text)
    zurich["start_index"] = part["text"].index("Critics")
    zurich["end_index"] = zurich["start_index"] + 12
    a = engine_answer(obj, "case")
    assert [c for _, c, _ in mapping(a)] == [(1,), (2, 1), (3,), (4,)]
    assert notes(a)["spans_by_text"] == 1


def test_openai_chat_search_model():
    a = load("openai_chat_search.json")
    check_spans(a)
    assert a.answer.query_type == "expertise"
    assert [s.title for s in a.answer.sources] == ["Madrid air quality report", "Footfall after closures"]
    assert [c for _, c, _ in mapping(a)] == [(1,), (2,)]


# ---- Anthropic -----------------------------------------------------------------------------------


def test_anthropic_cited_blocks_and_straddling_citation():
    a = load("anthropic_web_search.json")
    check_spans(a)
    assert [(s.index, s.url, s.title) for s in a.answer.sources] == [
        (1, MADRID, "Madrid Central evaluation"),
        (2, RETAIL, "Footfall <i>after</i> pedestrianisation"),
        (3, "javascript:void(0)", "<script>steal()</script>"),
    ]
    assert mapping(a) == [
        ("I'll look for recent evidence on car-free city centres.", (), ()),
        ("Based on the search results, the picture is mixed.", (), ()),
        ("Nitrogen dioxide fell by a fifth in Madrid.", (1,), ()),  # one cited block over two sentences:
        ("Levels stayed low two years later.", (1,), ()),  # it belongs to both
        ("Shop revenue dipped at first but recovered.", (1, 2), ()),  # Madrid cited a second time
        ("Disabled drivers reported longer trips.", (3,), ()),
    ]
    madrid = a.answer.sources[0]
    assert madrid.text_origin == "snippet" and madrid.text == (
        "Roadside NO2 fell about 20% in the first year and stayed near that level afterwards.\n\n"
        "Retail spending in the zone rose after an initial dip.")
    assert notes(a)["search_errors"] == 1 and notes(a)["spans_straddling"] == 1
    raw = a.answer.meta["raw_response"]
    assert "EqgfCioIARgBIiQ3YTAw" not in raw and "characters omitted" in raw  # opaque blobs are not kept


# ---- Gemini --------------------------------------------------------------------------------------


def test_gemini_byte_offsets_after_non_ascii_text():
    a = load("gemini_grounding.json")
    check_spans(a)
    assert [(s.index, s.title) for s in a.answer.sources] == [
        (1, "stadt-zuerich.ch"), (2, "<img src=x onerror=alert(1)>"), (3, "evil.example")]
    assert a.answer.sources[0].url.startswith("https://vertexaisearch.cloud.google.com/grounding-api-redirect/")
    assert mapping(a) == [
        ("Zürich’s car-free centre began in 1990.", (1,), ()),  # startIndex left out = 0
        ("Café owners there—despite early fears—saw steady trade.", (1, 2), ()),  # bytes, not characters
        ("Air quality improved within five years.", (3, 2), ()),  # partIndex 1; chunk 1 overlaps from "five"
        ("Critics say <script>alert(1)</script> deliveries got harder.", (2,), (8,)),  # chunk 7 is not listed
    ]
    assert notes(a) == {"chunk_index_outside_list": 1, "spans_outside_text": 1, "spans_placed": 5, "spans_straddling": 1}
    assert "spans_by_text" not in notes(a)  # the byte mapping needed no help from segment.text


def test_gemini_character_offsets_would_land_elsewhere():
    """The trap: reading the byte offsets as characters puts the second segment on the wrong words."""
    obj = fixture("gemini_grounding.json")
    part0 = obj["response"]["candidates"][0]["content"]["parts"][0]["text"]
    seg = obj["response"]["candidates"][0]["groundingMetadata"]["groundingSupports"][1]["segment"]
    assert part0[seg["startIndex"]:seg["endIndex"]] != seg["text"]
    table = Utf8Offsets(part0)
    assert part0[table.char(seg["startIndex"]):table.char(seg["endIndex"])] == seg["text"]
    # without segment.text to fall back on, the bytes alone still land right
    for support in obj["response"]["candidates"][0]["groundingMetadata"]["groundingSupports"]:
        support["segment"].pop("text", None)
    a = engine_answer(obj, "case")
    assert [c for _, c, _ in mapping(a)] == [(1,), (1, 2), (3, 2), (2,)]


def test_gemini_sdk_dump_in_snake_case():
    obj = fixture("gemini_grounding.json")

    def snake(value):
        if isinstance(value, dict):
            return {re.sub(r"(?<!^)(?=[A-Z])", "_", k).lower(): snake(v) for k, v in value.items()}
        return [snake(v) for v in value] if isinstance(value, list) else value

    obj["response"] = snake(obj["response"])
    a = engine_answer(obj, "case")
    assert mapping(a) == mapping(load("gemini_grounding.json"))


def test_utf8_offsets_inside_a_character_and_out_of_range():
    t = Utf8Offsets("a€b")  # € is 3 bytes
    assert [t.char(b) for b in range(6)] == [0, 1, 1, 1, 2, 3]
    assert t.char(-1) is None and t.char(6) is None


# ---- You.com and Exa -----------------------------------------------------------------------------


def test_you_answer_double_bracket_markers():
    a = load("you_answer.json")
    check_spans(a)
    assert [(s.index, s.url, s.title) for s in a.answer.sources] == [
        (1, MADRID, "Madrid Central: one year on"), (2, RETAIL, "Footfall after closures"), (3, JS, ""),
        (4, "https://access-now.example.net/blog/car-bans-and-disabled-drivers", "Car bans and disabled drivers")]
    assert a.answer.sources[1].text == "Takings were back to their earlier level within eleven months.\n\nFootfall rose 9%."
    assert [(c, d) for _, c, d in mapping(a)] == [((1,), ()), ((1, 2), ()), ((3,), ()), ((), ())]
    assert mapping(a)[3][0] == 'See <a href="javascript:alert(1)">this</a> too.'


def test_you_research_api_shape():
    obj = {"query": "q?", "engine": "you", "response": {"output": {"content": "Bikes are quiet [1]. Buses are big [2].",
           "content_type": "text", "sources": [{"url": "https://a.example/1", "title": "A", "snippets": ["quiet bikes"]},
                                               {"url": "https://b.example/2"}]}}}
    a = engine_answer(obj, "case")
    assert detect(obj) == "you" and [c for _, c, _ in mapping(a)] == [(1,), (2,)]
    assert a.answer.sources[0].text == "quiet bikes"


def test_exa_answer_level_citations():
    a = load("exa_answer.json")
    check_spans(a)
    assert [(s.index, s.title, s.text_origin) for s in a.answer.sources] == [
        (1, "Madrid Central: one year on", "snippet"), (2, "<b>Footfall</b> after closures", "snippet")]
    assert [c for _, c, _ in mapping(a)] == [(), ()]  # Exa lists sources for the whole answer


# ---- empty source lists, bare responses, envelopes -----------------------------------------------


EMPTY = {
    "perplexity": {"choices": [{"message": {"content": "Cars are loud [1]."}}], "citations": [], "model": "sonar"},
    "openai-responses": {"object": "response", "output": [
        {"type": "message", "content": [{"type": "output_text", "text": "Cars are loud.", "annotations": []}]}]},
    "openai-chat": {"choices": [{"message": {"content": "Cars are loud.", "annotations": []}}], "model": "gpt-4o-search-preview"},
    "anthropic": {"type": "message", "content": [{"type": "text", "text": "Cars are loud."}]},
    "gemini": {"candidates": [{"content": {"parts": [{"text": "Cars are loud."}]}, "groundingMetadata": {"groundingChunks": []}}]},
    "you": {"answer": "Cars are loud [[1]].", "citations": [], "results": {"web": []}},
    "exa": {"answer": "Cars are loud.", "citations": [], "costDollars": {"total": 0.005}},
}


@pytest.mark.parametrize("fmt", sorted(EMPTY))
def test_empty_source_list_scores(fmt):
    assert detect(EMPTY[fmt]) == fmt
    a = engine_answer(EMPTY[fmt], "case", options=ImportOptions(query="Are cars loud?"))
    assert a.answer.sources == () and a.answer.meta["format"] == fmt
    assert [s.text for s in a.statements][0].startswith("Cars are loud")
    assert all(s.citations == () for s in a.statements)
    check_spans(a)


def test_bare_response_needs_the_query():
    bare = fixture("perplexity_sonar.json")["response"]
    with pytest.raises(InputError, match="--query"):
        engine_answer(bare, "case")
    a = engine_answer(bare, "case", options=ImportOptions(query="Q?", engine="pplx-test", query_type="debate"))
    assert (a.answer.query, a.answer.engine, a.answer.query_type) == ("Q?", "pplx-test", "debate")


def test_every_fixture_is_detected_and_registered():
    for path in sorted(FIXTURES.glob("*.json")):
        obj = fixture(path.name)
        assert detect(obj) == obj["format"] == detect(obj["response"]), path.name
        assert obj["format"] in IMPORTERS and IMPORTERS[obj["format"]].takes_options
        assert default_judge("auto", path) == "offline"


def test_forcing_the_wrong_format_is_a_clear_error(tmp_path, capsys):
    obj = fixture("gemini_grounding.json")
    del obj["format"]
    path = tmp_path / "g.json"
    path.write_text(json.dumps(obj))
    assert cli_main(["score", str(path), "--format", "anthropic", "--judge", "recorded"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "content" in err[0]


def test_answer_id_is_stable_and_envelope_id_wins():
    obj = fixture("exa_answer.json")
    assert engine_answer(obj, "a").answer.answer_id == engine_answer(copy.deepcopy(obj), "b").answer.answer_id
    obj["id"] = "exa-run1-007"
    assert engine_answer(obj, "a").answer.answer_id == "exa-run1-007"


def test_warnings_in_plain_words():
    lines = citation_warnings(load("gemini_grounding.json"))
    assert any("does not list" in w for w in lines) and any("outside the answer text" in w for w in lines)


def test_cli_score_prints_format_statements_and_sources(capsys):
    assert cli_main(["score", str(FIXTURES / "anthropic_web_search.json")]) == 0
    out, err = capsys.readouterr()
    assert "format: anthropic (detected)" in err and "judge=offline" in out
    assert "    [3] <script>steal()</script>  <javascript:void(0)>  (snippet)" in out
    # each statement with its status by the sources it cites (the snippets were judged: none supports it)
    assert " 4. cites [1] [2] [unsupported]: Shop revenue dipped at first but recovered." in out
    assert " 0. cites - [uncited]: I'll look for recent evidence on car-free city centres." in out


def test_run_on_a_folder_of_captures_records_formats_in_the_manifest(results_root, capsys, tmp_path):
    folder = tmp_path / "engines"  # the seven top-level fixtures (shapes/ is a subfolder, read since issue 42)
    folder.mkdir()
    for path in FIXTURES.glob("*.json"):
        shutil.copy(path, folder / path.name)
    assert cli_main(["run", "--dataset", "engines", "--path", str(folder), "--judge", "recorded", "--no-progress"]) == 0
    manifest = json.loads((result_set("engines", results_root) / "recorded" / "manifest.json").read_text())
    assert manifest["config"]["formats"] == {"anthropic": 1, "exa": 1, "gemini": 1, "openai-chat": 1,
                                             "openai-responses": 1, "perplexity": 1, "you": 1}
    assert manifest["config"]["sources"] == {"snippet": 7}
    assert manifest["config"]["importer"] == "auto"
    import pandas as pd

    sources = pd.read_parquet(result_set("engines", results_root) / "sources.parquet")
    assert set(sources["text_origin"]) == {"", "snippet"}
    answers = pd.read_parquet(result_set("engines", results_root) / "answers.parquet")
    assert all(json.loads(m)["format"] for m in answers["meta"])


def test_a_folder_of_folders_is_read_whole(results_root, tmp_path, capsys):
    """`aee collect` writes one folder per engine: `aee run --path` on their parent reads them all,
    skipping `_rejected/`, `_collect.json` and hidden entries at every level."""
    caps = tmp_path / "captures"
    (caps / "perplexity").mkdir(parents=True)
    (caps / "openai" / "w2").mkdir(parents=True)
    (caps / "openai" / "_rejected").mkdir()
    (caps / ".cache").mkdir()
    shutil.copy(FIXTURES / "perplexity_sonar.json", caps / "perplexity" / "a.json")
    shutil.copy(FIXTURES / "openai_chat_search.json", caps / "openai" / "b.json")
    shutil.copy(FIXTURES / "openai_responses.json", caps / "openai" / "w2" / "c.json")
    for bad in (caps / "openai" / "_rejected" / "x.json", caps / ".cache" / "y.json", caps / "perplexity" / "_collect.json"):
        bad.write_text("{not json", encoding="utf-8")
    answers = list(iter_answers(caps))
    assert sorted(a.answer.meta["format"] for a in answers) == ["openai-chat", "openai-responses", "perplexity"]
    assert cli_main(["run", "--dataset", "caps", "--path", str(caps), "--judge", "recorded", "--no-progress"]) == 0
    manifest = json.loads((result_set("caps", results_root) / "recorded" / "manifest.json").read_text())
    assert manifest["config"]["formats"] == {"openai-chat": 1, "openai-responses": 1, "perplexity": 1}


def test_citation_accuracy_is_unknown_when_no_source_could_be_judged():
    """OpenAI and Gemini give no source text: without fetched pages nothing is judged, so accuracy is
    null with its reason (strict), not 0 - the same as the other support-based metrics."""
    a = load("openai_responses.json")
    results = score_answer(a)
    accuracy = results["citation_accuracy"]
    assert accuracy.value is None and accuracy.reason == "none of 5 citations judged (sources without text)"
    assert (accuracy.units, accuracy.unknown) == (5, 5)
    assert results["unsupported_statements"].value is None
    assert results["unsupported_statements"].reason.endswith("statements judged (sources without text)")
    from pipeline.metrics import ScoreConfig
    from pipeline.metrics.context import PARITY_SKIP_REASON

    # paper parity counts only sources whose text was fetched: with none, the notebook skips the answer
    assert score_answer(a, ScoreConfig("parity", "greedy"))["citation_accuracy"].reason == PARITY_SKIP_REASON
