"""A real nginx on 127.0.0.1 for proxy evidence (SPEC 5.5: "evidence comes from a real proxy").

:class:`NginxProxy` fills a configuration template (``correct``, ``faulty`` or a file of
one's own, the placeholders ``@PREFIX@``, ``@LISTEN@``, ``@UPSTREAM@``, ``@USER@``), starts
nginx in the foreground with its own temporary prefix (pid file, logs, temp paths), on a free
port, waits a bounded time for it to listen, and stops it by its pid. nginx comes from the
system (Debian's ``nginx`` package; ``.ci/run`` installs it).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from importlib import resources
from pathlib import Path
from typing import Final

from toolkeeper.contracts.redaction import redact_text
from toolkeeper.errors import ConformanceError

__all__ = ["CONFIGS", "NGINX_ENV", "NginxProxy", "find_nginx", "load_template"]

CONFIGS: Final = {"correct": "correct.conf", "faulty": "faulty.conf"}
"""The shipped templates (package data under ``conformance/nginx/``)."""
_SEARCH: Final = ("/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx")
"""Where nginx lives when ``/usr/sbin`` is not on PATH (an unprivileged user's shell)."""
_START_TIMEOUT_S: Final = 10.0
_STOP_TIMEOUT_S: Final = 10.0
_ATTEMPTS: Final = 3
"""Starts tried: a free port found by binding port 0 can be taken before nginx binds it."""
_LOG_TAIL: Final = 2000
_DAEMON: Final = re.compile(r"^[ \t]*daemon[ \t]+\w+[ \t]*;[ \t]*(?:#.*)?\n?", re.MULTILINE)
"""A template's own ``daemon`` directive (a line of its own): the command line sets it."""


NGINX_ENV: Final = "TOOLKEEPER_NGINX"
"""Names the nginx binary to run; when set, no other place is searched."""


def find_nginx() -> str | None:
    """The nginx binary: the one ``TOOLKEEPER_NGINX`` names, else on PATH, else in the usual
    system places; None when absent (or when ``TOOLKEEPER_NGINX`` names no executable)."""
    named = os.environ.get(NGINX_ENV)
    if named:
        return named if os.path.isfile(named) and os.access(named, os.X_OK) else None
    found = shutil.which("nginx")
    return found or next((p for p in _SEARCH if os.access(p, os.X_OK)), None)


def load_template(config: str | Path) -> str:
    """A shipped template by name, or the text of a template file."""
    if isinstance(config, str) and config in CONFIGS:
        return (resources.files("toolkeeper.conformance") / "nginx" / CONFIGS[config]).read_text()
    try:
        return Path(config).read_text()
    except (OSError, UnicodeDecodeError):
        raise ConformanceError(
            f"no proxy configuration {str(config)!r}: name one of {sorted(CONFIGS)} or a "
            "readable template file", code="conformance.proxy_config") from None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


class NginxProxy:
    """nginx proxying ``127.0.0.1:<port>`` to ``upstream`` (``host:port``) with ``template``;
    use as a context manager. :attr:`url` is its base URL while it runs."""

    def __init__(self, template: str, upstream: str, binary: str | None = None) -> None:
        self._template = template
        self._upstream = upstream
        self._binary = binary or find_nginx()
        self._prefix: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def _render(self, prefix: Path, port: int) -> str:
        # nginx started by root runs its workers as "nobody", who cannot enter a private temp
        # prefix; the tests' nginx serves loopback only, so its workers keep the starting user.
        user = "user root;" if os.geteuid() == 0 else ""
        # nginx runs in the foreground (``-g "daemon off;"``) whatever the template says: a
        # daemon would outlive its pid and keep listening after the run.
        template = _DAEMON.sub("", self._template)
        return (template.replace("@PREFIX@", str(prefix)).replace("@LISTEN@", str(port))
                .replace("@UPSTREAM@", self._upstream).replace("@USER@", user))

    def _log(self) -> str:
        assert self._prefix is not None
        try:
            text = (self._prefix / "error.log").read_text(errors="replace")
        except OSError:
            return ""
        return redact_text(text[-_LOG_TAIL:])

    def _start_once(self, binary: str, prefix: Path) -> bool:
        """Start on a fresh port; False when nginx exited (the port was taken, or the
        configuration is refused: the caller tells them apart by the log)."""
        self.port = _free_port()
        conf = prefix / "nginx.conf"
        conf.write_text(self._render(prefix, self.port))
        self._process = subprocess.Popen(
            [binary, "-p", str(prefix), "-c", str(conf), "-e", str(prefix / "error.log"),
             "-g", "daemon off;"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + _START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                return False
            if _listening(self.port):
                return True
            time.sleep(0.05)  # polling a child's socket; bounded by the deadline
        self.stop()
        raise ConformanceError("nginx did not listen in time", code="conformance.proxy_start",
                               data={"log": self._log()})

    def __enter__(self) -> NginxProxy:
        if self._binary is None or not os.access(self._binary, os.X_OK):
            raise ConformanceError("nginx is not installed", code="conformance.proxy_missing")
        self._prefix = Path(tempfile.mkdtemp(prefix="toolkeeper-nginx-"))
        try:
            for _ in range(_ATTEMPTS):
                if self._start_once(self._binary, self._prefix):
                    return self
                if "Address already in use" not in self._log():
                    break
            raise ConformanceError("nginx refused to start", code="conformance.proxy_start",
                                   data={"log": self._log()})
        except BaseException:
            self.__exit__()
            raise

    def stop(self) -> None:
        """Stop nginx by its pid (TERM: a fast shutdown that ends its workers), bounded."""
        process = self._process
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=_STOP_TIMEOUT_S)

    def __exit__(self, *exc: object) -> None:
        self.stop()
        if self._prefix is not None:
            shutil.rmtree(self._prefix, ignore_errors=True)
            self._prefix = None
