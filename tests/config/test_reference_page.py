"""docs/configuration.md is the page rendered from the definitions table: every key is on it,
and a page that differs from the table fails."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from toolkeeper.config import SETTINGS
from toolkeeper.config.reference import render_reference

PAGE = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def test_the_checked_in_page_is_the_rendered_table() -> None:
    assert PAGE.read_text(encoding="utf-8") == render_reference(), (
        "docs/configuration.md drifted: python -m toolkeeper.config.reference "
        "> docs/configuration.md")


def test_every_key_of_the_table_is_on_the_page_with_its_flag() -> None:
    page = PAGE.read_text(encoding="utf-8")
    for row in SETTINGS:
        line = next((line for line in page.splitlines() if line.startswith(f"| `{row.key}` |")),
                    None)
        assert line is not None, row.key
        assert row.flag is None or f"`{row.flag}`" in line, row.key


def test_the_script_entry_point_prints_the_page() -> None:
    done = subprocess.run([sys.executable, "-m", "toolkeeper.config.reference"],
                          capture_output=True, timeout=60, check=True)
    assert done.stdout.decode("utf-8") == render_reference()
