"""The documentation site builds with MkDocs and the Material theme under ``--strict``: every
page of docs/ is in mkdocs.yml's nav, and every link and anchor resolves."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml
from docs_kit import ROOT


def test_mkdocs_build_strict_passes_and_writes_every_page(tmp_path: Path) -> None:
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-4000:]
    pages = sorted(p.relative_to(ROOT / "docs").with_suffix("").as_posix()
                   for p in (ROOT / "docs").rglob("*.md"))
    built = [page for page in pages
             if (site / ("index.html" if page == "index" else f"{page}/index.html")).is_file()]
    assert built == pages


def test_the_nav_names_the_material_theme_and_only_pages_that_ship() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert config["theme"]["name"] == "material"
    listed = [next(iter(entry.values())) for entry in config["nav"]]
    assert [page for page in listed if not (ROOT / "docs" / page).is_file()] == []
    assert listed[0] == "index.md" and "configuration.md" in listed
