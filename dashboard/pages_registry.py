"""The one list of dashboard pages: the router builds its navigation from it, the tests walk it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# In a checkout the page scripts sit in `pages/` at the top of the project; an installed wheel
# carries the same files as `dashboard/pages/`.
_CHECKOUT_PAGES = Path(__file__).resolve().parent.parent / "pages"
PAGES_DIR = _CHECKOUT_PAGES if _CHECKOUT_PAGES.is_dir() else Path(__file__).resolve().parent / "pages"


@dataclass(frozen=True)
class PageInfo:
    """One page of the app: its script name in the pages folder, title and icon."""

    title: str
    script: str  # file name in PAGES_DIR, e.g. "home.py"
    icon: str
    default: bool = False
    shows_dataset: bool = False  # the page shows one dataset (the shared one): the sidebar marks it if illustrative

    @property
    def path(self) -> Path:
        return PAGES_DIR / self.script

    @property
    def url_path(self) -> str:
        """The page's address under the app's root (Streamlit derives it from the script name)."""
        return Path(self.script).stem

    @property
    def file(self) -> str:
        """The page's path relative to the project top, as tests and docs name it ("pages/home.py")."""
        return f"pages/{self.script}"


PAGES: tuple[PageInfo, ...] = (
    PageInfo("Overview", "home.py", ":material/dashboard:", default=True),
    PageInfo("Start here", "tour.py", ":material/school:"),
    PageInfo("Scorecard", "scorecard.py", ":material/table_chart:", shows_dataset=True),
    PageInfo("Confidence", "confidence.py", ":material/stacked_bar_chart:", shows_dataset=True),
    PageInfo("Answer inspector", "inspector.py", ":material/manage_search:", shows_dataset=True),
    PageInfo("Compare", "compare.py", ":material/compare_arrows:"),
    PageInfo("Engine vs engine", "engines.py", ":material/leaderboard:", shows_dataset=True),
    PageInfo("Re-score", "rescore.py", ":material/tune:"),
    PageInfo("Judges", "judges.py", ":material/gavel:"),
    PageInfo("Audit the judge", "audit.py", ":material/fact_check:", shows_dataset=True),
    PageInfo("Usability study", "study.py", ":material/groups:"),
    PageInfo("Conflicting evidence", "conflict.py", ":material/balance:"),
    PageInfo("Over time", "over_time.py", ":material/timeline:", shows_dataset=True),
    PageInfo("Methodology", "methodology.py", ":material/menu_book:"),
)


def page(script: str) -> PageInfo:
    """The registry entry of a page script ("tour.py"), for links between pages."""
    return next(p for p in PAGES if p.script == script)
