"""Faults between a correct server and the harness: an ASGI middleware that rewrites the
gateway's plain JSON answers (server-sent events pass through untouched) the way a faulty
intermediary or server would."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

__all__ = ["FAULTS", "faulty"]

Answer = tuple[int, dict[str, Any] | None]
Fault = Callable[[int, Any], Answer]


def _status_400_to_500(status: int, body: Any) -> Answer:
    return (500 if status == 400 else status), body


def _notification_answered(status: int, body: Any) -> Answer:
    if status == 202:
        return 200, {"jsonrpc": "2.0", "id": None, "result": None}
    return status, body


def _id_type_changed(status: int, body: Any) -> Answer:
    if isinstance(body, dict) and type(body.get("id")) is int:
        body = {**body, "id": str(body["id"])}
    return status, body


def _result_type_dropped(status: int, body: Any) -> Answer:
    if isinstance(body, dict) and isinstance(body.get("result"), dict):
        body = {**body, "result": {k: v for k, v in body["result"].items()
                                   if k != "resultType"}}
    return status, body


def _result_type_invented(status: int, body: Any) -> Answer:
    if isinstance(body, dict) and isinstance(body.get("result"), dict):
        body = {**body, "result": {**body["result"], "resultType": "com.example/invented"}}
    return status, body


def _result_and_error(status: int, body: Any) -> Answer:
    if isinstance(body, dict) and "result" in body:
        body = {**body, "error": {"code": -32603, "message": "Internal error"}}
    return status, body


FAULTS: dict[str, Fault] = {
    "status-400-to-500": _status_400_to_500,
    "notification-answered": _notification_answered,
    "id-type-changed": _id_type_changed,
    "result-type-dropped": _result_type_dropped,
    "result-type-invented": _result_type_invented,
    "result-and-error": _result_and_error,
}


def faulty(app: Any, fault: Fault) -> Any:
    """``app`` behind an intermediary that applies ``fault`` to each plain answer."""

    async def middleware(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        held: dict[str, Any] = {}
        chunks: list[bytes] = []

        async def intercept(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = dict(message.get("headers", []))
                if headers.get(b"content-type", b"").startswith(b"text/event-stream"):
                    held["passthrough"] = True
                    await send(message)
                    return
                held["start"] = message
                return
            if held.get("passthrough"):
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            await _release(held["start"], b"".join(chunks), fault, send)

        await app(scope, receive, intercept)

    return middleware


async def _release(start: dict[str, Any], raw: bytes, fault: Fault, send: Any) -> None:
    try:
        body = json.loads(raw) if raw.strip() else None
    except ValueError:  # not JSON (a transport refusal's text): the fault is for JSON answers
        await send(start)
        await send({"type": "http.response.body", "body": raw})
        return
    status, changed = fault(start["status"], body)
    data = b"" if changed is None and body is None else json.dumps(changed).encode()
    headers = [(k, v) for k, v in start.get("headers", [])
               if k not in (b"content-length", b"content-type")]
    if data:
        headers += [(b"content-type", b"application/json"),
                    (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})
