"""A judge that fails on purpose, once, for the Ray executor's failure tests.

It is the `scripted` judge (same name, same labels, same cache entries), plus faults planned in the
environment, which Ray passes on to its workers:

- `AEE_FAULT_EXIT_ANSWER=<answer id>`: the worker process asking about that answer ends at once
  (`os._exit`, as a crash or an out-of-memory kill would), the first time only;
- `AEE_FAULT_RAISE_ANSWER=<answer id>`: asking about that answer raises, the first time only.

"The first time" holds across processes: a fault fires only when it can create its marker file in
`AEE_FAULT_DIR` (exclusive creation), so the restarted worker or the second attempt goes through,
and the marker tells the test that the fault really fired. Load it as a plug-in:
`AEE_JUDGE_PLUGINS=faulty=pipeline.testing.faulty_judge:FaultyJudge`, then `--judge faulty`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

from pipeline.judges.scripted import ScriptedJudge
from pipeline.records import Answer, Statement, Verdict

__all__ = ["FaultyJudge", "fired"]


def _first_time(kind: str, answer_id: str) -> bool:
    folder = os.environ.get("AEE_FAULT_DIR")
    if not folder:
        return False
    try:
        fd = os.open(Path(folder) / f"{kind}-{answer_id}", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    os.write(fd, str(os.getpid()).encode())
    os.close(fd)
    return True


def fired(folder: Path) -> list[str]:
    """The faults that fired (marker names: "exit-<id>", "raise-<id>")."""
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


class FaultyJudge(ScriptedJudge):
    """The scripted judge with the planned faults (module doc)."""

    def relevance(self, answer: Answer, statements: Sequence[Statement]) -> list[Verdict]:
        if answer.answer_id == os.environ.get("AEE_FAULT_EXIT_ANSWER") and _first_time("exit", answer.answer_id):
            os._exit(17)
        if answer.answer_id == os.environ.get("AEE_FAULT_RAISE_ANSWER") and _first_time("raise", answer.answer_id):
            raise RuntimeError(f"planned fault on answer {answer.answer_id}")
        return super().relevance(answer, statements)
