"""Input paths are opened without trusting them (pipeline/importers/input_files.py): a FIFO or a
socket is refused at once with one line, a device is read only while it has data, and no read holds
more than one capped record in memory."""

from __future__ import annotations

import os
import socket
import sys
import threading
from pathlib import Path

import pytest
from timing import guard

from pipeline.cli import main
from pipeline.errors import InputError
from pipeline.importers.input_files import MAX_RECORD_MB, bounded_lines, open_input, read_document


def _cli(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().err


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero on this system")
@pytest.mark.parametrize("argv", [("score", "/dev/zero"), ("run", "--dataset", "z", "--path", "/dev/zero", "--no-progress")])
def test_dev_zero_stops_at_the_cap(capsys, tmp_path, monkeypatch, argv):
    monkeypatch.setenv("AEE_RESULTS_DIR", str(tmp_path / "results"))
    code, err = _cli(capsys, *argv)
    assert code == 2 and err.count("\n") == 1
    assert f"input larger than {MAX_RECORD_MB} MB" in err


@pytest.mark.parametrize("argv", [("score", "{fifo}"), ("run", "--dataset", "f", "--path", "{fifo}", "--no-progress"),
                                  ("run", "--dataset", "f", "--path", "{fifo}", "--format", "expertqa", "--no-progress")])
def test_a_fifo_is_refused_at_once(capsys, tmp_path, monkeypatch, argv):
    monkeypatch.setenv("AEE_RESULTS_DIR", str(tmp_path / "results"))
    fifo = tmp_path / "answers.jsonl"
    os.mkfifo(fifo)
    done: list[tuple[int, str]] = []
    worker = threading.Thread(target=lambda: done.append(_cli(capsys, *(a.format(fifo=fifo) for a in argv))), daemon=True)
    worker.start()
    worker.join(timeout=guard(30))
    if worker.is_alive():  # it is waiting for a writer: let it go, then fail
        with open(fifo, "w"):
            pass
        pytest.fail("reading a FIFO blocked")
    code, err = done[0]
    assert code == 2 and err.count("\n") == 1
    assert "not a regular file but a FIFO (named pipe)" in err


def test_a_socket_is_refused(tmp_path):
    if sys.platform == "win32":
        pytest.skip("no unix sockets")
    path = tmp_path / "s.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(str(path))
        with pytest.raises(InputError, match="not a regular file but a socket"):
            open_input(path)
    finally:
        server.close()


def test_an_oversized_document_is_refused_without_reading_past_the_cap(tmp_path):
    big = tmp_path / "big.json"
    with big.open("wb") as fh:  # a sparse file: the cap is met without writing 64 MB
        fh.write(b'{"answer": "')
        fh.truncate(MAX_RECORD_MB * 1024 * 1024 + 10)
    with pytest.raises(InputError, match=f"input larger than {MAX_RECORD_MB} MB \\(one JSON document\\)"):
        read_document(big)
    assert read_document(big, limit=2 * MAX_RECORD_MB * 1024 * 1024)[:12] == b'{"answer": "'


def test_lines_are_read_with_a_bound(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text("short\n" + "x" * 50 + "\nlast")
    with open_input(path) as handle:
        with pytest.raises(InputError, match="line 2"):
            list(bounded_lines(handle, path, limit=20))
    with open_input(path) as handle:
        assert [n for n, _ in bounded_lines(handle, path, limit=100)] == [1, 2, 3]


def test_dev_null_is_an_empty_file(capsys):
    code, err = _cli(capsys, "score", "/dev/null")
    assert code == 2 and "file is empty" in err
