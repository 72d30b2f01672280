"""`/admin/`: inject faults, read the call and delivery logs, point deliveries at the app."""

from __future__ import annotations

from typing import Annotated, Literal

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from .delivery import Delivery
from .errors import SandboxError
from .faults import ANY_METHOD, Faults


class _Fault(BaseModel):
    model_config = ConfigDict(extra="forbid")
    method: str = ANY_METHOD


class RateLimitFault(_Fault):
    kind: Literal["ratelimit"]
    count: int = Field(default=1, ge=1)
    retry_after: int = Field(default=1, ge=0)


class ServerErrorFault(_Fault):
    kind: Literal["server_error"]
    count: int = Field(default=1, ge=1)
    status: int = Field(default=500, ge=500, le=599)


class LatencyFault(_Fault):
    kind: Literal["latency"]
    seconds: float = Field(gt=0)
    count: int | None = Field(default=None, ge=1)


class DropFault(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["drop_delivery"]
    count: int = Field(default=1, ge=1)


FaultRequest = Annotated[
    RateLimitFault | ServerErrorFault | LatencyFault | DropFault, Field(discriminator="kind")
]
_faults_adapter: TypeAdapter[FaultRequest] = TypeAdapter(FaultRequest)


class Redeliver(BaseModel):
    index: int = -1


class RequestUrl(BaseModel):
    url: str | None


class Admin:
    """Routes for reliability tests and for wiring an app to the sandbox."""

    def __init__(self, *, faults: Faults, delivery: Delivery) -> None:
        self._faults = faults
        self._delivery = delivery

    def routes(self) -> list[web.RouteDef]:
        return [
            web.post("/admin/faults", self.add_fault),
            web.delete("/admin/faults", self.clear_faults),
            web.get("/admin/calls", self.calls),
            web.delete("/admin/calls", self.clear_calls),
            web.get("/admin/deliveries", self.deliveries),
            web.post("/admin/redeliver", self.redeliver),
            web.put("/admin/request-url", self.set_request_url),
        ]

    async def add_fault(self, request: web.Request) -> web.Response:
        try:
            fault = _faults_adapter.validate_json(await request.read())
        except ValidationError as exc:
            return web.json_response({"error": str(exc)}, status=400)
        match fault:
            case RateLimitFault():
                self._faults.rate_limit(
                    fault.method, count=fault.count, retry_after=fault.retry_after
                )
            case ServerErrorFault():
                self._faults.server_error(fault.method, count=fault.count, status=fault.status)
            case LatencyFault():
                self._faults.latency(fault.method, seconds=fault.seconds, count=fault.count)
            case DropFault():
                self._faults.drop_deliveries(fault.count)
        return web.json_response({"ok": True})

    async def clear_faults(self, _: web.Request) -> web.Response:
        self._faults.clear()
        return web.json_response({"ok": True})

    async def calls(self, request: web.Request) -> web.Response:
        method = request.query.get("method")
        return web.json_response({"calls": [c.to_json() for c in self._faults.calls(method)]})

    async def clear_calls(self, _: web.Request) -> web.Response:
        self._faults.clear_calls()
        return web.json_response({"ok": True})

    async def deliveries(self, _: web.Request) -> web.Response:
        return web.json_response(
            {
                "deliveries": [
                    {
                        "kind": out.kind,
                        "type": out.payload.get("type") or out.payload.get("command"),
                        **ack.to_json(),
                    }
                    for out, ack in self._delivery.log
                ]
            }
        )

    async def redeliver(self, request: web.Request) -> web.Response:
        try:
            body = Redeliver.model_validate_json(await request.read() or b"{}")
            ack = await self._delivery.redeliver(body.index)
        except (ValidationError, IndexError, SandboxError) as exc:
            return web.json_response({"error": str(exc)}, status=400)
        return web.json_response({"ack": ack.to_json()})

    async def set_request_url(self, request: web.Request) -> web.Response:
        try:
            body = RequestUrl.model_validate_json(await request.read())
        except ValidationError as exc:
            return web.json_response({"error": str(exc)}, status=400)
        self._delivery.request_url = body.url
        return web.json_response({"ok": True, "url": body.url})
