"""What the review tests (tests/security/test_review_*.py) share: tools/call through `POST /{server}`."""

from __future__ import annotations

from typing import Any

import httpx

from tests.proxy.harness import GatewayProcess


class Caller:
    """Calls tools of one gateway's servers with its token, numbering the requests."""

    def __init__(self, gw: GatewayProcess, headers: dict[str, str] | None = None) -> None:
        self.gw = gw
        self.ids = 0
        #: the gateway's token file's by default (a gateway given $MCPWALL_TOKEN writes none)
        self.headers = headers

    def call(self, tool: str, arguments: dict[str, Any], server: str = "fs") -> dict[str, Any]:
        self.ids += 1
        answer: dict[str, Any] = httpx.post(f"{self.gw.url}/{server}", headers=self.headers or self.gw.headers,
                                            timeout=30, json={
            "jsonrpc": "2.0", "id": self.ids, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}}).json()
        return answer
