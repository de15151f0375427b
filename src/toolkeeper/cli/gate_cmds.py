"""Release-gate commands: ``toolkeeper gate window`` (docs/gate.md).

``gate window --policy FILE --samples FILE [--baseline FILE] [--json]`` judges one health
window under a policy (JSON or YAML files; their schemas are in docs/gate.md), or, with
``--calls --tool T --version V --since S [--until U] [--baseline-version B]``, the window the
durable call log holds for that version (and the baseline version's over the same time), and
prints each rule's verdict: its measured value, its threshold and ``passed``, ``failed`` or
``inconclusive``. Exit codes follow the gate's: 0 healthy, 1 failed, 4 inconclusive (the gate
holds for more samples), 2 bad input (``gate.policy_invalid``, ``gate.samples_invalid``, a file
that cannot be read).
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import click

from toolkeeper.cli.calls_cmd import duration_s, window_bounds
from toolkeeper.cli.documents import read_document
from toolkeeper.cli.output import EXIT_HOLD, EXIT_OK, EXIT_REFUSED, echo_json, fail
from toolkeeper.cli.usage import ToolkeeperGroup
from toolkeeper.contracts.canonical import canonical_json
from toolkeeper.errors import ToolkeeperError
from toolkeeper.gate import (
    FAILED,
    INCONCLUSIVE,
    HistogramWindow,
    Observed,
    Window,
    WindowPolicy,
    evaluate,
)
from toolkeeper.gate.call_windows import windows_from_log
from toolkeeper.gate.metric_windows import histogram_window, observe
from toolkeeper.gate.observed import health_section
from toolkeeper.registry import Registry
from toolkeeper.registry.location import ENV_VAR

__all__ = ["register"]

_EXIT = {FAILED: EXIT_REFUSED, INCONCLUSIVE: EXIT_HOLD}
_ENDS = (signal.SIGINT, signal.SIGTERM)
"""What ends a ``--metrics`` window before its ``--for`` is up (the last scrape is then taken)."""


@click.group("gate", cls=ToolkeeperGroup)
def gate_group() -> None:
    """The release gate: health windows under a policy."""


@gate_group.command("window")
@click.option("--policy", "policy_path", required=True, metavar="FILE",
              help="The health-window policy (JSON or YAML).")
@click.option("--samples", "samples_path", default=None, metavar="FILE",
              help="The candidate's window: its samples (JSON or YAML).")
@click.option("--baseline", "baseline_path", default=None, metavar="FILE",
              help="The baseline's window over the same time, for the policy's comparisons.")
@click.option("--calls", "from_calls", is_flag=True,
              help="Read the window from the durable call log (with --tool, --version, --since).")
@click.option("--tool", default=None, help="With --calls: the tool.")
@click.option("--version", "version", default=None, help="With --calls: the candidate version.")
@click.option("--baseline-version", default=None,
              help="With --calls: the baseline version, over the same time.")
@click.option("--since", default=None, metavar="TIME|AGE",
              help="With --calls: the window's start, ISO-8601 (UTC if no zone) or an age.")
@click.option("--until", default=None, metavar="TIME|AGE",
              help="With --calls: the window's end (default: now).")
@click.option("--registry", "registry_url", envvar=ENV_VAR, default=None, metavar="URL",
              help=f"With --calls: the registry whose call log is read (env {ENV_VAR}).")
@click.option("--metrics", "metrics_url", default=None, metavar="URL",
              help="Read the window from a gateway's Prometheus endpoint, scraped --for a while "
                   "(with --tool, --version).")
@click.option("--for", "for_", default="5m", show_default=True, metavar="DURATION",
              help="With --metrics: how long to observe (Ctrl-C ends the window sooner).")
@click.option("--every", default="5s", show_default=True, metavar="DURATION",
              help="With --metrics: how often to scrape for the resources' highest readings.")
@click.option("--save", "save_path", default=None, metavar="FILE",
              help="Write the windows as a bundle's healthWindows section (with --tool, "
                   "--version and, for a baseline, --baseline-version).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def window_cmd(policy_path: str, samples_path: str | None, baseline_path: str | None,
               from_calls: bool, tool: str | None, version: str | None,
               baseline_version: str | None, since: str | None, until: str | None,
               registry_url: str | None, metrics_url: str | None, for_: str, every: str,
               save_path: str | None, as_json: bool) -> None:
    """Judge a health window under a policy: 0 healthy, 1 failed, 4 inconclusive."""
    try:
        policy = WindowPolicy.from_json(read_document(policy_path))
        if from_calls and metrics_url is not None:
            raise ToolkeeperError("--calls and --metrics are two sources: give one",
                                  code="cli.option_conflict", data={"option": "--metrics"})
        window: Observed
        baseline: Observed | None
        if metrics_url is not None:
            window, baseline = _from_metrics(metrics_url, duration_s(for_, "--for"),
                                             duration_s(every, "--every"), tool, version,
                                             baseline_version, samples_path or baseline_path)
        elif from_calls:
            window, baseline = _from_calls(tool, version, baseline_version, since, until,
                                           registry_url, samples_path or baseline_path)
        else:
            if samples_path is None:
                raise ToolkeeperError("give the window: --samples FILE, or --calls",
                                      code="cli.option_missing", data={"option": "--samples"})
            window = Window.from_json(read_document(samples_path))
            baseline = (Window.from_json(read_document(baseline_path))
                        if baseline_path is not None else None)
    except ToolkeeperError as exc:
        fail(exc, as_json=as_json)
    result = evaluate(policy, window, baseline)
    if save_path is not None:
        source = "metrics" if metrics_url is not None else "calls" if from_calls else "samples"
        try:
            _save(save_path, source, policy, (tool, version, window),
                  None if baseline is None else (tool, baseline_version, baseline),
                  registry_url)
        except ToolkeeperError as exc:
            fail(exc, as_json=as_json)
    if as_json:
        echo_json(result.to_dict())
    else:
        click.echo(f"window {result.status}: {result.samples} samples, {result.errors} errors")
        for verdict in result.verdicts:
            click.echo(f"  {verdict.rule} {verdict.status}: measured {_shown(verdict.measured)}"
                       f", threshold {_shown(verdict.threshold)}")
    raise SystemExit(_EXIT.get(result.status, EXIT_OK))


def _from_metrics(url: str, for_s: int, every_s: int, tool: str | None, version: str | None,
                  baseline_version: str | None, a_file: str | None
                  ) -> tuple[HistogramWindow, HistogramWindow | None]:
    _no_files("--metrics", "the gateway", a_file)
    tool, version = _required("--metrics", ("--tool", tool), ("--version", version))
    stop = threading.Event()
    previous = [signal.signal(sig, lambda *_: stop.set()) for sig in _ENDS]
    try:
        first, last, start, end, peaks = observe(
            url, for_s, max(1, every_s), stop=stop,
            on_start=lambda: click.echo(f"observing {url} for {for_s} s (Ctrl-C ends the "
                                        "window now)", err=True))
    finally:
        for sig, handler in zip(_ENDS, previous, strict=True):
            signal.signal(sig, handler)
    window = histogram_window(first, last, tool, version, start, end, peaks)
    baseline = (histogram_window(first, last, tool, baseline_version, start, end, peaks)
                if baseline_version is not None else None)
    return window, baseline


def _no_files(source: str, what: str, a_file: str | None) -> None:
    """``cli.option_conflict`` when a window file is given beside ``source``."""
    if a_file is not None:
        raise ToolkeeperError(f"{source} reads the windows from {what}: drop --samples and "
                              "--baseline (use --baseline-version)", code="cli.option_conflict",
                              data={"option": source})


def _required(source: str, *options: tuple[str, str | None]) -> list[str]:
    """The values of ``options``, each given (``cli.option_missing`` naming the first not)."""
    for option, value in options:
        if value is None:
            raise ToolkeeperError(f"{source} needs {option}", code="cli.option_missing",
                                  data={"option": option})
    return [value for _, value in options if value is not None]


def _from_calls(tool: str | None, version: str | None, baseline_version: str | None,
                since: str | None, until: str | None, registry_url: str | None,
                a_file: str | None) -> tuple[Window, Window | None]:
    _no_files("--calls", "the call log", a_file)
    tool, version, since = _required("--calls", ("--tool", tool), ("--version", version),
                                     ("--since", since))
    start, end = window_bounds(since, until)
    versions = [version] if baseline_version is None else [version, baseline_version]
    windows = windows_from_log(registry_url, tool, versions, start, end)
    return windows[version], (None if baseline_version is None else windows[baseline_version])


def _save(path: str, source: str, policy: WindowPolicy,
          candidate: tuple[str | None, str | None, Observed],
          baseline: tuple[str | None, str | None, Observed] | None,
          registry_url: str | None) -> None:
    """Write the healthWindows section (:func:`~toolkeeper.gate.observed.health_section`),
    with each version's descriptor SHA-256 where a registry is named."""
    tool, version = _required("--save", ("--tool", candidate[0]), ("--version", candidate[1]))
    base = None
    if baseline is not None:
        (base_version,) = _required("--save", ("--baseline-version", baseline[1]))
        base = (tool, base_version, baseline[2])
    if registry_url is None:
        section = health_section(policy, source, (tool, version, candidate[2]), base)
    else:
        with Registry.open(registry_url, create=False, read_only=True) as registry:
            section = health_section(policy, source, (tool, version, candidate[2]), base,
                                     registry)
    try:
        Path(path).write_bytes(canonical_json(section) + b"\n")
    except OSError as exc:
        raise ToolkeeperError(f"--save: cannot write {path} ({exc.strerror})",
                              code="cli.bad_output", data={"option": "--save"}) from None


def _shown(value: float | None) -> str:
    return "none" if value is None else f"{value:g}"


def register(group: click.Group) -> None:
    from toolkeeper.cli import (
        gate_decide_cmd,
        gate_demo_cmd,
        gate_matrix_cmd,
        gate_report_cmd,
        gate_rollback_cmd,
    )

    for module in (gate_decide_cmd, gate_demo_cmd, gate_matrix_cmd, gate_report_cmd,
                   gate_rollback_cmd):
        module.register(gate_group)
    group.add_command(gate_group)
