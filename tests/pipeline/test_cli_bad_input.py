"""Bad input to `python -m pipeline score`: one clear line naming record and field, exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from timing import guard

ROOT = Path(__file__).resolve().parents[2]
GOOD = json.loads((ROOT / "tests" / "fixtures" / "worked_example.json").read_text())


def run_score(path: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipeline", "score", str(path), *extra], cwd=ROOT,
                          capture_output=True, text=True, timeout=guard(120))


def with_changes(**changes) -> dict:
    obj = json.loads(json.dumps(GOOD))
    for key, value in changes.items():
        if value is ...:
            obj.pop(key)
        else:
            obj[key] = value
    return obj


CASES = {
    "missing_query": (with_changes(query=...), ["fig7", "'query'", "missing"]),
    "wrong_type_sources": (with_changes(sources="none"), ["fig7", "'sources'", "list"]),
    "empty_answer": (with_changes(answer="   "), ["fig7", "'answer'", "empty"]),
    "bad_query_type": (with_changes(query_type="opinion"), ["fig7", "'query_type'"]),
    "bad_source_index": (with_changes(sources=[{"index": "one"}]), ["fig7", "'sources[0].index'"]),
    "huge_answer": (with_changes(answer="word " * 1_100_000), ["fig7", "'answer'", "limit"]),
    "bad_confidence": (with_changes(labels={"confidence": 9}), ["fig7", "'labels.confidence'"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_record_gives_one_line_exit_2(tmp_path, case):
    obj, needles = CASES[case]
    path = tmp_path / f"{case}.json"
    path.write_text(json.dumps(obj))
    out = run_score(path)
    assert out.returncode == 2, (out.stdout, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), out.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    assert "Traceback" not in out.stderr


def test_invalid_json_names_line_and_column(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"answer_id": "x", "engine": }')
    out = run_score(path)
    assert out.returncode == 2 and "broken.json" in out.stderr and "invalid JSON" in out.stderr


def test_non_utf8_bytes(tmp_path):
    path = tmp_path / "latin.json"
    path.write_bytes(json.dumps(GOOD).encode("utf-8").replace(b"Zoos confine", b"Zoos \xe9\xff confine"))
    out = run_score(path)
    assert out.returncode == 2 and "not UTF-8" in out.stderr


def test_missing_file(tmp_path):
    out = run_score(tmp_path / "nope.json")
    assert out.returncode == 2 and "cannot read file" in out.stderr


def test_nan_number_is_refused(tmp_path):
    path = tmp_path / "nan.json"
    path.write_text(json.dumps(GOOD).replace('"confidence": 4', '"confidence": NaN'))
    out = run_score(path)
    assert out.returncode == 2 and "NaN" in out.stderr


def test_dangling_citation_is_scored_with_a_warning(tmp_path):
    obj = with_changes(answer=GOOD["answer"].replace("[4].", "[99]."))
    obj["labels"]["statements"][5]["text"] = "Zoos also educate millions of visitors each year [99]."
    path = tmp_path / "dangling.json"
    path.write_text(json.dumps(obj))
    out = run_score(path, "--json")
    assert out.returncode == 0, out.stderr
    assert "[99]" in out.stderr and "dangling" in out.stderr
    report = json.loads(out.stdout)
    assert report["metrics"]["dangling_citations"]["value"] == 1
    assert report["statements"][5]["dangling"] == [99]
    # source 4 is now uncited: 1 of 5 listed sources
    assert report["metrics"]["uncited_sources"]["value"] == pytest.approx(0.2)


def test_duplicate_answer_ids_in_jsonl(tmp_path):
    path = tmp_path / "dup.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + json.dumps(GOOD) + "\n")
    out = run_score(path)
    assert out.returncode == 2 and "duplicate answer_id" in out.stderr


# ---- issue 46: arguments checked before anything starts ----------------------------------------------


def _one_error(capsys) -> str:
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    assert "http://" not in out + err  # refused before the address to open was printed
    return lines[0]


@pytest.mark.parametrize("argv, said", [
    (["--port", "-1"], "error: field '--port': must be a port number from 1 to 65535 (got -1)"),
    (["--port", "99999"], "error: field '--port': must be a port number from 1 to 65535 (got 99999)"),
    (["--address", "256.1.1.1"], "error: field '--address': '256.1.1.1' is not an IP address (each part of an IPv4 "
                                 "address is 0 to 255)"),
    (["--address", "nosuchiface0"], "error: field '--address': 'nosuchiface0' is neither an address, a host name nor "
                                    "an interface of this machine"),
])
def test_aee_app_refuses_a_bad_port_or_address_before_starting(capsys, monkeypatch, argv, said):
    """Was: a traceback from the server after the URL was printed."""
    import subprocess as sp

    from pipeline.cli import main as cli_main

    monkeypatch.setattr(sp, "call", lambda *a, **k: pytest.fail("the server was started"))
    assert cli_main(["app", *argv]) == 2
    assert _one_error(capsys).startswith(said)


def test_aee_app_refuses_a_port_already_taken(capsys, monkeypatch):
    import socket
    import subprocess as sp

    from pipeline.cli import main as cli_main

    monkeypatch.setattr(sp, "call", lambda *a, **k: pytest.fail("the server was started"))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        assert cli_main(["app", "--address", "127.0.0.1", "--port", str(port)]) == 2
    assert _one_error(capsys) == f"error: field '--address': cannot listen on 127.0.0.1 port {port}: Address already in use"


@pytest.mark.parametrize("wait", ["-5", "nan", "inf"])
def test_run_refuses_a_wait_that_is_no_number_of_seconds(tmp_path, monkeypatch, capsys, wait):
    from pipeline.cli import main as cli_main

    monkeypatch.setenv("AEE_RESULTS_DIR", str(tmp_path / "results"))
    assert cli_main(["run", "--dataset", "demo", "--wait", wait, "--no-progress"]) == 2
    shown = {"-5": "-5", "nan": "nan", "inf": "inf"}[wait]
    assert _one_error(capsys) == f"error: field '--wait': must be a number of seconds, 0 or more (got {shown})"
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("name", ["agreement", "judge_checks", "Agreement"])
def test_the_toolkit_s_own_folders_are_no_dataset_names(tmp_path, monkeypatch, capsys, name):
    """Was: accepted as dataset names, then listed among the datasets."""
    from pipeline.cli import main as cli_main
    from pipeline.storage.store import list_datasets

    monkeypatch.setenv("AEE_RESULTS_DIR", str(tmp_path / "results"))
    demo = ROOT / "data" / "demo" / "answers.jsonl"
    assert cli_main(["run", "--dataset", name, "--path", str(demo), "--no-progress"]) == 2
    assert "is the name of a folder the toolkit keeps" in _one_error(capsys)
    (tmp_path / "results" / name).mkdir(parents=True)  # one made by an older version is not listed either
    (tmp_path / "results" / name / "CURRENT").write_text("g1", encoding="utf-8")
    assert list_datasets(tmp_path / "results") == []


def test_a_sample_written_as_csv_and_as_jsonl_keeps_two_design_files(tmp_path, monkeypatch, capsys):
    """Was: `audit sample --out s.csv` then `--out s.jsonl` wrote one `s.design.csv`, the second over the first."""
    from audit_fixtures import build_audit_results

    from pipeline.cli import main as cli_main

    root = build_audit_results(tmp_path / "r")
    monkeypatch.setenv("AEE_RESULTS_DIR", str(root))
    base = ["audit", "sample", "--dataset", "demo", "--judge", "scripted", "--n", "30"]
    assert cli_main([*base, "--out", str(tmp_path / "s.csv")]) == 0
    assert cli_main([*base, "--seed", "1", "--out", str(tmp_path / "s.jsonl")]) == 0
    csv_design, jsonl_design = tmp_path / "s.design.csv", tmp_path / "s.jsonl.design.csv"
    assert csv_design.is_file() and jsonl_design.is_file()
    assert csv_design.read_text(encoding="utf-8") != jsonl_design.read_text(encoding="utf-8")  # seeds 0 and 1
    assert f"and {jsonl_design}" in capsys.readouterr().out
    assert cli_main([*base, "--out", str(tmp_path / "s.txt")]) == 2  # refused before a sample is registered
