"""``toolkeeper call``: one governed ``tools/call`` through the client kernel (issue 15).

``toolkeeper call --url URL TOOL ARGS_JSON`` (or ``call URL TOOL ARGS_JSON``), or
``toolkeeper call --stdio "CMD ARG..." TOOL ARGS_JSON`` (or ``--stdio -- CMD ARG... TOOL
ARGS_JSON``): the last two words are the tool and its arguments (a JSON object), the words
before them name the endpoint (:mod:`toolkeeper.cli.targets`). The kernel lists the tools,
validates the arguments against the listed contract, repairs them (unless ``--no-repair``),
pins the call to the listed ``_meta.schemaVersion`` when the server publishes one, and on the
gateway's re-list refusal re-lists once. There is no model on the command line: arguments that
stay invalid are reported and nothing is sent.

``--json`` prints one object: ``ok``, ``era``, ``tool``, ``schemaVersion``, ``repairs``,
``errors``, ``relisted``, ``incompatible``, ``result`` (the MCP result) and ``error`` (the
JSON-RPC error; on a connection or protocol failure the client error's ``code``, ``message``
and ``data`` instead, with ``era`` the era selected before the failure, null when none was).

Exit codes: 0 the call ran and its result is not ``isError``; 1 it ran and is ``isError``, or
the arguments stay invalid (nothing sent); 2 a protocol or connection failure (a JSON-RPC
error answer included), or bad input on the command line; 3 the contract moved incompatibly.
"""

from __future__ import annotations

import asyncio
from typing import Any, NoReturn

import click

from toolkeeper.cli.output import echo_json, fail
from toolkeeper.cli.targets import client_options, era_policy, target_of
from toolkeeper.client import Target, connect
from toolkeeper.client.kernel import Kernel
from toolkeeper.client.kernel_outcome import CallOutcome
from toolkeeper.contracts.canonical import canonical_json, loads_json
from toolkeeper.contracts.redaction import redact_text
from toolkeeper.errors import ClientError, ContractError, ToolkeeperError

__all__ = ["EXIT_INCOMPATIBLE", "exit_code", "register"]

EXIT_OK, EXIT_REFUSED, EXIT_FAILED, EXIT_INCOMPATIBLE = 0, 1, 2, 3


def exit_code(outcome: CallOutcome) -> int:
    """Issue 15's exit code for a call's outcome."""
    if outcome.incompatible is not None:
        return EXIT_INCOMPATIBLE
    if outcome.error is not None:
        return EXIT_FAILED
    return EXIT_OK if outcome.ok else EXIT_REFUSED


async def _call(target: Target, era: Any, token: str | None, allow_legacy: bool, tool: str,
                arguments: Any, repair: bool, selected: list[str]) -> CallOutcome:
    """The call's outcome; ``selected`` gets the era version once one is selected, so a
    failure after that still names it."""
    async with await connect(target, era=era, token=token,
                             legacy_allowed=allow_legacy) as session:
        kernel = Kernel(session, repair=repair)
        selected.append(kernel.era_version)
        return await kernel.call(tool, arguments)


def _failure(exc: ToolkeeperError, tool: str | None, era: str | None) -> dict[str, Any]:
    error = exc.to_dict()
    error["message"] = redact_text(exc.message)
    return {"ok": False, "era": era, "tool": tool, "schemaVersion": None, "repairs": [],
            "errors": [], "relisted": False, "incompatible": None, "result": None,
            "error": error}


def _text(value: Any) -> str:
    return canonical_json(value).decode("utf-8")


def _render(outcome: CallOutcome) -> None:
    version = outcome.schema_version or "-"
    click.echo(f"# era {outcome.era}; {outcome.tool} {version}"
               + ("; re-listed" if outcome.relisted else ""))
    for repair in outcome.repairs:
        record = repair.to_dict()
        before, after = (_text(record[side]) if side in record else "absent"
                         for side in ("before", "after"))
        click.echo(f"repaired {repair.path}: {repair.rule} ({before} -> {after})")
    for issue in outcome.errors:
        click.echo(f"invalid {issue.path}: {issue.message} [{issue.keyword}]")
    if outcome.incompatible is not None:
        moved = outcome.incompatible
        click.echo(f"incompatible: {moved.from_version} -> {moved.to_version}")
        for change in moved.changes:
            click.echo(f"  {change.bump.value} {change.rule} at {change.path}: {change.reason}")
    if outcome.error is not None:
        click.echo(f"error {outcome.error.get('code')}: {outcome.error.get('message')}")
    if outcome.result is not None:
        label = "isError" if outcome.result.get("isError") is True else "result"
        for block in outcome.result.get("content") or []:
            if isinstance(block, dict) and block.get("type") == "text":
                click.echo(f"{label}: {block.get('text')}")


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _refuse(error: ToolkeeperError, tool: str | None, as_json: bool) -> NoReturn:
    """Bad input on the command line: exit 2; with --json the issue's one object, nothing
    sent (``tool`` null when the command line names none)."""
    if not as_json:
        fail(error)
    echo_json(_failure(error, tool, None))
    raise SystemExit(EXIT_FAILED)


@click.command("call", context_settings={"ignore_unknown_options": True})
@click.option("--no-repair", is_flag=True, help="Skip the repair pass (SPEC 1.3).")
@client_options
def call_cmd(target: tuple[str, ...], no_repair: bool, url: str | None, stdio: str | None,
             era: str, strict: bool, allow_legacy: bool, token: str | None, as_json: bool
             ) -> None:
    """One governed call: [TARGET...] TOOL ARGS_JSON (--url URL, a URL word, or --stdio CMD)."""
    if len(target) < (2 if url is not None or stdio else 3):
        _refuse(ToolkeeperError("give the endpoint, the tool and its arguments as JSON",
                                code="cli.bad_input"), None, as_json)
    *words, tool, raw = target
    if not _utf8(tool):  # bytes argv could not decode: no JSON text can carry them
        _refuse(ToolkeeperError("TOOL is not valid UTF-8", code="cli.bad_input"), None,
                as_json)
    try:
        arguments = loads_json(raw)
    except ContractError as exc:
        _refuse(ToolkeeperError(f"ARGS_JSON: {exc.message}", code="cli.bad_arguments"), tool,
                as_json)
    selected: list[str] = []
    try:
        choice, allowed = era_policy(era, strict, allow_legacy)
        outcome = asyncio.run(_call(target_of(words, stdio, url), choice, token, allowed, tool,
                                    arguments, not no_repair, selected))
    except ClientError as exc:
        if as_json:
            echo_json(_failure(exc, tool, selected[0] if selected else None))
            raise SystemExit(EXIT_FAILED) from None
        fail(exc)
    if as_json:
        echo_json(outcome.to_dict())
    else:
        _render(outcome)
    raise SystemExit(exit_code(outcome))


def register(group: click.Group) -> None:
    group.add_command(call_cmd)
