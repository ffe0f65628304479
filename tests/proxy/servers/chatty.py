"""A stdio MCP server that says a secret in every kind of message a server can send a client.

Usage: chatty.py SECRET. Every list, its `initialize` instructions, and every message below carry
SECRET (an AWS-key-shaped string): the gateway's tests check that no client ever receives it in
clear. On `tools/call` of tool `emit` with `{"kind": KIND}` it first sends, while the call is in
flight:
  message, progress, resources/updated (for note://1), resources/list_changed,
  tools/list_changed, prompts/list_changed: that notification, with SECRET in its params
  positional        a notifications/message whose params are a JSON array
  extra_member      a notifications/message with SECRET in a top-level member beside params
  sampling, elicitation: that request (the call is answered once the client has answered it)
  cancelled         a sampling request, then (0.5 s later) notifications/cancelled for it, SECRET
                    as the reason
  roots             a roots/list request; the call's result is the answer the server got
  custom_request    a request of a method no specification names (x/ask), SECRET in its params
  custom_notification  a notification no specification names (notifications/x/said)
  encoded           a notifications/message carrying SECRET only base64-encoded (a credentials file)
and then answers the call with "done" (for `roots`: with the answer, as JSON). Tool `plain`
answers with SECRET in a top-level member beside `result`; tool `fails` answers with an error
whose message holds SECRET; tool `bare` answers with neither result nor error, only SECRET in a
member of its own; tool `caps` answers with the capabilities its client (the gateway) declared, and the call's `_meta`. Method `custom/echo` (a method only a single-server session forwards)
answers with SECRET.
"""

from __future__ import annotations

import base64
import json
import sys
import threading

SECRET = sys.argv[1]
LOCK = threading.Lock()
#: server request id -> the tools/call id it belongs to
WAITING: dict[str, object] = {}
CLIENT_CAPABILITIES: dict = {}


def send(msg: dict) -> None:
    with LOCK:
        sys.stdout.write(json.dumps(msg) + "\n")
        sys.stdout.flush()


def answer(rid: object, text: str) -> None:
    send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": text}]}})


def emit(kind: str, rid: object, params: dict) -> None:
    said = f"the key is {SECRET}"
    token = (params.get("_meta") or {}).get("progressToken")
    notes = {
        "message": {"level": "info", "logger": "chatty", "data": {"text": said}},
        "progress": {"progressToken": token, "progress": 1, "total": 2, "message": said},
        "resources/updated": {"uri": "note://1", "_meta": {"why": said}},
        "resources/list_changed": {"_meta": {"why": said}},
        "tools/list_changed": {"_meta": {"why": said}},
        "prompts/list_changed": {"_meta": {"why": said}},
    }
    if kind in notes:
        send({"jsonrpc": "2.0", "method": f"notifications/{kind}", "params": notes[kind]})
    elif kind == "positional":
        send({"jsonrpc": "2.0", "method": "notifications/message", "params": ["info", said]})
    elif kind == "extra_member":
        send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "hi"},
              "debug": said})
    elif kind in ("sampling", "cancelled"):
        sid = f"s-{rid}"
        WAITING[sid] = rid
        send({"jsonrpc": "2.0", "id": sid, "method": "sampling/createMessage", "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": said}}],
            "systemPrompt": said, "maxTokens": 10}})
        if kind == "cancelled":
            def cancel() -> None:
                WAITING.pop(sid, None)
                send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                      "params": {"requestId": sid, "reason": said}})
                answer(rid, "done")
            threading.Timer(0.5, cancel).start()
        return
    elif kind == "elicitation":
        sid = f"e-{rid}"
        WAITING[sid] = rid
        send({"jsonrpc": "2.0", "id": sid, "method": "elicitation/create", "params": {
            "mode": "form", "message": said,
            "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean", "description": said}}}}})
        return
    elif kind == "custom_request":
        sid = f"x-{rid}"
        WAITING[sid] = rid
        send({"jsonrpc": "2.0", "id": sid, "method": "x/ask", "params": {"q": said}})
        return
    elif kind == "custom_notification":
        send({"jsonrpc": "2.0", "method": "notifications/x/said", "params": {"what": said}})
    elif kind == "encoded":
        blob = base64.b64encode(f"aws_access_key_id = {SECRET}\n".encode()).decode()
        send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": {"file": blob}}})
    elif kind == "roots":
        sid = f"r-{rid}"
        WAITING[sid] = rid
        send({"jsonrpc": "2.0", "id": sid, "method": "roots/list"})
        return
    answer(rid, "done")


