"""The dashboard's HTML: a login form and one page shell per view; `static/app.js` fills them.

Pages carry no data: the script reads it from `/api/` and writes it with
`textContent` only (tool names and arguments come from agents and may hold
markup). The CSP forbids inline scripts and anything not from this origin.
"""

from __future__ import annotations

from html import escape

from mcpwall import __version__

PAGES: dict[str, str] = {
    "overview": "Overview",
    "calls": "Calls",
    "approvals": "Approvals",
    "timeline": "Timeline",
    "simulate": "Simulate",
    "servers": "Servers",
}
PATHS = {"overview": "/ui/", "calls": "/ui/calls", "approvals": "/ui/approvals", "timeline": "/ui/timeline",
         "simulate": "/ui/simulate", "servers": "/ui/servers"}

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "font-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]

_HEAD = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>mcpwall · {title}</title>
<link rel="icon" href="/ui/static/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/ui/static/app.css?v={version}">
{extra}</head>
"""

_BODIES: dict[str, str] = {
    "overview": """
<section class="cards" id="cards">
  <div class="card" data-stat="calls"><span class="label">Tool calls</span><span class="value">–</span><span class="sub">last 24 h</span></div>
  <div class="card bad" data-stat="blocked"><span class="label">Blocked</span><span class="value">–</span><span class="sub">denied</span></div>
  <div class="card warn" data-stat="redacted"><span class="label">Redacted</span><span class="value">–</span><span class="sub">arguments or results</span></div>
  <div class="card ask" data-stat="asks_pending"><span class="label">Asks pending</span><span class="value">–</span><span class="sub"><a href="/ui/approvals">answer</a></span></div>
  <div class="card" data-stat="p50_ms"><span class="label">Latency p50</span><span class="value">–</span><span class="sub" title="each call's time less its server's and any wait for a person">ms in the gateway</span></div>
  <div class="card" data-stat="p99_ms"><span class="label">Latency p99</span><span class="value">–</span><span class="sub" title="each call's time less its server's and any wait for a person">ms in the gateway</span></div>
</section>
<section class="status">
  <div class="panel" id="policy-status"><h2>Policy</h2><p class="line" id="policy-line">–</p>
    <p class="line error" id="policy-refused" hidden></p><p class="line warn" id="policy-held" hidden></p></div>
  <div class="panel" id="ledger-status"><h2>Ledger integrity <button id="verify" class="quiet small" hidden>Verify now</button></h2>
    <p class="line" id="ledger-line">–</p><p class="line" id="ledger-head"></p></div>
</section>
<section class="panel"><h2>Calls and blocks, last hour <span class="legend"><i class="sw calls"></i>calls <i class="sw blocks"></i>blocked</span></h2>
  <div id="chart" class="chart" role="img" aria-label="calls and blocks per minute"></div></section>
<section class="panel"><h2>Live <span class="hint">newest first, as the gateway decides</span></h2>
  <div class="scroll"><table class="calls" id="live"><thead><tr><th>time</th><th>server / tool</th><th>decision</th><th>rules</th><th>badges</th><th>ms</th><th>client</th></tr></thead><tbody></tbody></table></div>
  <p class="empty" id="live-empty">No calls yet.</p></section>
""",
    "calls": """
<section class="panel"><h2>Recent tool calls</h2>
<form id="filters" class="filters">
  <label>server <input name="server" placeholder="fs or f*" autocomplete="off"></label>
  <label>tool <input name="tool" placeholder="read_*" autocomplete="off"></label>
  <label>decision <select name="decision"><option value="">any</option><option>allow</option><option>deny</option><option>ask</option><option>warn</option><option>redact</option><option>rewrite</option><option>error</option><option>invalid</option><option>timeout</option><option>failed</option><option>rate_limited</option><option>circuit_open</option></select></label>
  <label>client <input name="client" placeholder="claude*" autocomplete="off"></label>
  <label>since <input name="since" placeholder="1h, 2026-05-20T10:00" autocomplete="off"></label>
  <button type="submit">Filter</button> <button type="reset" class="quiet">Clear</button>
</form>
<div class="scroll"><table class="calls" id="calls"><thead><tr><th>time</th><th>server / tool</th><th>decision</th><th>rules</th><th>badges</th><th>ms</th><th>client</th><th>arguments / reason</th></tr></thead><tbody></tbody></table></div>
<p class="empty" id="calls-empty">No matching calls.</p>
<p><button id="more" class="quiet" hidden>Older calls</button></p></section>
""",
    "approvals": """
<section class="panel"><h2>Waiting for a person <span class="hint">each approval releases one exact call, once</span></h2>
  <div id="pending" class="queue"></div><p class="empty" id="pending-empty">Nothing waits for approval.</p></section>
