"""Handlers of the demo estate: deterministic answers, no outside systems.

``payments.lookup`` answers like seed 000 section 6 (``PMT-771: HELD, 250000 AED, ...``) and
reports progress and a log line, so a caller that asks sees them streamed (SSE on HTTP).
``db.query`` has one handler per version (3.0.0 is retired, so its handler is never reached).
``tickets.create`` is the write tool: the ticket id is derived from the arguments.
"""

from __future__ import annotations

import hashlib
from typing import Any

from toolkeeper.contracts.canonical import canonical_json
from toolkeeper.server import ToolContext, ToolHandlers, ToolResult, text

__all__ = ["demo_handlers"]

_PAYMENTS: dict[str, tuple[str, int, str, str]] = {
    "PMT-771": ("HELD", 250000, "AED", "ACME TRADING LLC"),
    "PMT-772": ("SETTLED", 1200, "EUR", "NORDIC FISH AS"),
    "PMT-900": ("PENDING", 99, "USD", "JOHN DOE"),
}
_STATUSES = ("SETTLED", "PENDING", "HELD")


def _payment(reference: str) -> tuple[str, int, str, str]:
    known = _PAYMENTS.get(reference)
    if known is not None:
        return known
    digest = hashlib.sha256(reference.encode("utf-8")).digest()
    return (_STATUSES[digest[0] % 3], int.from_bytes(digest[1:4], "big") % 100000, "AED",
            "UNKNOWN BENEFICIARY")


async def payments_lookup(arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
    reference: str = arguments["reference"]
    include_legs: bool = arguments.get("include_legs", False)
    await ctx.progress(1, 2, "querying core banking")
    await ctx.log("info", {"event": "lookup", "reference": reference}, logger="payments")
    status, amount, currency, beneficiary = _payment(reference)
    await ctx.progress(2, 2, "done")
    line = f"{reference}: {status}, {amount} {currency}, beneficiary {beneficiary}"
    data: dict[str, Any] = {"reference": reference, "status": status, "amount": amount,
                            "currency": currency, "beneficiary": beneficiary}
    if include_legs:
        legs = [{"leg": 1, "from": "DEBTOR", "to": "CORRESPONDENT", "amount": amount},
                {"leg": 2, "from": "CORRESPONDENT", "to": beneficiary, "amount": amount}]
        data["legs"] = legs
        line += f", {len(legs)} legs"
    return ToolResult((text(line),), data)


def _rows(sql: str) -> list[dict[str, Any]]:
    return [{"statement_length": len(sql), "checksum": hashlib.sha256(
        sql.encode("utf-8")).hexdigest()[:12]}]


def db_query_v3(arguments: dict[str, Any]) -> dict[str, Any]:
    return {"rows": _rows(arguments["sql"]), "mode": arguments.get("mode", "read"),
            "timeout_ms": arguments.get("timeout_ms", 30000)}


def db_query_v4(arguments: dict[str, Any]) -> dict[str, Any]:
    return {"rows": _rows(arguments["sql"]), "mode": arguments.get("mode", "read"),
            "timeout": arguments["timeout"]}


def tickets_create(arguments: dict[str, Any]) -> ToolResult:
    priority = arguments.get("priority", "normal")
    ticket = "TCK-" + hashlib.sha256(canonical_json(arguments)).hexdigest()[:8].upper()
    return ToolResult((text(f"Opened {ticket} ({priority}): {arguments['title']}"),),
                      {"ticket": ticket, "status": "open", "priority": priority})


def demo_handlers() -> ToolHandlers:
    """Handlers for every demo contract."""
    handlers = ToolHandlers()
    handlers.bind("payments.lookup", payments_lookup)
    # quick, pure functions: kept on the event loop, no worker-thread hop
    handlers.bind("db.query", db_query_v3, version="3.0.0", inline=True)
    handlers.bind("db.query", db_query_v4, version="4.0.0", inline=True)
    handlers.bind("tickets.create", tickets_create, inline=True)
    return handlers
