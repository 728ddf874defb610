"""`helm test`: ask every service's standard gRPC health service whether it is SERVING.

    python health-check.py [--timeout SECONDS] NAME=HOST:PORT [NAME=HOST:PORT ...]

Prints one line per service and exits 0 only when every one answered SERVING. Runs in the
chart's own image (Python and grpcio are there); kept in the chart so Helm can ship it.
"""

import sys

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc


def check(address: str, timeout: float = 5.0) -> str:
    try:
        with grpc.insecure_channel(address) as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=""), timeout=timeout,
                wait_for_ready=True)
    except grpc.RpcError as err:
        return err.code().name
    return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)


def main(args: list[str]) -> int:
    timeout = 5.0
    if args[:1] == ["--timeout"] and len(args) > 1:
        timeout, args = float(args[1]), args[2:]
    if not args:
        print("usage: health-check.py [--timeout SECONDS] NAME=HOST:PORT ...", file=sys.stderr)
        return 2
    failed = 0
    for target in args:
        name, _, address = target.partition("=")
        status = check(address, timeout)
        print(f"{name} {address}: {status}", flush=True)
        failed += status != "SERVING"
    print("all services SERVING" if not failed else f"{failed} not SERVING", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
