"""The one list of dashboard pages: `app.py` builds its navigation from it, the tests walk it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class PageInfo:
    """One page of the app: its file (relative to the project root), title and icon."""

    title: str
    file: str
    icon: str
    default: bool = False

    @property
    def path(self) -> Path:
        return ROOT / self.file

    @property
    def exists(self) -> bool:
        return self.path.is_file()


PAGES: tuple[PageInfo, ...] = (
    PageInfo("Overview", "pages/home.py", ":material/dashboard:", default=True),
    PageInfo("Scorecard", "pages/scorecard.py", ":material/table_chart:"),
    PageInfo("Confidence", "pages/confidence.py", ":material/stacked_bar_chart:"),
    PageInfo("Answer inspector", "pages/inspector.py", ":material/manage_search:"),
    PageInfo("Re-score", "pages/rescore.py", ":material/tune:"),
    PageInfo("Judges", "pages/judges.py", ":material/gavel:"),
    PageInfo("Usability study", "pages/study.py", ":material/groups:"),
    PageInfo("Methodology", "pages/methodology.py", ":material/menu_book:"),
)


def available_pages() -> list[PageInfo]:
    """Pages whose file exists (a page another contributor has not written yet is skipped)."""
    return [p for p in PAGES if p.exists]


def missing_pages() -> list[PageInfo]:
    """Pages listed here whose file does not exist yet."""
    return [p for p in PAGES if not p.exists]
