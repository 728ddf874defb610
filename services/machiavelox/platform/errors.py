"""Errors on the wire: gRPC status codes with a machine-readable reason.

A refused request fails with a status code and details of the form ``reason: message``; the
reason (``auth/bad-token``, ``card/held``, ...) is also sent as the trailing metadata key
`machiavelox-reason`, so clients switch on it without parsing text. Rules refusals map by kind:
invalid -> INVALID_ARGUMENT, illegal and conflicts -> FAILED_PRECONDITION.

A request message that does not decode (corrupt bytes, a truncated varint, bad UTF-8, nesting
too deep) ends its call with INVALID_ARGUMENT `request/malformed`, on every service: the
`ErrorInterceptor` gives each handler a deserializer that catches the failure (logged once at
WARNING, without a traceback) and stops the call there; no later message of a stream is read.

A value a client gave (a table id, a ticket id, an invite code...) appears in a status message
or a span attribute only through `shown`, which cuts it to `SHOWN_CHARS`: a status fits the
trailer limit whatever the request held, and `abort` cuts the whole message as a last resort.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import grpc

from machiavelox.rules import IllegalActionError, InvalidActionError, RulesError

from .ratelimit import Rate, RateLimits

log = logging.getLogger(__name__)

REASON_KEY = "machiavelox-reason"
MALFORMED_REASON = "request/malformed"
SHOWN_CHARS = 64  # the most of a client's value a status message or a span attribute shows
MAX_DETAILS = 512  # the most characters of a status message (the trailer limit is 8 KiB)


class ServiceError(Exception):
    """A request a service refuses, with its status code and stable reason."""

    def __init__(self, status: grpc.StatusCode, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message


def status_of(err: RulesError) -> grpc.StatusCode:
    if isinstance(err, InvalidActionError):
        return grpc.StatusCode.INVALID_ARGUMENT
    if isinstance(err, IllegalActionError):
        return grpc.StatusCode.FAILED_PRECONDITION
    return grpc.StatusCode.FAILED_PRECONDITION


def invalid_argument(reason: str, message: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.INVALID_ARGUMENT, reason, message)


def unauthenticated(reason: str, message: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.UNAUTHENTICATED, reason, message)


def permission_denied(reason: str, message: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.PERMISSION_DENIED, reason, message)


def not_found(reason: str, message: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.NOT_FOUND, reason, message)


def failed_precondition(reason: str, message: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.FAILED_PRECONDITION, reason, message)


def resource_exhausted(reason: str, message: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.RESOURCE_EXHAUSTED, reason, message)


def unavailable(reason: str, message: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.UNAVAILABLE, reason, message)


def shown(value: object, limit: int = SHOWN_CHARS) -> str:
    """`value` (a client's id, code, ...) as a status message or a span attribute may show it:
    at most `limit` characters, a longer one cut and ending in "..."."""
    text = value if isinstance(value, str) else str(value)
    if len(text) <= limit:
        return text
    return text[: max(0, limit - 3)] + "..."


def malformed_request(problem: str = "") -> ServiceError:
    """INVALID_ARGUMENT `request/malformed`: a request message that does not decode."""
    detail = f" ({shown(problem, 120)})" if problem else ""
    return invalid_argument(MALFORMED_REASON, f"the request message does not decode{detail}")


async def abort(context: grpc.aio.ServicerContext[Any, Any], err: ServiceError) -> None:
    context.set_trailing_metadata(((REASON_KEY, err.reason),))
    await context.abort(err.status, shown(f"{err.reason}: {err.message}", MAX_DETAILS))


# ---------------------------------------------------------------------------- malformed input
class Malformed:
    """What a unary request that does not decode becomes (its handler aborts at once)."""

    __slots__ = ("problem",)

    def __init__(self, problem: str) -> None:
        self.problem = problem

    def __repr__(self) -> str:
        return f"Malformed({self.problem!r})"


class _MalformedLog:
    """One WARNING per malformed request, without a traceback; past a burst (a script sending
    garbage on many calls), at most one a second per method, telling how many were not logged.
    (Methods are the server's own: an unknown one never gets a handler, hence no key.)"""

    def __init__(self, rate: Rate | None = None) -> None:
        self._limits = RateLimits(rate or Rate(per_s=1.0, burst=20), max_keys=256)
        self._unlogged: dict[str, int] = {}

    def seen(self, method: str, exc: Exception) -> None:
        if not self._limits.allow(method, time.monotonic()):
            self._unlogged[method] = self._unlogged.get(method, 0) + 1
            return
        unlogged = self._unlogged.pop(method, 0)
        more = f" ({unlogged} more not logged)" if unlogged else ""
        log.warning("malformed request to %s: %s: %s%s", method, type(exc).__name__,
                    shown(str(exc), 200), more, extra={"method": method})


_malformed_log = _MalformedLog()


def decoder(deserializer: Callable[[bytes], Any] | None, method: str,
            request_streaming: bool) -> Callable[[bytes], Any] | None:
    """`deserializer`, made safe for bytes from anyone. A failure to decode is logged once;
    then a unary request becomes a `Malformed` (its handler, wrapped by `_wrap`, aborts), and a
    streamed one raises ServiceError `request/malformed` from the request iterator (the handler
    reading it ends there, and `_wrap_streaming` turns that into the status)."""
    if deserializer is None:
        return None
    decode = deserializer
    if request_streaming:
        def decode_streamed(raw: bytes) -> Any:
            try:
                return decode(raw)
            except Exception as exc:  # whatever a parser raises: bad input
                _malformed_log.seen(method, exc)
                raise malformed_request(str(exc)) from None

        return decode_streamed

    def decode_unary(raw: bytes) -> Any:
        try:
            return decode(raw)
        except Exception as exc:
            _malformed_log.seen(method, exc)
            return Malformed(str(exc))

    return decode_unary


class ErrorInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Maps ServiceError and RulesError raised by a servicer to a status with its reason, and
    gives every handler the `decoder` of its requests (`request/malformed`). A method's handler
    is wrapped once, not on every call."""

    def __init__(self) -> None:
        self._wrapped: dict[str, tuple[Any, Any]] = {}  # method -> (handler, wrapped handler)

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None:
            return handler
        method = handler_call_details.method
        cached = self._wrapped.get(method)
        if cached is not None and cached[0] is handler:
            return cached[1]
        wrapped = _wrap(handler, method)
        self._wrapped[method] = (handler, wrapped)
        return wrapped


def service_error_of(exc: Exception) -> ServiceError | None:
    """The refusal `exc` stands for (a ServiceError, or a RulesError's code), or None."""
    if isinstance(exc, ServiceError):
        return exc
    if isinstance(exc, RulesError):
        return ServiceError(status_of(exc), exc.code, exc.message)
    return None


def _wrap(handler: grpc.RpcMethodHandler, method: str = "") -> grpc.RpcMethodHandler:
    decode = decoder(handler.request_deserializer, method, handler.request_streaming)
    serialize = handler.response_serializer
    for unary, make_unary in ((handler.unary_unary, grpc.unary_unary_rpc_method_handler),
                              (handler.stream_unary, grpc.stream_unary_rpc_method_handler)):
        if unary is not None:
            return make_unary(_wrap_unary(unary), decode, serialize)
    for streaming, make in ((handler.unary_stream, grpc.unary_stream_rpc_method_handler),
                            (handler.stream_stream, grpc.stream_stream_rpc_method_handler)):
        if streaming is not None:
            return make(_wrap_streaming(streaming), decode, serialize)
    return handler


async def _abort_for(context: Any, exc: ServiceError | RulesError) -> None:
    err = service_error_of(exc)
    assert err is not None
    await abort(context, err)


def _wrap_unary(inner: Any) -> Any:
    async def unary(request: Any, context: Any) -> Any:
        try:
            if request.__class__ is Malformed:
                raise malformed_request(request.problem)
            return await inner(request, context)
        except (ServiceError, RulesError) as exc:
            await _abort_for(context, exc)

    return unary


def _wrap_streaming(inner: Any) -> Any:
    """A streaming handler in the style of `inner`: an async generator that yields the responses,
    or a coroutine that writes them with `context.write` (gRPC serves each style its way)."""
    if inspect.isasyncgenfunction(inner):
        async def responses(request: Any, context: Any) -> Any:
            try:
                if request.__class__ is Malformed:
                    raise malformed_request(request.problem)
                async for item in inner(request, context):
                    yield item
            except (ServiceError, RulesError) as exc:
                await _abort_for(context, exc)

        return responses

    async def writes(request: Any, context: Any) -> None:
        try:
            if request.__class__ is Malformed:
                raise malformed_request(request.problem)
            await inner(request, context)
        except (ServiceError, RulesError) as exc:
            await _abort_for(context, exc)

    return writes
