"""A CLI error line goes to standard error beside the log, and may quote a handler module's
exception or a registry URL: it passes through the same redaction as every log line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SECRET = "hunter2-cli-3f9a"


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "toolkeeper", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                          check=False)


def test_a_handler_module_that_raises_with_a_secret_is_reported_without_it(
        tmp_path: Path) -> None:
    module = tmp_path / "bad_handlers.py"
    module.write_text(f'raise RuntimeError("cannot connect: password={SECRET}")\n')
    run = _run("serve", "--stdio", "--registry", f"sqlite:///{tmp_path}/r.db",
               "--handlers", f"{module}:HANDLERS", cwd=tmp_path)
    assert run.returncode == 2, run.stderr
    assert "[cli.handlers_failed]" in run.stderr
    assert SECRET not in run.stderr + run.stdout
    assert "Traceback" not in run.stderr


def test_a_registry_url_that_is_not_valid_is_reported_without_its_password(
        tmp_path: Path) -> None:
    run = _run("versions", "x", "--registry", f"postgres ql://u:{SECRET}@h/x", cwd=tmp_path)
    assert run.returncode == 2, run.stderr
    assert "registry.url_invalid" in run.stderr
    assert SECRET not in run.stderr + run.stdout


def test_a_closed_standard_input_is_an_unreadable_file_not_a_traceback(tmp_path: Path) -> None:
    schema = tmp_path / "s.json"
    schema.write_text('{"type": "object"}')
    run = subprocess.run([sys.executable, "-m", "toolkeeper", "validate", str(schema), "-"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=60,
                         stdin=subprocess.DEVNULL, check=False,
                         preexec_fn=lambda: __import__("os").close(0))
    assert (run.returncode, "Traceback" in run.stderr) == (2, False), run.stderr
    assert "[file.unreadable]" in run.stderr


def test_a_standard_input_open_for_writing_only_is_an_unreadable_file(tmp_path: Path) -> None:
    schema = tmp_path / "s.json"
    schema.write_text('{"type": "object"}')
    with open(tmp_path / "sink", "wb") as sink:
        run = subprocess.run([sys.executable, "-m", "toolkeeper", "validate", str(schema), "-"],
                             cwd=tmp_path, capture_output=True, text=True, timeout=60,
                             stdin=sink, check=False)
    assert (run.returncode, "Traceback" in run.stderr) == (2, False), run.stderr
    assert "[file.unreadable]" in run.stderr
