"""The commands ``docs/refusal-log.md`` shows run as shown: each ``<!-- runnable -->`` block,
in order, under ``bash -e`` in one fresh directory holding a copy of ``examples/`` (HOME and
XDG_DATA_HOME inside it, ``toolkeeper`` on PATH), exits as its marker says and prints what its
``<!-- expect: TEXT -->`` names."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "refusal-log.md"
_BLOCK = re.compile(r"<!-- runnable(?: exit=(\d+))? -->\n```bash\n(.*?)```\n"
                    r"(?:<!-- expect: (.*?) -->)?", re.DOTALL)


def test_every_runnable_block_of_the_page_runs_as_shown(tmp_path: Path) -> None:
    blocks = _BLOCK.findall(PAGE.read_text())
    assert len(blocks) == 5
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    env = {**os.environ, "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data"),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("TOOLKEEPER_REGISTRY", None)
    for exit_code, script, expect in blocks:
        done = subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == int(exit_code or 0), (script, done.stdout, done.stderr)
        if expect:
            assert expect in done.stdout, (script, done.stdout)
