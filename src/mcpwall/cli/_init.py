"""`mcpwall init` (scan, policy, route every client through mcpwall) and `mcpwall uninstall`.

`init` shows the risk table, writes `<home>/policy.yaml` (mode from
`--policy`, default audit) and `<home>/risk-report.md`, then, with consent
(`--yes`, or a yes at the prompt), rewrites each client config: stdio servers
run through `mcpwall wrap`, remote servers through the gateway, each client
with a named token of its own (`<home>/run/tokens/<client>.token`: it calls
tools, and cannot approve, administer or read the ledger; the gateway's token
is never written into a client config). A file that then holds a token is
written 0600. Every file is backed up first; `uninstall` puts each back byte for byte, refusing files
changed since (unless `--force`). `--dry-run` shows the plan and writes
nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from mcpwall.cli._common import home_option, json_option, print_json, resolve_home
from mcpwall.cli._report import print_risk_table, run_scan, scan_options


def _home_arg(home: Path) -> str | None:
    """Pass --home to wrap unless it is the default a client-launched process would use anyway."""
    default = Path.home() / ".mcpwall"
    return None if home.absolute() == default.absolute() else str(home.absolute())


def _show_plan(console: Any, p: Any, scrub: Any) -> None:
    from rich.text import Text

    for fp in p.files:
        console.print(Text(scrub(f"{fp.client}: {fp.path}"), style="bold"), soft_wrap=True)
        if fp.error:
            console.print(Text(scrub(f"  not rewritten: {fp.error}"), style="yellow"), soft_wrap=True)
            continue
        for c in fp.changes:
            how = {"wrap": "mcpwall wrap", "retoken": "its own token instead of the gateway's"}.get(
                c.kind, f"the gateway (/mcp/{c.name}, with its own token)")
            console.print(Text(scrub(f"  {c.entry.name} -> {how}")), soft_wrap=True)
    for entry, reason in p.skipped:
        console.print(Text(scrub(f"  skipped {entry.client} {entry.name}: {reason}"), style="dim"), soft_wrap=True)


def _secrets_to_store(home: Path, remote: dict[str, Any]) -> dict[str, Any]:
    """The remote servers as policy.yaml gets them: the credentials found in their headers (an
    Authorization header, an API key) move into the gateway's encrypted upstream token store as the
    server's static grant, which the gateway sends for every principal; policy.yaml keeps the rest."""
    from mcpwall.discovery._secrets import is_inline_secret
    from mcpwall.oauth import SERVICE, Grant, TokenStore

    store: TokenStore | None = None
    out: dict[str, Any] = {}
    for name, spec in remote.items():
        headers = dict(spec.get("headers") or {})
        secret = {k: v for k, v in headers.items()
                  if k.lower() == "authorization" or is_inline_secret(k, str(v))}
        if not secret:
            out[name] = spec
            continue
        store = store or TokenStore(home)
        store.put(name, SERVICE, Grant(access_token="", kind="static", headers={k: str(v) for k, v in secret.items()}))
        kept = {k: v for k, v in headers.items() if k not in secret}
        out[name] = {**{k: v for k, v in spec.items() if k != "headers"}, **({"headers": kept} if kept else {})}
    return out


def _oauth_candidates(remote: dict[str, Any], rewritten: list[dict[str, Any]]) -> list[str]:
    """Remote servers now routed through the gateway with no static credential of their own: those
    that answer 401 need `mcpwall login NAME` (the gateway's OAuth client, mcpwall.oauth)."""
    routed = {n for item in rewritten for n in item["servers"]}
    return sorted(n for n, spec in remote.items() if n in routed
                  and not any(k.lower() == "authorization" for k in (spec.get("headers") or {})))


def _remote_hosts(result: Any) -> list[str]:
    """Hosts of the remote servers found (not the gateway's own loopback URLs)."""
    from urllib.parse import urlsplit

    hosts: list[str] = []
    for e in result.entries:
        if e.url and not e.via_gateway:
            try:
                host = (urlsplit(e.url).hostname or "").lower()
            except ValueError:
                continue
            if host and host not in hosts:
                hosts.append(host)
    return hosts


def _make_private(console: Any, path: Path) -> None:
    """A policy file others can read loses those bits: it may hold upstream headers, webhook URLs, env."""
    import os
    import stat

    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
        if mode & 0o077:
            os.chmod(path, mode & 0o700)
            console.print(f"Made {path} private (mode {oct(mode & 0o700)[2:]}, was {oct(mode)[2:]}): it may hold "
                          "credentials", soft_wrap=True, markup=False)
    except OSError:
        pass