<section class="panel"><h2>Approve-similar grants <span class="hint">narrow, expiring allows; revoke any time</span></h2>
  <div class="scroll"><table id="grants"><thead><tr><th>id</th><th>server / tool</th><th>agent</th><th>argument names</th><th>rules</th><th>expires</th><th>uses</th><th></th></tr></thead><tbody></tbody></table></div>
  <p class="empty" id="grants-empty">No active grants.</p></section>
<section class="panel"><h2>Answered</h2>
  <div class="scroll"><table id="history"><thead><tr><th>id</th><th>server / tool</th><th>status</th><th>via</th><th>answered</th><th>reason</th></tr></thead><tbody></tbody></table></div>
  <p class="empty" id="history-empty">No answered asks yet.</p></section>
""",
    "simulate": """
<section class="panel"><h2>Simulate a call <span class="hint">the policy's decision and the trace of every rule; nothing is sent</span></h2>
<form id="simulate" class="simulate">
  <label>server <select name="server" id="sim-server"><option value="">(any)</option></select></label>
  <label>tool <input name="tool" required placeholder="read_file" autocomplete="off"></label>
  <label class="wide">arguments (JSON) <textarea name="args" rows="5" spellcheck="false">{}</textarea></label>
  <label>client <input name="client" placeholder="claude-desktop" autocomplete="off"></label>
  <label>agent <input name="agent" autocomplete="off"></label>
  <button type="submit">Simulate</button>
</form>
<div id="sim-result" hidden>
  <p class="verdict">Decision: <span id="sim-action" class="decision"></span> <span id="sim-rules"></span></p>
  <ul id="sim-reasons"></ul>
  <div class="scroll"><table id="sim-trace"><thead><tr><th>rule</th><th>layer</th><th>action</th><th>status</th><th>detail</th></tr></thead><tbody></tbody></table></div>
</div>
<p class="error" id="sim-error" hidden></p></section>
""",
    "servers": """
<section class="panel"><h2>Servers</h2>
<div class="scroll"><table id="servers"><thead><tr><th>server</th><th>state</th><th>circuit</th><th>risk</th><th>tools</th><th>pins</th><th>pending changes</th></tr></thead><tbody></tbody></table></div>
<p class="empty" id="servers-empty">No servers.</p></section>
<div id="server-details"></div>
""",
    "timeline": """
<section class="panel"><h2>Sessions <span class="hint">newest first; pick one to see everything it did, in order</span></h2>
<div class="scroll"><table id="sessions"><thead><tr><th>session</th><th>client</th><th>agent</th><th>from</th><th>to</th><th>events</th><th>decisions</th></tr></thead><tbody></tbody></table></div>
<p class="empty" id="sessions-empty">No sessions in the ledger yet.</p></section>
<section class="panel" id="session" hidden><h2>Session <span id="session-id" class="id"></span> <span class="hint" id="session-who"></span></h2>
<p class="line" id="session-counts"></p>
<div class="scroll"><table id="events"><thead><tr><th>+s</th><th>time</th><th>#</th><th>method</th><th>server / tool</th><th>decision</th><th>rules</th><th>ms</th><th>reason</th></tr></thead><tbody></tbody></table></div>
<p><button id="events-more" class="quiet" hidden>Later events</button></p></section>
""",
}


def page(name: str, csrf: str, mode: str, logout: bool) -> str:
    """The shell of one view."""
    title = PAGES[name]
    extra = (f'<meta name="csrf-token" content="{escape(csrf)}">\n<meta name="mcpwall-mode" content="{escape(mode)}">\n'
             f'<script src="/ui/static/app.js?v={escape(__version__)}" defer></script>\n')
    current = ' class="on" aria-current="page"'
    nav = "".join(f'<a href="{PATHS[p]}"{current if p == name else ""}>{t}</a>' for p, t in PAGES.items())
    out = "" if not logout else '<button id="logout" class="quiet">Log out</button>'
    return (_HEAD.format(title=title, version=escape(__version__), extra=extra)
            + f'<body data-page="{name}">\n<header><a class="brand" href="/ui/">mcpwall</a><nav>{nav}</nav>'
            + f'<span id="live-state" class="live off" title="live updates">offline</span>{out}</header>\n'
            + f'<main>{_BODIES[name]}</main>\n</body>\n</html>\n')


def login_page(error: str | None = None) -> str:
    message = f'<p class="error">{escape(error)}</p>' if error else ""
    return (_HEAD.format(title="Log in", version=escape(__version__), extra="")
            + '<body class="login"><main><form method="post" action="/ui/login" class="login-form">'
            + '<h1>mcpwall</h1><p>Paste the gateway token (<code>~/.mcpwall/run/gateway.token</code>, or '
            + '<code>$MCPWALL_TOKEN</code>).</p>' + message
            + '<label>Token <input type="password" name="token" autocomplete="current-password" required autofocus>'
            + '</label><button type="submit">Log in</button></form></main></body></html>\n')


__all__ = ["CSP", "PAGES", "PATHS", "SECURITY_HEADERS", "login_page", "page"]
