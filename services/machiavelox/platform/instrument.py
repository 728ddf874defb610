"""Observing every RPC a server handles: one wrapper per call, shared by tracing and metrics.

An `RpcObserver` is told when a call starts (`begin`, in the call's own task, before the
servicer runs) and returns a callback that is run once when the call ends, with its final
status code. `ObservingInterceptor` wraps each handler once for all its observers, so a
streaming call pays one extra generator step per message however many observers there are.

The final code is what the client sees: OK when the servicer returns (or the code it set with
`set_code`), the code of `context.abort` (the error interceptor's mapping of ServiceError and
RulesError), CANCELLED when the client went away, DEADLINE_EXCEEDED when its deadline passed,
UNKNOWN for any other exception.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import grpc

UNARY = "unary"
CLIENT_STREAM = "client_stream"
SERVER_STREAM = "server_stream"
BIDI_STREAM = "bidi_stream"


@dataclass(frozen=True, slots=True)
class RpcMethod:
    """One method of a service: ``/machiavelox.v1.ScoringService/ReportResult``."""

    full: str
    service: str  # machiavelox.v1.ScoringService
    name: str  # ReportResult
    type: str  # unary | client_stream | server_stream | bidi_stream

    @classmethod
    def parse(cls, full: str, rpc_type: str) -> RpcMethod:
        service, _, name = full.lstrip("/").rpartition("/")
        return cls(full, service or "unknown", name or full, rpc_type)


End = Callable[[grpc.StatusCode, BaseException | None], None]
"""Called once when the call ends: its status code, and the exception that ended it, if any."""


class RpcObserver(Protocol):
    def begin(self, method: RpcMethod, context: Any) -> End | None:
        """A call starts (in its own task); return what to run when it ends, or None."""
        ...


def final_code(context: Any, exc: BaseException | None) -> grpc.StatusCode:
    """The status the client gets for a call that returned (`exc` None) or raised `exc`."""
    code = context.code()
    if isinstance(code, grpc.StatusCode) and (exc is None or code is not grpc.StatusCode.OK):
        return code
    if exc is None:
        return grpc.StatusCode.OK
    if isinstance(exc, asyncio.CancelledError | GeneratorExit):
        remaining = context.time_remaining()
        if remaining is not None and remaining <= 0:
            return grpc.StatusCode.DEADLINE_EXCEEDED
        return grpc.StatusCode.CANCELLED
    return grpc.StatusCode.UNKNOWN


class ObservingInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """A server interceptor running `observers` around every call it sees."""

    def __init__(self, observers: Sequence[RpcObserver]) -> None:
        self.observers = list(observers)
        self._methods: dict[tuple[str, str], RpcMethod] = {}

    def _method(self, full: str, rpc_type: str) -> RpcMethod:
        key = (full, rpc_type)
        method = self._methods.get(key)
        if method is None:
            method = self._methods[key] = RpcMethod.parse(full, rpc_type)
        return method

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None or not self.observers:
            return handler
        return self._wrap(handler_call_details.method, handler)

    def _begin(self, method: RpcMethod, context: Any) -> list[End]:
        ends = []
        for observer in self.observers:
            end = observer.begin(method, context)
            if end is not None:
                ends.append(end)
        return ends

    @staticmethod
    def _end(ends: list[End], context: Any, exc: BaseException | None) -> None:
        code = final_code(context, exc)
        for end in reversed(ends):
            end(code, exc)

    def _wrap(self, full: str, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
        begin, end = self._begin, self._end
        if handler.unary_unary is not None:
            method = self._method(full, UNARY)
            inner_uu = handler.unary_unary

            async def unary_unary(request: Any, context: Any) -> Any:
                ends = begin(method, context)
                try:
                    response = await inner_uu(request, context)
                except BaseException as exc:
                    end(ends, context, exc)
                    raise
                end(ends, context, None)
                return response

            return grpc.unary_unary_rpc_method_handler(
                unary_unary, handler.request_deserializer, handler.response_serializer)
        if handler.stream_unary is not None:
            method = self._method(full, CLIENT_STREAM)
            inner_su = handler.stream_unary

            async def stream_unary(request_iterator: Any, context: Any) -> Any:
                ends = begin(method, context)
                try:
                    response = await inner_su(request_iterator, context)
                except BaseException as exc:
                    end(ends, context, exc)
                    raise
                end(ends, context, None)
                return response

            return grpc.stream_unary_rpc_method_handler(
                stream_unary, handler.request_deserializer, handler.response_serializer)
        for streaming, rpc_type, make in (
                (handler.unary_stream, SERVER_STREAM, grpc.unary_stream_rpc_method_handler),
                (handler.stream_stream, BIDI_STREAM, grpc.stream_stream_rpc_method_handler)):
            if streaming is not None:
                return make(self._wrap_streaming(self._method(full, rpc_type), streaming),
                            handler.request_deserializer, handler.response_serializer)
        return handler

    def _wrap_streaming(self, method: RpcMethod, inner: Any) -> Any:
        """A streaming handler in the style of `inner`: an async generator yielding the
        responses, or a coroutine writing them with `context.write`."""
        begin, end = self._begin, self._end
        if inspect.isasyncgenfunction(inner):
            async def responses(request: Any, context: Any) -> AsyncIterator[Any]:
                ends = begin(method, context)
                try:
                    async for item in inner(request, context):
                        yield item
                except BaseException as exc:
                    end(ends, context, exc)
                    raise
                end(ends, context, None)

            return responses

        async def writes(request: Any, context: Any) -> None:
            ends = begin(method, context)
            try:
                await inner(request, context)
            except BaseException as exc:
                end(ends, context, exc)
                raise
            end(ends, context, None)

        return writes
