"""``./run`` installs the versions in constraints.txt: each dependency pyproject.toml names
is pinned there, within the range pyproject.toml allows, so a fresh clone installs the set
the suite passed with."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]


def _named() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lines = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        lines += extra
    return [Requirement(line) for line in lines]


def _pinned() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, version = line.split("==")
            pins[canonicalize_name(name)] = version
    return pins


def test_every_dependency_is_pinned_within_its_range() -> None:
    pins = _pinned()
    named = _named()
    assert len(named) > 20 and len(pins) > 100  # the scans find them
    unpinned = sorted(r.name for r in named if canonicalize_name(r.name) not in pins)
    assert unpinned == []
    outside = sorted(
        f"{r.name}=={pins[canonicalize_name(r.name)]} ({r.specifier})"
        for r in named
        if not r.specifier.contains(pins[canonicalize_name(r.name)], prereleases=True)
    )
    assert outside == []


def test_the_run_script_installs_with_the_pins() -> None:
    assert "-c constraints.txt" in (ROOT / "run").read_text()
