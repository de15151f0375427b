"""The shared peer cache (``tests/peer_kit.py``): two processes building one entry build it
once and both get it ready; a peer that cannot be installed fails the test under ``CI=true``
and skips it elsewhere, and its install is tried once per process."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from interop_kit import InstallError

from peer_kit import Peers

_CHILD = textwrap.dedent("""
    import sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    from interop_kit import cached_dir

    cache, role = Path(sys.argv[2]), sys.argv[3]

    def build(target):
        target.mkdir(parents=True)
        with (cache / "builds.log").open("a") as log:
            log.write(role + "\\n")
        if role == "first":
            print("building", flush=True)
            sys.stdin.readline()  # held inside the lock until the parent says go

    print("asking", flush=True)
    print(cached_dir(cache, "entry", build), flush=True)
""")


def _child(cache: Path, role: str) -> subprocess.Popen[str]:
    interop = str(Path(__file__).resolve().parent)
    return subprocess.Popen([sys.executable, "-c", _CHILD, interop, str(cache), role],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def test_two_processes_sharing_the_cache_build_an_entry_once(tmp_path: Path) -> None:
    first = _child(tmp_path, "first")
    second: subprocess.Popen[str] | None = None
    try:
        assert first.stdout is not None
        assert first.stdout.readline() == "asking\n"
        assert first.stdout.readline() == "building\n"  # first holds the entry's lock
        second = _child(tmp_path, "second")
        assert second.stdout is not None
        assert second.stdout.readline() == "asking\n"  # and second now waits for it
        out_first, _ = first.communicate("go\n", timeout=60)
        out_second, _ = second.communicate(timeout=60)
    finally:
        for child in (first, second):
            if child is not None and child.poll() is None:
                child.kill()
                child.communicate()
    assert (first.returncode, second.returncode) == (0, 0)
    assert out_first.strip() == out_second.strip() == str(tmp_path / "entry")
    assert (tmp_path / "builds.log").read_text() == "first\n"
    assert (tmp_path / "entry" / ".ready").exists()


def test_a_peer_that_cannot_be_installed_fails_under_ci_and_is_tried_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    peers = Peers(tmp_path)
    tries: list[int] = []

    def broken() -> Path:
        tries.append(1)
        raise InstallError("install step exited 1: npm ci")

    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"installing thing into .* npm ci"):
        peers._need("thing", broken)
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match=r"installing thing into .* npm ci"):
        peers._need("thing", broken)
    assert tries == [1]


def test_threads_asking_for_one_peer_share_one_install(tmp_path: Path) -> None:
    peers = Peers(tmp_path)
    builds: list[int] = []
    gate = threading.Event()

    def build() -> Path:
        builds.append(1)
        assert gate.wait(30)
        return tmp_path / "peer"

    got: list[Path] = []
    threads = [threading.Thread(target=lambda: got.append(peers._need("peer", build)))
               for _ in range(4)]
    for thread in threads:
        thread.start()
    gate.set()
    for thread in threads:
        thread.join(30)
    assert got == [tmp_path / "peer"] * 4
    assert builds == [1]
