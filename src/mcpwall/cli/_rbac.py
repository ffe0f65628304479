"""`mcpwall rbac-init`: write the casbin model and policy that the RBAC stage enforces.

The model is mcp-seatbelt's ACL model (subject, object, action; roles by
grouping; allow if some policy line allows), with patterns in objects and
actions (`*`, `fs__*`) so that one line can cover a server. The policy keeps
seatbelt's roles and groupings (admin, viewer; agent_admin, agent_viewer).
RBAC takes effect once policy.yaml names the files (`rbac:`); this command
prints the lines to add.
"""

from __future__ import annotations

from pathlib import Path

import click

from mcpwall.cli._common import home_option, json_option, print_json, resolve_home
from mcpwall.errors import ConfigError
from mcpwall.stages import rbac as _rbac

MODEL = """\
# mcpwall RBAC model (casbin): mcp-seatbelt's ACL model, with patterns in objects and actions.
[request_definition]
r = sub, obj, act

[policy_definition]
p = sub, obj, act

[role_definition]
g = _, _

[policy_effect]
e = some(where (p.eft == allow))

[matchers]
m = g(r.sub, p.sub) && (p.obj == "*" || keyMatch(r.obj, p.obj)) && (p.act == "*" || r.act == p.act)
"""

POLICY = """\
# mcpwall RBAC policy (casbin CSV): p, SUBJECT, OBJECT, ACTION  and  g, MEMBER, ROLE
#
# SUBJECT  an agent id (the x-agent-id header, a named token's identity, or --agent of
#          wrap / proxy --stdio), client:<clientInfo name> for a session without one,
#          unknown_agent for a session that says nothing, or a role.
# OBJECT   a tool or prompt as the aggregated endpoint names it, server__tool; a bare tool
#          name (any server); a resource URI. Patterns: *, fs__*, demo://docs/*.
# ACTION   execute: call a tool or get a prompt; read: call a tool the server annotates
#          readOnlyHint (annotations are pinned), get a prompt, read a resource.
#
# A client sees in tools/list exactly what it may call here; every other call is denied.
p, admin, *, *
p, viewer, *, read

g, agent_admin, admin
g, agent_viewer, viewer
"""

SNIPPET = f"""rbac:
  model: {_rbac.MODEL_FILE}
  policy: {_rbac.POLICY_FILE}
"""


@click.command("rbac-init")
@click.option("--output", "output", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder to write the files to (default: the home, next to policy.yaml).")
@click.option("--force", is_flag=True, help="Overwrite existing files.")
@json_option
@home_option
def rbac_init(output: Path | None, force: bool, as_json: bool, home: Path | None) -> None:
    """Write the RBAC model and policy (roles admin/viewer, groupings agent_admin/agent_viewer)."""
    folder = (output or resolve_home(home)).expanduser()
    model, policy = folder / _rbac.MODEL_FILE, folder / _rbac.POLICY_FILE
    existing = [str(p) for p in (model, policy) if p.exists()]
    if existing and not force:
        raise ConfigError(f"{', '.join(existing)} already exist(s); use --force to overwrite")
    folder.mkdir(parents=True, exist_ok=True)
    model.write_text(MODEL, encoding="utf-8")
    policy.write_text(POLICY, encoding="utf-8")
    if as_json:
        print_json({"model": str(model), "policy": str(policy), "policy_yaml": SNIPPET})
        return
    click.echo(f"RBAC model:  {model}\nRBAC policy: {policy}\n")
    click.echo("Turn it on in policy.yaml (paths are relative to the policy file's folder):\n")
    click.echo(SNIPPET)
    click.echo("Then give agents roles (g, <agent id>, admin) in the policy file; the gateway reloads it on change.")


__all__ = ["MODEL", "POLICY", "SNIPPET", "rbac_init"]
