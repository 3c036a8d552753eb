"""Golden tests for response shapes seen in real recorded responses (tests/fixtures/engines/shapes/,
written in our own words in those shapes): each listed phrase cites exactly the sources expected,
hand-checked by reading the fixture, and the import report counts how every citation got there."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pipeline.cli import main as cli_main
from pipeline.errors import InputError
from pipeline.importers import default_judge
from pipeline.importers.engine_common import citation_warnings
from pipeline.importers.engines import ImportOptions, conversation_answer, detect, engine_answer, iter_answers
from pipeline.importers.import_report import ImportReport

SHAPES = Path(__file__).resolve().parents[2] / "fixtures" / "engines" / "shapes"


def load(name: str):
    (answer,) = iter_answers(SHAPES / name, None, ImportOptions(query="Asked by the test?"))
    text = answer.answer.text
    assert all(text[s.start:s.end] == s.text for s in answer.statements)
    return answer


def cites(annotated) -> dict[str, tuple[int, ...]]:
    return {s.text: s.citations for s in annotated.statements}


def starting(annotated, prefix: str) -> tuple[int, ...]:
    (found,) = [s.citations for s in annotated.statements if s.text.startswith(prefix)]
    return found


def notes(annotated) -> dict:
    return json.loads(annotated.answer.meta.get("citation_notes") or "{}")


def test_openai_early_shape_without_offsets_is_located_by_its_links():
    a = load("openai_responses_early.json")
    assert [(s.index, s.url.split("?")[0], s.title) for s in a.answer.sources] == [
        (1, "https://heat.example.org/urban-heat-islands", "Urban heat islands explained"),
        (2, "https://parks.example.com/shade-study", "Shade and indoor heat"),
        (3, "https://lost.example.net/never-linked", "A page the answer never links")]  # listed, cited nowhere in the text
    assert starting(a, "Tree cover cools streets") == (1,)
    assert starting(a, "Shade from parks") == (2,)
    # OpenAI cites per paragraph: the link closing the paragraph covers the uncited sentence before it
    assert starting(a, "Planting costs are modest") == (1,)
    assert a.answer.meta["citation_scope"] == "paragraph" and a.answer.meta["citation_scope_covered"] == "1"
    assert starting(a, "Cities that planted early") == (1,)  # the link on its own line: the sentence before it
    assert starting(a, "Irrigation in dry climates") == ()
    assert notes(a) == {"spans_by_text": 3, "spans_in_paragraph": 1, "spans_placed": 3, "spans_url_not_in_text": 1}


def test_gemini_parts_thoughts_and_a_missing_part_index():
    a = load("gemini_multipart.json")
    assert [(s.index, s.title) for s in a.answer.sources] == [(1, "who.int"), (2, "who.int"), (3, "cdc.gov"), (4, "who.int")]
    assert cites(a) == {
        "I will search for recent figures first.": (),  # a preamble part, not glued to the answer's first sentence
        "Measles cases rose sharply in 2024 — mostly in under-vaccinated regions.": (1, 2),  # partIndex left out
        "Two doses of the vaccine are about 97% effective.": (3,),
        "Outbreaks in Europe reached a 25-year high (WHO estimate).": (2, 4),  # no confidenceScores; same title, 2 sources
        "Vaccination coverage still lags in parts of Africa.": (4,),  # bytes only, no segment text
    }
    assert "The user wants" not in a.answer.text  # the thought part
    assert notes(a) == {"spans_by_text": 1, "spans_not_answer_text": 1, "spans_placed": 4}


def test_gemini_stream_chunks_with_cjk_and_emoji():
    a = load("gemini_stream.json")
    assert cites(a) == {"東京の人口は約1400万人です🏙️。": (1,), "Tokyo's density is about 6,400 people per km².": (1,),
                        "Its rail network carries 40 million trips a day.": (2,)}
    assert notes(a) == {"spans_placed": 3}  # byte offsets over the joined chunks, none needed the text


def test_vertex_retrieved_context_and_web_chunks():
    a = load("vertex_grounding.json")
    assert [(s.index, s.url[:24], s.text) for s in a.answer.sources] == [
        (1, "gs://energy-docs/degrada", "Median loss is half a percent a year."),
        (2, "https://vertexaisearch.c", ""), (3, "https://vertexaisearch.c", "")]
    assert cites(a) == {"Solar panels lose about 0.5% of output per year.": (1,), "Most warranties cover 25 years.": (1, 2),
                        "Recycling capacity is still small.": (3,)}
    assert "<script>" not in a.answer.text  # the search entry point's HTML is not answer text


def test_perplexity_markers_after_brackets_and_list_items():
    a = load("perplexity_markers.json")
    assert [s.title for s in a.answer.sources] == ["City census", "", "", "Founding", "Climate normals"]
    assert a.answer.sources[0].text == "An estimated 827,526 people."  # search_results add the snippet by URL
    assert cites(a) == {
        "**Population**: 827,526 (2024 estimate)[1][2][3].": (1, 2, 3),
        "The city is the state capital[2].": (2,),
        "Founded in 1781 (as a mission)[4]": (4,),
        'Largest employer: the university ["UC system"][1][5]': (1, 5),
        "Area: 250 km² ([official figure])[3]": (3,),
        "Its climate is Mediterranean (hot, dry summers)[5].": (5,),
    }
    assert "skyline" not in json.dumps([s.url for s in a.answer.sources])  # images are not sources


def test_perplexity_stream_of_chunks():
    a = load("perplexity_stream.jsonl")
    assert a.answer.engine == "perplexity:sonar"
    assert cites(a) == {"Bees pollinate about a third of food crops [1].": (1,), "Wild bees matter as much as honeybees [2].": (2,)}
    assert a.answer.sources[0].title == "Crops and pollinators"


def test_anthropic_pause_turn_conversation_three_ways(capsys):
    whole = load("anthropic_conversation.json")
    expected = {"I'll search for glacier data.": (), "Alpine glaciers lost about 3% of their volume in 2025.": (2,),
                "Retreat has sped up since 2000 on every continent.": (1,)}
    assert cites(whole) == expected
    assert [s.url for s in whole.answer.sources] == ["https://glaciers.example.org/retreat", "https://ice.example.net/alps-2025"]
    joined = conversation_answer([SHAPES / "anthropic_pause_a.json", SHAPES / "anthropic_pause_b.json"])
    assert cites(joined) == expected and joined.answer.answer_id == whole.answer.answer_id
    paused = load("anthropic_pause_a.json")
    assert notes(paused)["paused_turn"] == 1 and any("pause_turn" in w for w in citation_warnings(paused))
    code = cli_main(["score", str(SHAPES / "anthropic_pause_a.json"), str(SHAPES / "anthropic_pause_b.json"), "--conversation",
                     "--judge", "recorded", "--json"])
    out = capsys.readouterr()
    assert code == 0 and [s["citations"] for s in json.loads(out.out)["statements"]] == [[], [2], [1]]


def test_conversation_refused_with_the_reason(tmp_path):
    with pytest.raises(InputError, match="not 'pause_turn'"):
        conversation_answer([SHAPES / "anthropic_pause_b.json", SHAPES / "anthropic_pause_a.json"])
    with pytest.raises(InputError, match="openai-chat"):
        conversation_answer([SHAPES / "openai_chat_no_annotations.json", SHAPES / "anthropic_pause_b.json"])


def test_anthropic_stream_events():
    a = load("anthropic_stream.jsonl")
    assert cites(a) == {"The bridge opened in 1937 after four years of work.": (1,)}  # text and citation deltas joined
    assert "Search for the bridge" not in a.answer.text  # thinking deltas are not answer text


def test_openai_responses_server_sent_events_without_a_completed_event():
    a = load("openai_responses_stream.sse")
    assert starting(a, "Lead pipes remain") == (1,) and starting(a, "Replacing them") == ()
    assert a.answer.engine == "openai:gpt-4.1"


def test_chat_search_model_without_annotations_has_no_sources(capsys):
    a = load("openai_chat_no_annotations.json")
    assert a.answer.sources == () and all(s.citations == () for s in a.statements)
    assert notes(a) == {"no_citations": 1}
    assert cli_main(["score", str(SHAPES / "openai_chat_no_annotations.json"), "--judge", "recorded"]) == 0
    out = capsys.readouterr()
    assert "carry no citations" in out.err and "Citation accuracy" in out.out and "(no citations)" in out.out


def test_anthropic_web_fetch_thinking_and_document_citations():
    a = load("anthropic_web_fetch.json")
    assert [(s.url, s.title, s.text) for s in a.answer.sources] == [
        ("https://water.example.org/reservoir", "Reservoir facts", "The reservoir holds 1.2 billion cubic metres. It supplies two cities.")]
    assert cites(a) == {"The reservoir holds 1.2 billion cubic metres of water.": (1,), "It was finished in 1968.": ()}
    assert notes(a) == {"document_citations": 1, "search_errors": 1, "spans_placed": 1}


def test_import_report_of_the_shapes_folder(tmp_path, capsys):
    folder = tmp_path / "shapes"
    shutil.copytree(SHAPES, folder)
    (folder / "anthropic_conversation.json").unlink()  # holds the same answer as the two pause files
    answers = list(iter_answers(folder, None, ImportOptions(query="q?")))
    report = ImportReport().extend(answers).as_dict()
    assert report["gemini_multipart.json"] == {
        "answers": 1, "statements": 5, "sources": 4, "by_markers": 0, "by_offsets": 3, "by_text": 1, "dropped": 1, "dangling": 0, "beyond_table": 0,
        "why_dropped": {"not_answer_text": 1}, "formats": {"gemini": 1}}
    assert report["perplexity_markers.json"]["by_markers"] == 9 and report["perplexity_markers.json"]["by_offsets"] == 0
    assert report["openai_responses_early.json"]["by_text"] == 3
    assert report["openai_responses_early.json"]["why_dropped"] == {"url_not_in_text": 1}


# ---- --format auto on the releases ---------------------------------------------------------------


EXPERTQA = {"question": "Why do cats purr?", "annotator_id": "a1", "metadata": {"field": "Biology", "question_type": "x"},
            "answers": {"gpt4": {"answer_string": "Cats purr when content [1].", "attribution": ["[1] https://cats.example/purr"],
                                 "claims": [{"claim_string": "Cats purr when content [1].", "evidence": ["[1] https://cats.example/purr"],
                                             "support": "Complete", "informativeness": "Very relevant"}]}}}
HAGRID = {"query_id": "7", "query": "What is a quasar?", "quotes": [{"idx": 1, "docid": "d1", "text": "A quasar is a bright galaxy core."}],
          "answers": [{"answer": "A quasar is a bright galactic nucleus [1].", "sentences": [
              {"text": "A quasar is a bright galactic nucleus [1].", "index": 0, "attributable": 1, "informative": 1}]}]}
AEE = {"id": "s1", "Question": "Is tea healthy?", "Output": "Tea has antioxidants [1].", "answer_engine": "bing", "S1": "https://tea.example",
       "S1_content": "Title: Tea\nTea has antioxidants.", "is_charged": 0, "core_statements": [
           {"sentence": "Tea has antioxidants [1].", "citations": [1], "supporting_sources": [1], "core": 1}]}


@pytest.mark.parametrize("name, record, judge", [("expertqa", EXPERTQA, "human"), ("hagrid", HAGRID, "human"), ("aee", AEE, "recorded")])
def test_auto_recognises_the_releases(tmp_path, name, record, judge):
    path = tmp_path / "folder" / ("ans.json" if name == "aee" else "dev.jsonl")
    path.parent.mkdir()
    path.write_text(json.dumps(record) + ("\n" if name != "aee" else ""))
    assert detect(record) == name and default_judge("auto", path.parent) == judge
    (answer,) = iter_answers(path.parent)
    assert answer.answer.meta["format"] == name and answer.statements[0].citations == (1,)


def test_an_unrecognised_record_says_what_was_tried(tmp_path):
    path = tmp_path / "odd.jsonl"
    path.write_text(json.dumps({"question": "Why?", "answer_text": "Because.", "refs": []}) + "\n")
    with pytest.raises(InputError) as err:
        list(iter_answers(path))
    message = str(err.value)
    assert "no format recognised" in message and "canonical (" in message and "'answer_id'" in message
    for name in ("expertqa 1/3", "others 0", "closest: expertqa, lacking 'answers'"):
        assert name in message, message


def test_a_stream_inside_an_envelope_and_a_bare_stream_agree():
    events = [json.loads(line) for line in (SHAPES / "anthropic_stream.jsonl").read_text().splitlines()]
    wrapped = engine_answer({"query": "Asked by the test?", "engine": "anthropic", "response": events}, "case")
    assert cites(wrapped) == cites(load("anthropic_stream.jsonl"))


def test_you_agents_api_batch_and_stream():
    a = load("you_agent.json")
    assert [(s.index, s.title, s.text) for s in a.answer.sources] == [
        (1, "Night trains return", "New routes since 2021."), (2, "Network map", "The largest sleeper network."),
        (3, "Fares compared", "Sleepers cost more.")]
    assert cites(a) == {"Night trains are returning across Europe [1].": (1,),
                        "Austria's operator runs the largest network [2].": (2,),
                        "Sleeper fares are often higher than flights [1][3].": (1, 3)}  # the "####" heading is no statement
    s = load("you_agent_stream.sse")
    assert detect([{"seq_id": 0, "type": "response.created"}]) == "you"
    assert cites(s) == {"Tides come from the moon's pull [1].": (1,), "The sun adds a smaller effect.": ()}


def test_openai_responses_current_shape_with_reasoning_and_opened_pages():
    a = load("openai_responses_current.json")
    assert [(s.index, s.url, s.title) for s in a.answer.sources] == [
        (1, "https://usgs.example.gov/cobalt", "Cobalt statistics"),  # listed by the search, cited with utm_source
        (2, "https://mining.example.com/cobalt-2025", ""),  # found by the search, never cited
        (3, "https://iea.example.org/batteries", "Battery outlook")]  # opened page, then cited
    assert starting(a, "Most of the world's cobalt") == (1,) and starting(a, "Battery makers") == (3,)
    assert "encrypted" not in a.answer.text and "can't share" not in a.answer.text  # reasoning and refusal parts
    assert "gAAAAAB" not in a.answer.meta["raw_response"]  # the encrypted blob is not kept, its length is


def test_chat_search_model_stream_with_annotations_on_the_last_delta():
    a = load("openai_chat_stream.jsonl")
    assert a.answer.engine == "openai:gpt-4o-search-preview"
    assert [s.title for s in a.answer.sources] == ["Aspirin history"]
    assert [s.citations for s in a.statements] == [(1,)]


def test_litellm_copy_of_a_grounded_gemini_answer():
    a = load("litellm_gemini.json")
    assert a.answer.meta["format"] == "gemini" and a.answer.engine == "gemini:gemini-2.5-flash"
    assert [(s.index, s.title) for s in a.answer.sources] == [(1, "ibge.gov.br"), (2, "ibge.gov.br")]
    assert cites(a) == {"São Paulo has about 11.9 million people.": (1,), "Its metro area counts over 22 million.": (1, 2)}
    assert notes(a) == {"spans_placed": 2}  # byte offsets after "ã" land without help


def test_gemini_chunks_as_jsonl_are_one_stream_but_separate_answers_stay_separate(tmp_path):
    chunks = json.loads((SHAPES / "gemini_stream.json").read_text())["response"]
    for chunk in chunks:
        chunk.pop("responseId")  # no id: the first chunk not saying why it finished makes it a stream
    stream = tmp_path / "stream.jsonl"
    stream.write_text("".join(json.dumps(c) + "\n" for c in chunks))
    (a,) = iter_answers(stream, None, ImportOptions(query="q?"))
    assert [s.citations for s in a.statements] == [(1,), (1,), (2,)]
    one = json.loads((SHAPES.parent / "gemini_grounding.json").read_text())["response"]
    two = {**one, "responseId": "second-answer"}
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps({**one, "responseId": "first-answer"}) + "\n" + json.dumps(two) + "\n")
    assert len(list(iter_answers(answers, None, ImportOptions(query="q?")))) == 2
    single = engine_answer({"query": "q?", "engine": "gemini", "response": [chunks[0]]}, "case")  # a list of one chunk
    assert single.answer.text.startswith("東京")
