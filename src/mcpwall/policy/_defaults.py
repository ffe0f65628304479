"""The built-in default policy and the named templates (shipped as YAML)."""

from __future__ import annotations

from importlib import resources

from mcpwall.errors import PolicyError
from mcpwall.policy._loader import ResolvedPolicy, parse_policy_text, resolve_document

TEMPLATES = ("default", "minimal-workstation", "pci-compliance", "strict-production")


def template_text(name: str = "default") -> str:
    """The YAML text of a built-in template, as `init` writes it."""
    if name not in TEMPLATES:
        raise PolicyError(f"unknown template {name!r}; choose one of {', '.join(TEMPLATES)}")
    return (resources.files("mcpwall.policy") / "templates" / f"{name}.yaml").read_text(encoding="utf-8")


def load_template(name: str = "default", *, plain: bool = False) -> ResolvedPolicy:
    """A template resolved like a file, under the pseudo-path `<builtin:NAME>` (`plain`: see
    `parse_policy_text`)."""
    file = f"<builtin:{name}>"
    doc, _ = parse_policy_text(template_text(name), file, plain=plain)
    return resolve_document(doc, file)


__all__ = ["TEMPLATES", "load_template", "template_text"]
