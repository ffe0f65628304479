"""The person's side of a login: the loopback redirect, the browser, the device code prompt.

The authorization code comes back to `http://127.0.0.1:PORT/callback` (RFC 8252 7.3: a loopback
redirect on a port chosen when the login starts), served here by a one-request HTTP listener
bound to 127.0.0.1 only. It accepts one redirect for the `state` it was opened for and then
closes; anything else (another path, a second request) gets a 400 and is ignored, so a page
that guesses the port cannot end the login with a code of its choosing (the state would not
match, and the SDK checks it again, with the `iss` of RFC 9207).
"""

from __future__ import annotations

import asyncio
import contextlib
import webbrowser
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

from mcpwall.errors import MCPWallError

_PAGE = ("<!doctype html><meta charset=utf-8><title>mcpwall</title>"
         "<p>{text}</p><p>You can close this window.</p>")


class LoginFailed(MCPWallError):
    """The authorization did not complete (denied, timed out, or refused by the server)."""


@dataclass(frozen=True)
class Redirect:
    """The authorization response's parameters."""

    code: str | None
    state: str | None
    iss: str | None
    error: str | None = None
    error_description: str | None = None


class LoopbackCallback:
    """One authorization response on `http://127.0.0.1:PORT/callback`."""

    def __init__(self) -> None:
        self._server: asyncio.base_events.Server | None = None
        self._result: asyncio.Future[Redirect] | None = None
        self.port = 0

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}/callback"

    async def __aenter__(self) -> LoopbackCallback:
        self._result = asyncio.get_running_loop().create_future()
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)

    async def wait(self, timeout: float) -> Redirect:
        assert self._result is not None
        try:
            return await asyncio.wait_for(asyncio.shield(self._result), timeout)
        except TimeoutError:
            raise LoginFailed(f"no authorization response within {timeout:g} s") from None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), 10)
            while (await asyncio.wait_for(reader.readline(), 10)).strip():
                pass  # headers: nothing in them is needed
            parts = line.decode("latin-1").split()
            target = urlsplit(parts[1]) if len(parts) >= 2 and parts[0] == "GET" else None
            if target is None or target.path != "/callback" or self._result is None or self._result.done():
                await _answer(writer, 400, "Not an authorization response mcpwall is waiting for.")
                return
            query = {k: v[0] for k, v in parse_qs(target.query).items()}
            redirect = Redirect(code=query.get("code"), state=query.get("state"), iss=query.get("iss"),
                                error=query.get("error"), error_description=query.get("error_description"))
            text = (f"Authorization refused: {redirect.error}" if redirect.error
                    else "mcpwall received the authorization.")
            await _answer(writer, 200, text)
            self._result.set_result(redirect)
        except (TimeoutError, ConnectionError, UnicodeDecodeError):
            pass
        finally:
            writer.close()


async def _answer(writer: asyncio.StreamWriter, status: int, text: str) -> None:
    body = _PAGE.format(text=text.replace("<", "&lt;")).encode()
    reason = "OK" if status == 200 else "Bad Request"
    writer.write(f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\n"
                 f"Content-Length: {len(body)}\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n".encode()
                 + body)
    with contextlib.suppress(ConnectionError):
        await writer.drain()


def show_authorization_url(url: str, *, browser: bool, say: Callable[[str], None]) -> None:
    """Open the browser on `url` when asked and one is there; print the URL in every case (a
    person on another machine, or a test, completes the login from it)."""
    opened = False
    if browser:
        with contextlib.suppress(Exception):
            opened = webbrowser.open(url, new=1, autoraise=True)
    say("Opened your browser to authorize mcpwall. If it did not open, visit:" if opened
         else "Open this URL in a browser to authorize mcpwall:")
    say(f"  {url}")


__all__ = ["LoginFailed", "LoopbackCallback", "Redirect", "show_authorization_url"]
