"""Typed tools: contracts derived from type hints (README "Typed tools").

    toolkeeper contracts export examples/typed_tools.py:handlers contracts/
    toolkeeper serve --handlers examples/typed_tools.py:handlers

``serve`` publishes both contracts through the publish guard at start; change a parameter's
type without a MAJOR bump and it refuses to start (exit 1, ``publish.bump_required``).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from toolkeeper.server import ToolContext, ToolHandlers

handlers = ToolHandlers()


class Parcel(BaseModel):
    weight_kg: Annotated[float, Field(gt=0, le=30, description="Gross weight")]
    destination: Annotated[str, Field(pattern="^[A-Z]{2}$", description="ISO country code")]
    service: Literal["economy", "express"] = "economy"


class Quote(BaseModel):
    price_cents: int
    currency: str
    days: int


@handlers.tool("shipping.quote", version="1.0.0", title="Quote a parcel",
               data_classification="internal", side_effect="read",
               required_scopes=["shipping.read"], tenants=[])
async def quote(parcel: Parcel, ctx: ToolContext) -> Quote:
    """Price and delivery time of one parcel."""
    await ctx.progress(1, 1, "priced")
    express = parcel.service == "express"
    return Quote(price_cents=int(parcel.weight_kg * (900 if express else 400)) + 500,
                 currency="EUR", days=1 if express else 4)


@handlers.tool("units.convert", version="1.0.0", title="Convert a length",
               data_classification="public", side_effect="read", required_scopes=[],
               tenants=[])
def convert(value: float, unit: Literal["cm", "in"] = "cm") -> float:
    """The length in the other unit (centimetres to inches or back)."""
    return round(value / 2.54 if unit == "cm" else value * 2.54, 4)