def kept_policy_note(path: Path, requested: str) -> str:
    """What keeping a policy.yaml that init did not write means for `--policy REQUESTED`."""
    from mcpwall.errors import MCPWallError
    from mcpwall.policy import load_policy

    try:
        kept = load_policy(path).mode
    except MCPWallError as exc:
        return (f"Keeping your {path} (init did not write it), but it does not load: {exc}. mcpwall refuses to start "
                "on it until it is fixed; --overwrite-policy replaces it (your file is not backed up).")
    head = f"Keeping your {path} ({kept} mode; init did not write it, so --policy {requested} did not change it)."
    if kept == requested:
        return head + " --overwrite-policy replaces it."
    means = ("every call through mcpwall, wrapped servers included, is decided by its rules and a call they deny "
             "is blocked, not only recorded" if kept == "enforce" else
             "nothing is blocked: calls its rules deny are only recorded")
    return (f"{head} That means {means}. To get a {requested}-mode policy, set `mode: {requested}` in it, or run "
            f"init again with --overwrite-policy, which replaces it (your file is not backed up).")


@click.command()
@click.option("--policy", "mode", type=click.Choice(["audit", "enforce"]), default="audit", show_default=True,
              help="Mode of the policy written: audit records what enforce would block.")
@click.option("--yes", "-y", is_flag=True, help="Rewrite the client configs without asking.")
@click.option("--dry-run", is_flag=True, help="Show what would change and write nothing.")
@click.option("--gateway-url", default="http://127.0.0.1:9420", show_default=True,
              help="Where `mcpwall proxy` listens; remote servers are pointed at <url>/mcp/<name>.")
@click.option("--mcpwall", "mcpwall_path", default=None,
              help="The mcpwall executable the clients should launch (default: this one).")
