"""Working hours follow each approver's own zone, daylight saving included."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from bot.services.directory import SlackUser
from bot.services.workhours import in_working_hours, next_start

NEW_YORK = SlackUser(user_id="U0BOB", tz="America/New_York", offset_seconds=-5 * 3600)


def test_working_hours_follow_daylight_saving() -> None:
    winter, summer = (
        datetime(2026, 1, 15, 13, 30, tzinfo=UTC),
        datetime(2026, 7, 15, 13, 30, tzinfo=UTC),
    )
    assert not in_working_hours(NEW_YORK, winter, start_hour=9, end_hour=18)  # 08:30 EST
    assert in_working_hours(NEW_YORK, summer, start_hour=9, end_hour=18)  # 09:30 EDT
    assert next_start(NEW_YORK, winter, start_hour=9) == datetime(2026, 1, 15, 14, tzinfo=UTC)


def test_zones_resolve_on_a_host_without_a_time_zone_database(tmp_path: Path) -> None:
    # No system database on the search path: the tzdata package must answer.
    check = (
        "from bot.services.directory import SlackUser\n"
        "from zoneinfo import ZoneInfo\n"
        "zone = SlackUser(user_id='U0BOB', tz='America/New_York', offset_seconds=-18000).zone()\n"
        "assert isinstance(zone, ZoneInfo), zone\n"
    )
    env = {**os.environ, "PYTHONTZPATH": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", check], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
