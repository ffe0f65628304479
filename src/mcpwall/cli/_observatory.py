"""`mcpwall import-observatory`: turn mcp-observatory findings into suggested policy rules.

With an ARTIFACT path, that file is read; without one, artifacts are looked
for under `--base` (default: the current directory) in `.mcp-observatory/runs/`
and `.mcp-observatory-metrics/`, as mcp-seatbelt does. The rules are printed
as YAML (or JSON with `--json`); `--output FILE` writes them as a policy file
that `policy.yaml` can pull in with `extends: [FILE]`.
"""

from __future__ import annotations

from pathlib import Path

import click

from mcpwall.cli._common import home_option, json_option, print_json


@click.command("import-observatory")
@click.argument("artifact", required=False, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--base", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where to look for artifacts when none is given (default: current directory).")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the suggested rules to this policy file (usable with `extends:`).")
@json_option
@home_option
def import_observatory(artifact: Path | None, base: Path | None, output: Path | None, as_json: bool,
                       home: Path | None) -> None:
    """Convert mcp-observatory scan findings into suggested policy rules."""
    import yaml

    from mcpwall.discovery import discover_artifacts
    from mcpwall.discovery import import_observatory as convert
    from mcpwall.errors import ConfigError
    from mcpwall.policy import parse_policy_text

    paths = [artifact] if artifact else discover_artifacts(base or Path.cwd())
    if artifact is not None:
        from mcpwall.discovery._observatory import read_findings

        if read_findings(artifact) is None:
            raise ConfigError(f"{artifact}: not an mcp-observatory artifact (no findings or checks)")
    rules: list[dict[str, object]] = []
    per_file = []
    for path in paths:
        found = convert(path)
        per_file.append({"artifact": str(path), "rules": len(found)})
        known = {r["id"] for r in rules}
        rules.extend(r for r in found if r["id"] not in known)
    text = yaml.safe_dump({"rules": rules}, sort_keys=False, width=1000) if rules else "rules: []\n"
    parse_policy_text(text, "<import-observatory>")  # every suggested rule must load as a policy rule
    if output is not None:
        header = "# Suggested by `mcpwall import-observatory` from: " + ", ".join(str(p) for p in paths) + "\n"
        try:
            output.write_text(header + text, encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot write {output}: {exc.strerror}") from exc
    if as_json:
        print_json({"artifacts": per_file, "rules": rules, "output": str(output) if output else None})
        return
    if not paths:
        click.echo(f"No mcp-observatory artifacts found under {base or Path.cwd()} "
                   "(looked in .mcp-observatory/runs/ and .mcp-observatory-metrics/).")
        return
    for item in per_file:
        click.echo(f"# {item['artifact']}: {item['rules']} rule(s)", err=True)
    click.echo(text, nl=False)
    if output is not None:
        click.echo(f"Wrote {len(rules)} rule(s) to {output}; add `extends: [{output}]` to policy.yaml to use them.",
                   err=True)


__all__ = ["import_observatory"]
