"""`mcpwall simulate`: evaluate one call offline and show the rule trace."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import click
import orjson

from mcpwall.cli._common import home_option, json_option, load_checked_engine, policy_path_for, print_json
from mcpwall.policy import Call, Context, Decision, RuleTrace, evaluate, findings, prepare

_STYLE = {"allow": "green", "deny": "bold red", "warn": "yellow", "redact": "magenta",
          "ask": "cyan", "rewrite": "blue"}


def parse_json_object(text: str | None, what: str) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise click.BadParameter(f"not valid JSON: {exc}", param_hint=what) from exc
    if not isinstance(value, dict):
        raise click.BadParameter("must be a JSON object", param_hint=what)
    return value


def parse_now(text: str | None) -> datetime:
    if not text:
        return datetime.now().astimezone()
    try:
        when = datetime.fromisoformat(text)
    except ValueError as exc:
        raise click.BadParameter(f"not an ISO 8601 time: {text!r}", param_hint="--now") from exc
    return when if when.tzinfo else when.astimezone()


def _self_protection(home: Path | None, policy_file: Path | None, compiled: Any, call: Call,
                     decision: Decision) -> Decision:
    """The gateway's self-protection stage decides before the policy: the same answer here (issue 22)."""
    from types import SimpleNamespace

    from mcpwall._protected import protected_set
    from mcpwall.cli._common import resolve_home
    from mcpwall.security.selfguard import RULE_ID

    root = resolve_home(home)
    settings = SimpleNamespace(home=root, policy_path=policy_file, servers_files=[], token_file=None, extras={})
    guard = protected_set(root, compiled.source.files, dict(compiled.source.sections), settings)
    subject = call.arguments if call.method in ("tools/call", "prompts/get") else {"uri": call.name}
    finding = guard.check(subject, ())
    if finding is None:
        return decision
    step = RuleTrace(RULE_ID, "gateway", "deny", "matched", finding.reason)
    return Decision(action="deny", reasons=(finding.reason,), rule_ids=(RULE_ID,), mode=decision.mode,
                    enforced_action="deny", revision=decision.revision, timeout_ms=decision.timeout_ms,
                    trace=(step, *(decision.trace or ())))


@click.command()
@click.argument("tool")
@click.option("--server", "-s", default="", help="Server the tool belongs to.")
@click.option("--args", "args_json", default=None, help="Arguments as a JSON object.")
@click.option("--description", default="", help="The tool's description (command/process rules read it).")
@click.option("--client", default="", help="Client identity (clientIn conditions).")
@click.option("--agent", default="", help="Agent identity (agentIn conditions, RBAC).")
@click.option("--method", default="tools/call", show_default=True,
              help="MCP method: tools/call, resources/read (TOOL is the URI), prompts/get.")
@click.option("--policy", "policy_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Policy file (default: <home>/policy.yaml, else the built-in default).")
@click.option("--now", "now_text", default=None, help="Evaluate as of this ISO 8601 time.")
@click.option("--rate", default=1, show_default=True, help="Requests this client made in the last minute.")
@click.option("--verbose", "-v", is_flag=True, help="Show every rule: matched or not, and why.")
@json_option
@home_option
def simulate(tool: str, server: str, args_json: str | None, description: str, client: str, agent: str,
             method: str, policy_file: Path | None, now_text: str | None, rate: int, verbose: bool,
             as_json: bool, home: Path | None) -> None:
    """Decide one call against a policy without running anything."""
    arguments = parse_json_object(args_json, "--args")
    engine = load_checked_engine(policy_path_for(home, policy_file))
    call = Call(method=method, name=tool, arguments=arguments, server=server, description=description,
                client=client, agent=agent)
    facts = prepare(call)
    decision = evaluate(engine.compiled, facts, Context(now=parse_now(now_text), requests_last_minute=rate),
                        trace=True)
    decision = _self_protection(home, policy_file, engine.compiled, call, decision)
    found = findings(engine.compiled, facts, decision)
    if as_json:
        print_json({"tool": tool, "server": server, **decision.as_dict(with_trace=verbose), "findings": found})
        return
    from rich.console import Console  # only for the human-readable answer (start-up, issue 29)
    from rich.table import Table

    console = Console()
    style = _STYLE.get(decision.action, "bold")
    console.print(f"[bold]{server + '/' if server else ''}{tool}[/] -> [{style}]{decision.action.upper()}[/]"
                  + (f"  (enforce mode would {decision.enforced_action})"
                     if decision.enforced_action != decision.action else ""))
    for reason in decision.reasons:
        console.print(f"  - {reason}", markup=False, highlight=False)
    if decision.rule_ids:
        console.print(f"  rule ids: {', '.join(decision.rule_ids)}", markup=False, highlight=False)
    if decision.redacted_keys:
        console.print(f"  redacted: {', '.join(decision.redacted_keys)}", markup=False, highlight=False)
    for f in found:
        console.print(f"  finding [{f['severity']}] {f['rule_id']}: {f['target']} {f['evidence']!r} "
                      f"(argument {f['argument'] or '-'})", markup=False, highlight=False)
    console.print(f"  timeout: {decision.timeout_ms} ms   policy revision: {decision.revision}")
    if verbose and decision.trace is not None:
        table = Table(title="Rule trace", show_lines=False)
        for col in ("rule", "layer", "action", "status", "time window", "why"):
            table.add_column(col)
        for t in decision.trace:
            table.add_row(t.rule_id, t.layer, t.action,
                          f"[{'green' if t.matched else 'dim'}]{t.status}[/]", t.time_window or "-", t.detail)
        from mcpwall.cli._tables import print_whole

        print_whole(console, table)  # rule ids whole, in a pipe too (they were cut at 80 columns)