@click.option("--overwrite-policy", is_flag=True, help="Replace a policy.yaml that init did not write.")
@scan_options
@json_option
@home_option
def init(mode: str, yes: bool, dry_run: bool, gateway_url: str, mcpwall_path: str | None, overwrite_policy: bool,
         scan_home: Path | None, platform: str | None, projects: tuple[Path, ...], as_json: bool,
         home: Path | None) -> None:
    """Scan, write policy.yaml, and route every client's MCP servers through mcpwall."""
    from rich.console import Console
    from rich.text import Text

    from mcpwall.discovery import (
        apply_init,
        plan_init,
        policy_text,
        render_markdown,
        report_data,
        scrubber_for,
    )
    from mcpwall.discovery._backup import write_atomic
    from mcpwall.discovery._clienttokens import admin_tokens, identity_for
    from mcpwall.discovery._clienttokens import issue as issue_tokens
    from mcpwall.discovery._install import choose_mcpwall
    from mcpwall.discovery._policyseed import policy_state, previous_seed, write_policy

    state_home = resolve_home(home)
    console = Console(highlight=False, stderr=as_json)
    result = run_scan(scan_home, platform, projects)
    data = report_data(result)
    scrub = scrubber_for(result)
    print_risk_table(console, data, scrub)
    exe, launcher_note = (mcpwall_path, None) if mcpwall_path else choose_mcpwall()
    if launcher_note:
        console.print(Text(f"Warning: {launcher_note}", style="yellow"), soft_wrap=True)
    state = policy_state(state_home)
    own_policy = state in ("absent", "ours") or overwrite_policy
    kept_note = None if own_policy else kept_policy_note(state_home / "policy.yaml", mode)
    if kept_note:  # before the prompt: it is what the servers about to be wrapped will run under
        console.print(kept_note, soft_wrap=True, markup=False)
    kwargs: dict[str, Any] = {"exe": exe, "gateway": gateway_url, "home_arg": _home_arg(state_home),
                              "route_remote": own_policy, "admin_tokens": admin_tokens(state_home)}
    p = plan_init(result, state_home, **kwargs)
    consent = yes
    if p.changes and not yes and not dry_run and not as_json:
        _show_plan(console, p, scrub)
        try:
            consent = click.confirm(f"Rewrite {len(p.changes)} server entr{'y' if len(p.changes) == 1 else 'ies'} in "
                                    f"{sum(1 for f in p.files if not f.error)} file(s)?", default=False)
        except click.Abort:
            consent = False
    needing = {f.client for f in p.files if not f.error and any(c.kind != "wrap" for c in f.changes)}
    tokens: dict[str, str] = {}
    if consent and needing and not dry_run:
        p = plan_init(result, state_home, tokens=issue_tokens(state_home, needing), **kwargs)
        tokens = {c: str(state_home / "run" / "tokens" / f"{identity_for(c)}.token") for c in sorted(needing)}
    summary: dict[str, Any] = {"dryRun": dry_run, "mode": mode, "policy": None, "report": None, "rewritten": [],
                               "tokens": tokens, "keptPolicy": kept_note,
                               "errors": [], "skipped": [{"client": e.client, "name": e.name, "path": str(e.file),
                                                          "reason": r} for e, r in p.skipped]}
    if dry_run:
        _show_plan(console, p, scrub)
        summary["planned"] = [{"client": f.client, "path": str(f.path), "servers": [c.name for c in f.changes],
                               "error": f.error or None} for f in p.files]
        console.print("Dry run: nothing written.")
    else:
        if own_policy:
            servers, hosts = previous_seed(state_home) if state == "ours" else ({}, [])
            servers.update(_secrets_to_store(state_home, p.remote) if consent else {})
            hosts = list(dict.fromkeys(hosts + _remote_hosts(result)))
            summary["policy"] = str(write_policy(state_home, policy_text(mode, hosts, servers, len(result.servers))))
            console.print(f"Wrote policy ({mode} mode) to {summary['policy']}", soft_wrap=True, markup=False)
        else:
            _make_private(console, state_home / "policy.yaml")
        report_path = state_home / "risk-report.md"
        write_atomic(report_path, render_markdown(data, scrub).encode("utf-8"), 0o600)
        summary["report"] = str(report_path)
        console.print(f"Wrote risk report to {report_path}", soft_wrap=True, markup=False)
        if consent:
            for a in apply_init(p):
                item = {"client": a.client, "path": str(a.path), "servers": a.servers}
                if a.error:
                    summary["errors"].append({**item, "error": a.error})
                    console.print(Text(scrub(f"! {a.path}: {a.error}"), style="red"), soft_wrap=True)
                elif a.skipped:
                    summary["skipped"].append({**item, "reason": a.skipped})
                    console.print(Text(scrub(f"! not rewritten {a.path}: {a.skipped}"), style="yellow"), soft_wrap=True)
                else:
                    summary["rewritten"].append(item)
                    console.print(Text(scrub(f"Rewrote {a.path} ({', '.join(a.servers)})"), style="green"), soft_wrap=True)
            for entry, reason in p.skipped:
                if not entry.guarded:
                    console.print(Text(scrub(f"  skipped {entry.client} {entry.name}: {reason}"), style="dim"),
                                  soft_wrap=True)
            if summary["rewritten"]:
                console.print(f"Backups kept in {state_home / 'init'}; `mcpwall uninstall` restores them. Restart "
                              "the clients, and run `mcpwall proxy` for servers routed through the gateway.",
                              soft_wrap=True, markup=False)
            login = _oauth_candidates(p.remote, summary["rewritten"])
            if login:
                summary["login"] = login
                console.print("Remote servers that sign in with OAuth need the gateway's own login once (docs/AUTH.md): "
                              + ", ".join(f"`mcpwall login {n}`" for n in login), soft_wrap=True, markup=False)
        elif p.changes:
            console.print("Client configs left unchanged; run `mcpwall init --yes` to rewrite them.", soft_wrap=True)
        elif not p.files:
            console.print("Every server is already routed through mcpwall (or none was found).")
    if as_json:
        import json

        print_json(json.loads(scrub(json.dumps(summary))))
    if summary["errors"]:
        raise click.exceptions.Exit(1)


@click.command()
@click.option("--force", is_flag=True, help="Restore even files changed since init (those edits are lost).")
@click.option("--dry-run", is_flag=True, help="Show what would be restored and write nothing.")
@json_option
@home_option
def uninstall(force: bool, dry_run: bool, as_json: bool, home: Path | None) -> None:
    """Restore every client config that `mcpwall init` rewrote, byte for byte."""
    from mcpwall.discovery import uninstall as restore

    results = restore(resolve_home(home), force=force, dry_run=dry_run)
    if as_json:
        print_json([{"path": r.path, "client": r.client, "action": r.action, "reason": r.reason or None}
                    for r in results])
    else:
        if not results:
            click.echo("Nothing to restore: init has not rewritten any client config here.")
        for r in results:
            suffix = f" ({r.reason})" if r.reason else ""
            click.echo(f"{r.action}: {r.path}{suffix}", err=r.action in ("refused", "missing-backup"))
        if any(r.action == "refused" for r in results):
            click.echo("Refused files were left as they are; `mcpwall uninstall --force` restores them anyway.",
                       err=True)
    if any(r.action in ("refused", "missing-backup") for r in results):
        raise click.exceptions.Exit(1)


__all__ = ["init", "uninstall"]
