"""Errors on the wire: gRPC status codes with a machine-readable reason.

A refused request fails with a status code and details of the form ``reason: message``; the
reason (``auth/bad-token``, ``card/held``, ...) is also sent as the trailing metadata key
`machiavelox-reason`, so clients switch on it without parsing text. Rules refusals map by kind:
invalid -> INVALID_ARGUMENT, illegal and conflicts -> FAILED_PRECONDITION.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

import grpc

from machiavelox.rules import IllegalActionError, InvalidActionError, RulesError

REASON_KEY = "machiavelox-reason"


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


def unavailable(reason: str, message: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.UNAVAILABLE, reason, message)


async def abort(context: grpc.aio.ServicerContext[Any, Any], err: ServiceError) -> None:
    context.set_trailing_metadata(((REASON_KEY, err.reason),))
    await context.abort(err.status, f"{err.reason}: {err.message}")


class ErrorInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Maps ServiceError and RulesError raised by a servicer to a status with its reason."""

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None:
            return handler
        return _wrap(handler)


def _to_service_error(exc: Exception) -> ServiceError | None:
    if isinstance(exc, ServiceError):
        return exc
    if isinstance(exc, RulesError):
        return ServiceError(status_of(exc), exc.code, exc.message)
    return None


def _wrap(handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
    if handler.unary_unary is not None:
        inner_uu = handler.unary_unary

        async def unary_unary(request: Any, context: Any) -> Any:
            try:
                return await inner_uu(request, context)
            except (ServiceError, RulesError) as exc:
                err = _to_service_error(exc)
                assert err is not None
                await abort(context, err)

        return grpc.unary_unary_rpc_method_handler(
            unary_unary, handler.request_deserializer, handler.response_serializer)
    for streaming, make in ((handler.unary_stream, grpc.unary_stream_rpc_method_handler),
                            (handler.stream_stream, grpc.stream_stream_rpc_method_handler)):
        if streaming is not None:
            return make(_wrap_streaming(streaming), handler.request_deserializer,
                        handler.response_serializer)
    return handler


def _wrap_streaming(inner: Any) -> Any:
    """A streaming handler in the style of `inner`: an async generator that yields the responses,
    or a coroutine that writes them with `context.write` (gRPC serves each style its way)."""
    if inspect.isasyncgenfunction(inner):
        async def responses(request: Any, context: Any) -> Any:
            try:
                async for item in inner(request, context):
                    yield item
            except (ServiceError, RulesError) as exc:
                err = _to_service_error(exc)
                assert err is not None
                await abort(context, err)

        return responses

    async def writes(request: Any, context: Any) -> None:
        try:
            await inner(request, context)
        except (ServiceError, RulesError) as exc:
            err = _to_service_error(exc)
            assert err is not None
            await abort(context, err)

    return writes
