"""What the README names exists: each test file and test function it cites to back a
claim, each setting it documents, each folder its layout table describes; so a renamed
test, setting or folder cannot leave the README pointing at nothing, or leave it out."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
SETTING = re.compile(r"(SIGNOFF|SLACK)_[A-Z_]+|REDIS_URL")
PACKAGES = ("bot", "storage", "signoff")
"""The packages whose settings (read, or set for a gated command) the README documents."""


def _test_files() -> list[Path]:
    return [p for p in (ROOT / "tests").rglob("*.py") if "node_modules" not in p.parts]


def _test_functions(path: Path) -> set[str]:
    return {
        node.name
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("test_")
    }


def test_every_test_file_the_readme_cites_exists() -> None:
    cited = set(re.findall(r"`(tests/[^`\s]+\.py)`", README))
    assert len(cited) > 100  # the scan finds the citations
    missing = sorted(path for path in cited if not list(ROOT.glob(path)))
    assert missing == []


def test_every_test_function_the_readme_cites_exists_where_it_says() -> None:
    """A bare ``test_…`` name is somewhere under tests/; one cited "in `tests/….py`" is in
    that very file."""
    defined = {path: _test_functions(path) for path in _test_files()}
    everywhere = set().union(*defined.values())
    cited = set(re.findall(r"`(test_\w+)`", README))
    assert len(cited) > 20
    assert sorted(cited - everywhere) == []
    placed = re.findall(r"`(test_\w+)` in\s+`(tests/[^`\s]+\.py)`", README)
    assert placed  # the README does place some
    misplaced = [(n, f) for n, f in placed if n not in defined.get(ROOT / f, set())]
    assert misplaced == []


def _settings_in_code() -> set[str]:
    """Each setting the packages name as a string of its own (``"SIGNOFF_URL"``), or as the
    fixed start of one they build (``f"SIGNOFF_PARAM_{name}"``)."""
    names = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                value = node.value if isinstance(node, ast.Constant) else None
                if isinstance(value, str) and SETTING.fullmatch(value):
                    names.add(value)
    return names


def test_every_setting_the_readme_names_is_one_signoff_reads_or_sets_and_back() -> None:
    """No documented setting does nothing (a rename left behind), and every one the bot,
    storage or the gate reads or hands a gated command is documented."""
    in_code = _settings_in_code()
    assert {"SIGNOFF_URL", "SIGNOFF_TOKEN", "SIGNOFF_PORT", "REDIS_URL"} <= in_code
    documented = {m.group(0) for m in SETTING.finditer(README)}
    assert sorted(documented - in_code) == []
    assert sorted(in_code - documented) == []


def test_where_things_live_lists_every_top_level_folder_and_every_room_of_the_bot() -> None:
    table = README.split("## Where things live", 1)[1]
    listed = set(re.findall(r"^\| `([\w/.]+)` \|", table, re.MULTILINE))
    # The folders of code: a build's or a run's own (an .egg-info, artifacts/) hold none.
    folders = {f"{p.parent.name}/" for p in ROOT.glob("*/*.py") if p.parent.name[0] != "."}
    rooms = {f"bot/{p.parent.name}/" for p in (ROOT / "bot").glob("*/__init__.py")}
    assert {"bot/ui/", "examples/"} <= rooms | folders  # the scans find them
    assert sorted((folders | rooms) - listed) == []
    assert sorted(name for name in listed if not (ROOT / name).exists()) == []


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as ``-``."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_link_within_the_readme_names_one_of_its_headings() -> None:
    headings = {_slug(h) for h in re.findall(r"^#+ (.+)$", README, re.MULTILINE)}
    assert "any-job-can-ask-signoff-gate-the-requests-api-webhooks" in headings
    linked = set(re.findall(r"\]\(#([^)]+)\)", README))
    assert len(linked) > 10  # the contents list, and links in the text
    assert sorted(linked - headings) == []
