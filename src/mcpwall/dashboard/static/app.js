/* mcpwall dashboard. No framework, no CDN: plain DOM and fetch.
 * Everything that comes from the API is written with textContent (tool names and
 * arguments come from agents); state changes send the page's CSRF token. */
"use strict";
(() => {
  const csrf = (document.querySelector('meta[name="csrf-token"]') || {}).content || "";
  const page = document.body.dataset.page;
  const DECISIONS = ["allow", "deny", "ask", "warn", "redact", "rewrite", "error", "invalid", "timeout", "failed",
    "rate_limited", "circuit_open", "rejected", "cancelled"];

  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = String(value);
      else if (key === "on") for (const [ev, fn] of Object.entries(value)) node.addEventListener(ev, fn);
      else if (key.startsWith("data-") || ["title", "type", "name", "value", "href", "colspan", "aria-label",
        "placeholder", "min", "max"].includes(key)) node.setAttribute(key, String(value));
    }
    for (const child of children.flat()) {
      if (child === undefined || child === null || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  async function api(path, options = {}) {
    const init = { method: options.method || "GET", credentials: "same-origin", headers: {} };
    if (init.method !== "GET") {
      init.headers["X-CSRF-Token"] = csrf;
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(options.body || {});
    }
    const response = await fetch(path, init);
    if (response.status === 401) {
      window.location.assign("/ui/login");
      throw new Error("logged out");
    }
    let value = null;
    try { value = await response.json(); } catch (e) { value = null; }
    if (!response.ok) throw new Error((value && value.error) || ("HTTP " + response.status));
    return value;
  }

  const pad = (n) => String(n).padStart(2, "0");
  function clock(epoch) {
    if (!epoch) return "–";
    const d = new Date(epoch * 1000);
    return pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds());
  }
  function when(epoch) {
    if (!epoch) return "–";
    const d = new Date(epoch * 1000);
    return d.toLocaleDateString() + " " + clock(epoch);
  }
  function ms(value) { return value === null || value === undefined ? "–" : (value < 10 ? value.toFixed(2) : Math.round(value)); }
  function inSeconds(epoch) {
    const s = Math.round(epoch - Date.now() / 1000);
    return s <= 0 ? "now" : (s < 120 ? s + " s" : Math.round(s / 60) + " min");
  }
  function decision(d) {
    const known = DECISIONS.includes(d) ? d : "other";
    return el("span", { class: "decision d-" + known, text: d || "?" });
  }
  function chips(list, kind) { return (list || []).map((x) => el("span", { class: "chip " + kind, text: x })); }
  function target(row) { return el("span", { class: "target" }, el("b", { text: row.server || "–" }), " / ", row.tool || "–"); }
  function short(text, n) { text = text || ""; return text.length > n ? text.slice(0, n - 1) + "…" : text; }

  // A call's time: the total, split into the gateway's, the server's and any wait for a person.
  function took(row) {
    const parts = ["in the gateway " + ms(row.gateway_ms) + " ms"];
    if (row.upstream_ms !== null && row.upstream_ms !== undefined) parts.push("server " + ms(row.upstream_ms) + " ms");
    if (row.waited_ms) parts.push("waiting for a person " + ms(row.waited_ms) + " ms");
    const span = el("span", { class: "took", title: "total " + ms(row.duration_ms) + " ms: " + parts.join(", "),
      text: ms(row.duration_ms) });
    if (!row.waited_ms) return span;
    return [span, el("span", { class: "chip waited", text: Math.round(row.waited_ms / 100) / 10 + " s asking" })];
  }

  function callRow(row, full) {
    const tr = el("tr", { "data-seq": row.seq, "data-decision": row.decision, class: "row-" + (row.decision || "") },
      el("td", { class: "t", title: row.ts, text: clock(row.time) }),
      el("td", {}, target(row)),
      el("td", {}, decision(row.decision), row.redacted ? el("span", { class: "chip redacted", text: "redacted" }) : null),
      el("td", { class: "rules" }, chips(row.rule_ids, "rule")),
      el("td", { class: "badges" }, chips(row.owasp, "owasp"), chips(row.compliance, "compliance")),
      el("td", { class: "num" }, took(row)),
      el("td", { text: short(row.client || row.agent || "", 24), title: (row.client || "") + " " + (row.agent || "") }));
    if (full) {
      const why = (row.reasons || []).join("; ") || row.error || "";
      tr.append(el("td", { class: "detail" },
        row.preview ? el("div", { class: "args", title: row.preview, text: short(row.preview, 140) }) : null,
        why ? el("div", { class: "why", title: why, text: short(why, 140) }) : null));
    }
    return tr;
  }

  function showEmpty(id, empty) { const node = document.getElementById(id); if (node) node.hidden = !empty; }

  // ------------------------------------------------------------------ live updates (SSE)
  const listeners = { call: [], stats: [], approvals: [] };
  function on(kind, fn) { listeners[kind].push(fn); }
  function connect() {
    const state = document.getElementById("live-state");
    const source = new EventSource("/api/events");
    for (const kind of Object.keys(listeners)) {
      source.addEventListener(kind, (event) => {
        let data = null;
        try { data = JSON.parse(event.data); } catch (e) { return; }
        for (const fn of listeners[kind]) fn(data);
      });
    }
    source.onopen = () => { if (state) { state.textContent = "live"; state.className = "live on"; } };
    source.onerror = () => { if (state) { state.textContent = "reconnecting"; state.className = "live off"; } };
    window.addEventListener("beforeunload", () => source.close());
  }

  // ------------------------------------------------------------------ overview
  let lastSeries = null;
  window.addEventListener("resize", () => { if (lastSeries) renderChart(lastSeries); });

  function renderStats(s) {
    for (const card of document.querySelectorAll("[data-stat]")) {
      const value = s[card.dataset.stat];
      const text = card.dataset.stat.endsWith("_ms") ? ms(value) : (value === null || value === undefined ? "–" : String(value));
      card.querySelector(".value").textContent = text;
    }
    renderChart(s.series);
  }

  function renderChart(series) {
    const host = document.getElementById("chart");
    if (!host || !series) return;
    lastSeries = series;
    const NS = "http://www.w3.org/2000/svg";
    const n = series.calls.length, W = Math.max(320, host.clientWidth || 720), H = 160, left = 34, bottom = 18, top = 8;
    const peak = Math.max(1, ...series.calls);
    const bw = (W - left) / n;
    const svg = document.createElementNS(NS, "svg");
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    const add = (tag, attrs, text) => {
      const node = document.createElementNS(NS, tag);
      for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
      if (text !== undefined) node.textContent = text;
      svg.append(node);
      return node;
    };
    const y = (v) => top + (H - bottom - top) * (1 - v / peak);
    add("line", { x1: left, x2: W, y1: H - bottom, y2: H - bottom, class: "axis" });
    add("text", { x: left - 4, y: top + 8, class: "tick", "text-anchor": "end" }, String(peak));
    add("text", { x: left - 4, y: H - bottom, class: "tick", "text-anchor": "end" }, "0");
    for (let i = 0; i < n; i++) {
      const x = left + i * bw;
      const c = series.calls[i], b = series.blocks[i];
      if (c) add("rect", { x: x + 1, y: y(c), width: Math.max(1, bw - 2), height: H - bottom - y(c), class: "bar calls" }).append(
        Object.assign(document.createElementNS(NS, "title"), { textContent: clock(series.start + i * series.bucket_s) + ": " + c + " calls, " + b + " blocked" }));
      if (b) add("rect", { x: x + 1, y: y(b), width: Math.max(1, bw - 2), height: H - bottom - y(b), class: "bar blocks" });
      if (i % 15 === 0) add("text", { x: x, y: H - 4, class: "tick" }, clock(series.start + i * series.bucket_s).slice(0, 5));
    }
    host.replaceChildren(svg);
  }

  async function overview() {
    const body = document.querySelector("#live tbody");
    const seen = new Set();
    const put = (row, atTop) => {
      if (seen.has(row.seq)) return;
      seen.add(row.seq);
      const tr = callRow(row, false);
      if (atTop) { body.prepend(tr); tr.classList.add("fresh"); } else body.append(tr);
      while (body.rows.length > 100) body.deleteRow(body.rows.length - 1);
      showEmpty("live-empty", false);
    };
    on("stats", renderStats);
    on("call", (row) => put(row, true));
    const [stats, calls] = await Promise.all([api("/api/stats"), api("/api/calls?limit=30")]);
    renderStats(stats);
    statusPanels().catch(() => {});
    for (const row of calls.rows) put(row, false);
    showEmpty("live-empty", body.rows.length === 0);
  }

  // Policy in force and ledger integrity, below the cards.
  async function statusPanels() {
    const button = document.getElementById("verify");
    let timer = null;
    const text = (id, value, hidden) => { const n = document.getElementById(id); n.textContent = value || ""; n.hidden = !!hidden; };
    function renderPolicy(p) {
      if (!p) { text("policy-line", "No policy file: this dashboard shows the gateway's calls only."); return; }
      text("policy-line", "Revision " + p.revision + " · " + p.mode + " · " + p.rules + " rules · loaded " +
        when(p.loaded_at) + " from " + p.path + (p.reloads ? " · " + p.reloads + " reloads" : ""));
      text("policy-refused", p.last_error ? "Last reload refused, revision " + p.revision + " stays in force: " +
        p.last_error : "", !p.last_error);
      const held = p.held_reload;
      text("policy-held", held ? "Reload held since " + when(held.since) + ": " + (held.files || []).join(", ") +
        " changed while " + held.call + " could have written it. Run `mcpwall policy reload` to load it." : "", !held);
    }
    function renderLedger(l) {
      const panel = document.getElementById("ledger-status");
      if (!l) {
        panel.dataset.state = "none";
        text("ledger-line", "No ledger: calls are kept in memory only, so there is no chain to verify.");
        return;
      }
      button.hidden = false;
      const v = l.verify;
      text("ledger-head", "Head now " + l.head.head + " (keep it: `mcpwall verify-audit --expect-head " + l.head.head + "`)");
      if (!v && !l.verifying) {
        panel.dataset.state = "unchecked";
        text("ledger-line", "Not checked yet: " + l.head.seq + " rows; Verify now reads them all.");
      } else if (!v) { panel.dataset.state = "checking"; text("ledger-line", "Checking the chain…"); }
      else if (v.ok) {
        panel.dataset.state = "ok";
        text("ledger-line", "Intact: " + v.rows + " rows verified up to " + (v.head || "row " + v.last_seq) +
          (v.checkpoint_seq ? " · checkpoint at row " + v.checkpoint_seq : " · no checkpoint yet") +
          (v.anchor_seq !== null && v.anchor_seq !== undefined ? " · anchor at row " + v.anchor_seq : "") +
          " · checked " + when(v.checked_at) + ((v.warnings || []).length ? " · " + v.warnings.join("; ") : ""));
      } else {
        panel.dataset.state = "broken";
        text("ledger-line", "BROKEN" + (v.first_bad_seq ? " at row " + v.first_bad_seq : "") + ": " + v.problem +
          " · checked " + when(v.checked_at));
      }
      clearTimeout(timer);
      if (l.verifying) timer = setTimeout(() => refresh().catch(() => {}), 1000);
    }
    async function refresh() {
      const s = await api("/api/status");
      renderPolicy(s.policy);
      renderLedger(s.ledger);
    }
    button.addEventListener("click", async () => {
      button.disabled = true;
      text("ledger-line", "Checking the chain…");
      try { await api("/api/ledger/verify", { method: "POST" }); await refresh(); }
      catch (e) { text("ledger-line", "Cannot check: " + e.message); }
      finally { button.disabled = false; }
    });
    await refresh();
    setInterval(() => refresh().catch(() => {}), 15000);
  }

  // ------------------------------------------------------------------ calls
  async function calls() {
    const form = document.getElementById("filters");
    const body = document.querySelector("#calls tbody");
    const more = document.getElementById("more");
    let cursor = null, filters = {};
    const globMatch = (pattern, value) => !pattern || new RegExp("^" + pattern.replace(/[.+^${}()|[\]\\]/g, "\\$&")
      .replace(/\*/g, ".*").replace(/\?/g, ".") + "$").test(value || "");
    const matches = (row) => globMatch(filters.server, row.server) && globMatch(filters.tool, row.tool) &&
      globMatch(filters.client, row.client) && (!filters.decision || filters.decision === row.decision) && !filters.since;
    async function load(append) {
      const q = new URLSearchParams({ limit: "50" });
      for (const [k, v] of Object.entries(filters)) if (v) q.set(k, v);
      if (append && cursor) q.set("cursor", cursor);
      try {
        const page = await api("/api/calls?" + q.toString());
        if (!append) body.replaceChildren();
        for (const row of page.rows) body.append(callRow(row, true));
        cursor = page.next_cursor;
        more.hidden = !cursor;
        showEmpty("calls-empty", body.rows.length === 0);
      } catch (e) {
        body.replaceChildren(el("tr", {}, el("td", { colspan: 8, class: "error", text: e.message })));
      }
    }
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      filters = Object.fromEntries(new FormData(form).entries());
      load(false);
    });
    form.addEventListener("reset", () => { filters = {}; setTimeout(() => load(false), 0); });
    more.addEventListener("click", () => load(true));
    on("call", (row) => {
      if (!matches(row) || body.querySelector('tr[data-seq="' + row.seq + '"]')) return;
      const tr = callRow(row, true);
      tr.classList.add("fresh");
      body.prepend(tr);
      showEmpty("calls-empty", false);
    });
    await load(false);
  }

  // ------------------------------------------------------------------ approvals
  async function approvals() {
    const queue = document.getElementById("pending");
    const grants = document.querySelector("#grants tbody");
    const history = document.querySelector("#history tbody");
    const note = (card, text, bad) => { const p = card.querySelector(".note"); p.textContent = text; p.className = "note" + (bad ? " error" : ""); };

    function card(a) {
      const minutes = el("select", { name: "minutes", "aria-label": "approve similar for" },
        el("option", { value: "15", text: "15 min" }), el("option", { value: "60", text: "1 hour" }),
        el("option", { value: "480", text: "8 hours" }));
      const reason = el("input", { name: "reason", placeholder: "reason (optional)" });
      const act = async (verb, body) => {
        for (const b of node.querySelectorAll("button")) b.disabled = true;
        try {
          await api("/api/approvals/" + encodeURIComponent(a.id) + "/" + verb, { method: "POST", body });
          note(node, verb === "deny" ? "denied" : "approved", false);
          node.classList.add("answered");
          setTimeout(refresh, 300);
        } catch (e) {
          note(node, e.message, true);
          for (const b of node.querySelectorAll("button")) b.disabled = false;
        }
      };
      const node = el("article", { class: "ask", "data-id": a.id },
        el("header", {}, target(a), el("span", { class: "id", text: a.id }),
          el("span", { class: "expires", "data-expires": a.expires, text: "expires in " + inSeconds(a.expires) })),
        el("p", { class: "who", text: "agent " + (a.agent || "–") + " · client " + (a.client || "–") +
          " · rules " + ((a.rule_ids || []).join(", ") || "–") }),
        el("ul", { class: "reasons" }, (a.reasons || []).map((r) => el("li", { text: r }))),
        el("pre", { class: "args", text: JSON.stringify(a.arguments, null, 2) }),
        el("p", { class: "hash", text: "call " + String(a.call_hash || "").slice(0, 16) + "…" }),
        el("div", { class: "actions" },
          el("button", { class: "approve", "data-action": "approve", "data-id": a.id, text: "Approve once",
            on: { click: () => act("approve", { call_hash: a.call_hash }) } }),
          el("button", { class: "quiet", "data-action": "approve-similar", "data-id": a.id, text: "Approve similar for",
            on: { click: () => act("approve", { call_hash: a.call_hash, similar_minutes: Number(minutes.value) }) } }),
          minutes,
          reason,
          el("button", { class: "deny", "data-action": "deny", "data-id": a.id, text: "Deny",
            on: { click: () => act("deny", { reason: reason.value || undefined }) } })),
        el("p", { class: "note" }));
      return node;
    }

    async function refresh() {
      const [pending, active, done] = await Promise.all([api("/api/approvals"), api("/api/grants"),
        api("/api/approvals/history")]);
      const open = new Set(pending.map((a) => a.id));
      for (const node of queue.querySelectorAll("article.ask")) {
        if (!open.has(node.dataset.id) && !node.classList.contains("answered")) node.remove();
        else if (!open.has(node.dataset.id)) setTimeout(() => node.remove(), 1500);
      }
      for (const a of pending) if (!queue.querySelector('article[data-id="' + a.id + '"]')) queue.append(card(a));
      showEmpty("pending-empty", pending.length === 0);
      grants.replaceChildren(...active.map((g) => el("tr", { "data-id": g.id },
        el("td", { text: g.id }), el("td", {}, target(g)), el("td", { text: g.agent || "–" }),
        el("td", { text: (g.arg_keys || []).join(", ") || "(none)" }), el("td", {}, chips(g.rule_ids, "rule")),
        el("td", { text: inSeconds(g.expires) }), el("td", { class: "num", text: g.uses }),
        el("td", {}, el("button", { class: "quiet", "data-action": "revoke", text: "Revoke", on: { click: async () => {
          await api("/api/grants/" + encodeURIComponent(g.id) + "/revoke", { method: "POST" });
          refresh();
        } } })))));
      showEmpty("grants-empty", active.length === 0);
      history.replaceChildren(...done.slice(0, 50).map((a) => el("tr", {},
        el("td", { text: a.id }), el("td", {}, target(a)), el("td", {}, decision(a.status === "approved" ? "allow" : "deny"), " ", a.status),
        el("td", { text: a.answered_via || "–" }), el("td", { text: when(a.answered_at) }),
        el("td", { text: a.reason || "" }))));
      showEmpty("history-empty", done.length === 0);
    }
    setInterval(() => {
      for (const node of queue.querySelectorAll(".expires[data-expires]")) {
        node.textContent = "expires in " + inSeconds(Number(node.dataset.expires));
      }
    }, 1000);
    on("approvals", () => refresh().catch(() => {}));
    await refresh();
    setInterval(() => refresh().catch(() => {}), 10000);
  }

  // ------------------------------------------------------------------ simulate
  async function simulate() {
    const form = document.getElementById("simulate");
    const select = document.getElementById("sim-server");
    const error = document.getElementById("sim-error");
    try {
      const s = await api("/api/servers");
      for (const server of s.servers) select.append(el("option", { value: server.name, text: server.name }));
    } catch (e) { /* the form works without the list */ }
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const data = Object.fromEntries(new FormData(form).entries());
      error.hidden = true;
      let args;
      try { args = JSON.parse(data.args || "{}"); } catch (e) {
        error.textContent = "arguments: " + e.message; error.hidden = false; return;
      }
      try {
        const r = await api("/api/simulate", { method: "POST", body: { server: data.server, tool: data.tool, args,
          client: data.client, agent: data.agent } });
        document.getElementById("sim-action").replaceChildren(decision(r.action));
        const rules = document.getElementById("sim-rules");
        rules.replaceChildren(...chips(r.rule_ids, "rule"), ...chips(r.owasp, "owasp"), ...chips(r.compliance, "compliance"));
        document.getElementById("sim-reasons").replaceChildren(...(r.reasons || []).map((x) => el("li", { text: x })));
        document.querySelector("#sim-trace tbody").replaceChildren(...(r.trace || []).map((t) =>
          el("tr", { class: t.matched ? "matched" : "" }, el("td", { text: t.rule_id }), el("td", { text: t.layer }),
            el("td", {}, decision(t.action)), el("td", { text: t.status }), el("td", { text: t.detail }))));
        document.getElementById("sim-result").hidden = false;
      } catch (e) { error.textContent = e.message; error.hidden = false; }
    });
  }

  // ------------------------------------------------------------------ servers
  // an upstream's OAuth state (docs/AUTH.md), and the command that logs the gateway in when one is needed
  const loginNotes = {};
  function authState(a, name) {
    if (!a || a.state === "none") return "";
    const text = a.login ? (a.step_up ? a.state : "login required") + ": run " + a.login : a.state;
    const box = el("div", { class: a.login ? "error auth-state" : "hint auth-state", text: text });
    if (!a.login) return box;
    const note = el("div", { class: "note", "data-login-note": name, text: loginNotes[name] || "" });
    const button = el("button", { class: "approve", "data-action": "upstream-login", text: "Log in",
      on: { click: async () => {
        button.disabled = true;
        try {
          const r = await api("/api/servers/" + encodeURIComponent(name) + "/login", { method: "POST", body: {} });
          const link = el("a", { href: r.authorize, "data-action": "authorize", text: "Open the authorization page" });
          link.target = "_blank";
          link.rel = "noopener noreferrer";
          loginNotes[name] = "log in on the authorization page: this page updates when the gateway holds the grant";
          note.replaceChildren(link, " ", loginNotes[name]);
          window.open(r.authorize, "_blank", "noopener");
          watchLogin(name);
        } catch (e) { note.textContent = e.message; note.className = "note error"; button.disabled = false; }
      } } });
    return el("div", {}, box, el("div", { class: "actions" }, button), note);
  }

  // the login the gateway runs ends when the authorization server redirects back to it
  async function watchLogin(name) {
    for (let i = 0; i < 200; i++) {
      await new Promise((done) => setTimeout(done, 1500));
      const s = await api("/api/servers/" + encodeURIComponent(name) + "/login");
      if (s.state === "authorized" || s.state.startsWith("login failed")) {
        loginNotes[name] = s.state === "authorized" ? "" : s.state;
        await servers();
        return;
      }
    }
  }

  async function servers() {
    const body = document.querySelector("#servers tbody");
    const s = await api("/api/servers");
    body.replaceChildren(...s.servers.map((x) => {
      const risk = x.risk || {};
      const pins = x.pins || {};
      const changes = (pins.changes || []).map((c) => c.kind + " " + c.name + " (" + c.change + ")").join(", ");
      return el("tr", { "data-server": x.name },
        el("td", {}, el("b", { text: x.name })),
        el("td", {}, el("span", { class: "state s-" + x.state, text: x.state }),
          authState(x.authorization, x.name)),
        el("td", { text: x.circuit || "–" }),
        el("td", {}, el("span", { class: "risk r-" + (risk.level || "unknown"), text: (risk.level || "unknown") +
          (risk.score !== undefined ? " (" + risk.score + ")" : "") }),
          " ", chips((risk.flags || []).map((f) => f.rule), "flag")),
        el("td", { class: "num", text: x.tools === null || x.tools === undefined ? "–" : x.tools }),
        el("td", { text: (pins.pinned || 0) + " pinned" + (pins.removed ? ", " + pins.removed + " removed" : "") }),
        el("td", { class: pins.pending ? "error" : "", text: pins.pending ? changes : "none" }));
    }));
    showEmpty("servers-empty", s.servers.length === 0);
    const pins = await api("/api/pins");
    const details = document.getElementById("server-details");
    details.replaceChildren(...s.servers.map((x) => serverDetail(x, pins.pins.filter((p) => p.server === x.name))));
  }

  function serverDetail(x, pins) {
    const pending = pins.filter((p) => p.state === "pending");
    const section = el("section", { class: "panel server", "data-server": x.name },
      el("h2", {}, el("span", { text: x.name }), el("span", { class: "hint", text: (x.tool_list || []).length +
        " tools" + (pending.length ? ", " + pending.length + " change(s) waiting for a person" : "") })));
    for (const p of pending) {
      const note = el("p", { class: "note" });
      const accept = el("button", { class: "approve", "data-action": "accept-pin", "data-name": p.name,
        text: "Accept this definition", on: { click: async () => {
          accept.disabled = true;
          try {
            await api("/api/pins/accept", { method: "POST", body: { server: p.server, kind: p.kind, name: p.name,
              hash: p.pending && p.pending.hash } });
            note.textContent = "accepted: the gateway holds " + p.name + " to this definition now";
            note.className = "note";
            setTimeout(() => servers().catch(() => {}), 600);
          } catch (e) { note.textContent = e.message; note.className = "note error"; accept.disabled = false; }
        } } });
      const change = (p.pending && p.pending.change) || "added";
      section.append(el("article", { class: "pin-change", "data-name": p.name, "data-kind": p.kind },
        el("header", {}, el("b", { text: p.kind + " " + p.name }), " ",
          el("span", { class: "chip flag", text: change + (p.pending && p.pending.of ? " from " + p.pending.of : "") }),
          el("span", { class: "hint", text: " seen " + when(p.pending && p.pending.seen_at) })),
        el("pre", { class: "diff" }, diffLines(p.diff || "(a new " + p.kind + ": nothing was pinned before)")),
        el("div", { class: "actions" }, accept), note));
    }
    const tools = x.tool_list || [];
    section.append(el("div", { class: "scroll" }, el("table", { class: "tools" },
      el("thead", {}, el("tr", {}, el("th", { text: "tool" }), el("th", { text: "pin" }), el("th", { text: "description" }))),
      el("tbody", {}, tools.map((t) => el("tr", { "data-tool": t.name },
        el("td", {}, el("b", { text: t.name })),
        el("td", {}, el("span", { class: "pin p-" + t.pin, text: t.pin })),
        el("td", { class: "desc", title: t.description || "", text: short(t.description || "", 160) })))))));
    if (!tools.length) section.append(el("p", { class: "empty", text: "No tools known yet." }));
    return section;
  }

  function diffLines(text) {
    return text.split("\n").map((line) => el("span", { class: line.startsWith("+") && !line.startsWith("+++") ? "add" :
      (line.startsWith("-") && !line.startsWith("---") ? "del" : ""), text: line || " " }));
  }

  // ------------------------------------------------------------------ timeline
  async function timeline() {
    const list = document.querySelector("#sessions tbody");
    const events = document.querySelector("#events tbody");
    const more = document.getElementById("events-more");
    let cursor = null, current = null;
    const counts = (c) => Object.entries(c || {}).sort((a, b) => b[1] - a[1]).map(([d, n]) => [decision(d), " " + n + " "]);
    async function open(sid, append) {
      const q = new URLSearchParams({ session: sid });
      if (append && cursor) q.set("cursor", cursor);
      const t = await api("/api/timeline?" + q.toString());
      if (!t.session) return;
      current = sid;
      const s = t.session;
      document.getElementById("session").hidden = false;
      document.getElementById("session-id").textContent = s.session_id;
      document.getElementById("session-who").textContent = ["client " + (s.client || "–"), "agent " + (s.agent || "–"),
        s.process ? "process " + s.process : "", s.peer ? "from " + s.peer : ""].filter(Boolean).join(" · ");
      document.getElementById("session-counts").replaceChildren(...counts(s.counts).flat(),
        "· " + when(s.first_time) + " → " + clock(s.last_time));
      if (!append) events.replaceChildren();
      for (const e of t.events) {
        const why = (e.reasons || []).join("; ") || e.error || "";
        events.append(el("tr", { "data-seq": e.seq, "data-decision": e.decision, class: "row-" + (e.decision || "") },
          el("td", { class: "num", text: "+" + e.elapsed_s.toFixed(3) }), el("td", { class: "t", title: e.ts, text: clock(e.time) }),
          el("td", { class: "num", text: e.seq }), el("td", { text: e.method || "" }),
          el("td", {}, e.tool || e.server ? target(e) : "–"), el("td", {}, decision(e.decision)),
          el("td", { class: "rules" }, chips(e.rule_ids, "rule")), el("td", { class: "num" }, took(e)),
          el("td", { class: "why", title: why, text: short(why, 140) })));
      }
      cursor = t.next_cursor;
      more.hidden = !cursor;
      for (const tr of list.rows) tr.classList.toggle("on", tr.dataset.session === sid);
      const url = new URL(window.location.href);
      url.searchParams.set("session", sid);
      window.history.replaceState(null, "", url.toString());
    }
    more.addEventListener("click", () => open(current, true));
    const found = await api("/api/sessions");
    list.replaceChildren(...found.sessions.map((s) => el("tr", { "data-session": s.session_id, class: "pick",
      on: { click: () => open(s.session_id, false).catch(() => {}) } },
      el("td", {}, el("a", { href: "?session=" + encodeURIComponent(s.session_id), class: "id", text: s.session_id.slice(0, 12),
        on: { click: (ev) => ev.preventDefault() } })),
      el("td", { text: s.client || "–" }), el("td", { text: s.agent || "–" }),
      el("td", { class: "t", title: s.first, text: clock(s.first_time) }),
      el("td", { class: "t", title: s.last, text: clock(s.last_time) }),
      el("td", { class: "num", text: s.events }), el("td", {}, counts(s.counts).flat()))));
    showEmpty("sessions-empty", found.sessions.length === 0);
    const wanted = new URLSearchParams(window.location.search).get("session");
    if (wanted) await open(wanted, false);
  }

  const logout = document.getElementById("logout");
  if (logout) logout.addEventListener("click", async () => {
    try { await api("/ui/logout", { method: "POST" }); } finally { window.location.assign("/ui/login"); }
  });

  const pages = { overview, calls, approvals, timeline, simulate, servers };
  if (pages[page]) {
    connect();
    pages[page]().catch((e) => {
      const main = document.querySelector("main");
      main.prepend(el("p", { class: "error", text: "Cannot load: " + e.message }));
    });
  }
})();
