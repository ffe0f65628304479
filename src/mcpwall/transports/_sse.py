"""A small Server-Sent Events parser (the subset MCP uses: event, data, id, retry)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass


@dataclass(slots=True)
class Event:
    event: str
    data: str
    id: str | None
    retry: int | None


async def events(lines: AsyncIterator[str], max_event_bytes: int) -> AsyncIterator[Event]:
    """Yield events from an iterator of lines (without line terminators)."""
    event, event_id, retry, size = "message", None, None, 0
    data: list[str] = []
    event_id_t: str | None = None
    retry_t: int | None = None
    event_id, retry = event_id_t, retry_t
    async for raw in lines:
        line = raw.rstrip("\r")
        if not line:
            if data or event_id is not None:
                yield Event(event, "\n".join(data), event_id, retry)
            event, event_id, retry, size = "message", None, None, 0
            data = []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "data":
            size += len(value)
            if size > max_event_bytes:
                raise ValueError(f"SSE event over {max_event_bytes} bytes")
            data.append(value)
        elif field == "event":
            event = value or "message"
        elif field == "id":
            event_id = value
        elif field == "retry" and value.isdigit():
            retry = int(value)
    if data:
        yield Event(event, "\n".join(data), event_id, retry)


__all__ = ["Event", "events"]