def main() -> None:
    tools = [{"name": "emit", "description": f"Emits things. Example key: {SECRET}",
              "inputSchema": {"type": "object", "properties": {"kind": {"type": "string"}}}},
             {"name": "plain", "description": "Answers", "inputSchema": {"type": "object"}},
             {"name": "fails", "description": "Fails", "inputSchema": {"type": "object"}},
             {"name": "bare", "description": "Answers nothing", "inputSchema": {"type": "object"}},
             {"name": "caps", "description": "Tells its client's capabilities", "inputSchema": {"type": "object"}}]
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        method, rid = msg.get("method"), msg.get("id")
        params = msg.get("params") or {}
        if method is None:
            # a client's answer to one of our requests: the call it belongs to ends with it
            call = WAITING.pop(str(rid), None)
            if call is not None:
                answer(call, json.dumps(msg.get("result", msg.get("error"))))
            continue
        if rid is None:
            continue
        if method == "initialize":
            CLIENT_CAPABILITIES.update(params.get("capabilities") or {})
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": params.get("protocolVersion"),
                "capabilities": {"tools": {"listChanged": True}, "logging": {},
                                 "resources": {"subscribe": True, "listChanged": True},
                                 "prompts": {"listChanged": True}, "completions": {}},
                "serverInfo": {"name": "chatty", "version": "1"},
                "instructions": f"Use key {SECRET} for everything."}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": rid, "result": {"tools": tools}})
        elif method == "resources/list":
            send({"jsonrpc": "2.0", "id": rid, "result": {"resources": [
                {"uri": "note://1", "name": "note", "description": f"holds {SECRET}"}]}})
        elif method == "resources/templates/list":
            send({"jsonrpc": "2.0", "id": rid, "result": {"resourceTemplates": [
                {"uriTemplate": "note://{id}", "name": "notes", "description": f"hold {SECRET}"}]}})
        elif method == "prompts/list":
            send({"jsonrpc": "2.0", "id": rid, "result": {"prompts": [
                {"name": "greet", "description": f"greets with {SECRET}"}]}})
        elif method in ("resources/subscribe", "resources/unsubscribe", "logging/setLevel", "ping"):
            send({"jsonrpc": "2.0", "id": rid, "result": {}})
        elif method == "resources/read":
            send({"jsonrpc": "2.0", "id": rid, "result": {"contents": [
                {"uri": params.get("uri"), "mimeType": "text/plain", "text": f"the key is {SECRET}"}]}})
        elif method == "prompts/get":
            send({"jsonrpc": "2.0", "id": rid, "result": {"description": f"with {SECRET}", "messages": [
                {"role": "user", "content": {"type": "text", "text": f"use {SECRET}"}}]}})
        elif method == "completion/complete":
            send({"jsonrpc": "2.0", "id": rid, "result": {"completion": {"values": [SECRET], "total": 1}}})
        elif method == "custom/echo":
            send({"jsonrpc": "2.0", "id": rid, "result": {"said": SECRET}})
        elif method == "tools/call" and params.get("name") == "emit":
            emit(str((params.get("arguments") or {}).get("kind")), rid, params)
        elif method == "tools/call" and params.get("name") == "plain":
            send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "plain"}]},
                  "debug": f"the key is {SECRET}"})
        elif method == "tools/call" and params.get("name") == "bare":
            send({"jsonrpc": "2.0", "id": rid, "debug": f"the key is {SECRET}"})
        elif method == "tools/call" and params.get("name") == "caps":
            answer(rid, json.dumps({"initialize": CLIENT_CAPABILITIES, "meta": params.get("_meta") or {}}))
        elif method == "tools/call" and params.get("name") == "fails":
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32000, "message": f"bad key {SECRET}",
                                                         "data": {"key": SECRET}}})
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"no {method}"}})


if __name__ == "__main__":
    main()
