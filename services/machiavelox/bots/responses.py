"""Client side of the batched Play protocol (`Join.batched`): a `Batch` read as the sequence
of single messages it stands for (the outcome first, then the events in order), so a client can
handle both forms with one code path."""

from __future__ import annotations

from machiavelox._gen.v1 import gateway_pb2


def unbatch(response: gateway_pb2.PlayResponse) -> list[gateway_pb2.PlayResponse]:
    if response.WhichOneof("kind") != "batch":
        return [response]
    batch = response.batch
    out: list[gateway_pb2.PlayResponse] = []
    if batch.HasField("ack"):
        out.append(gateway_pb2.PlayResponse(ack=batch.ack))
    elif batch.HasField("refused"):
        out.append(gateway_pb2.PlayResponse(refused=batch.refused))
    out.extend(gateway_pb2.PlayResponse(event=ev) for ev in batch.events)
    return out
