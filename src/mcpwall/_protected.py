"""The gateway's protected set, built from its home, policy files and start options (issue 22).

Here rather than in `mcpwall.stages.selfguard`, the stage that checks calls against it, so that
`mcpwall simulate` answers as the gateway's self-protection would without importing the pipeline
(issue 29: start-up). Outside the layers of `make lint`: it reads both `mcpwall.security` (the set)
and `mcpwall.ledger` (its files), which do not import each other.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from mcpwall._keydir import key_dir
from mcpwall.security.selfguard import ProtectedSet


def protected_set(home: Path, policy_files: Iterable[str | Path], config: Mapping[str, Any],
                  settings: Any = None, programs: Iterable[tuple[str | Path, str]] = ()) -> ProtectedSet:
    """The gateway's protected set from its home, policy files, policy sections and start options;
    `programs`: the code of the servers it starts (`selfguard.server_programs`)."""
    from mcpwall._token import token_path
    from mcpwall.ledger import checkpoint_path, key_path, parse_url

    policy_files = [*policy_files]
    policy_path = getattr(settings, "policy_path", None)
    if policy_path is not None:
        policy_files.append(policy_path)
    policy_files.append(home / "policy.yaml")
    policy_files.extend(_extends_as_written(policy_files))
    tokens = [token_path(home), key_path(home), checkpoint_path(home)]
    token_file = getattr(settings, "token_file", None)
    if token_file is not None:
        tokens.append(token_file)
    ledger: list[Path] = []
    section = config.get("ledger")
    url = (getattr(settings, "extras", None) or {}).get("ledger_url")
    if url is None and isinstance(section, Mapping) and section.get("url") is not None:
        url = str(section["url"])
    try:
        location = parse_url(home, url)
    except Exception:  # a bad URL is the audit stage's to report; the default file is still ours
        location = parse_url(home, None)
    if location.path is not None:
        ledger.append(location.path if location.path.is_absolute() else home / location.path)
    rbac: list[Path] = []
    section = config.get("rbac")
    if section is not None and section is not False:
        names = section if isinstance(section, Mapping) else {}
        base = Path(policy_path).expanduser().resolve().parent if policy_path is not None else home
        for key, default in (("model", "rbac_model.conf"), ("policy", "rbac_policy.csv")):
            rbac.append(base / Path(str(names.get(key, default))).expanduser())
            rbac.append(home / Path(str(names.get(key, default))).expanduser())
    state: list[Path] = []
    anchor = _anchor_dir(section if isinstance(section := config.get("ledger"), Mapping) else {})
    if anchor is not None:
        state.append(anchor)
    state.append(key_dir())  # the key of the home's encrypted upstream OAuth grants (mcpwall.oauth)
    return ProtectedSet.build(home, policy_files, servers_files=getattr(settings, "servers_files", None) or (),
                              token_files=tokens, ledger_paths=ledger, rbac_files=rbac, extra_dirs=state,
                              programs=programs, client_configs=_client_configs(home))


def _client_configs(home: Path) -> list[str]:
    """The client configs `init` rewrote (its manifest, `<home>/init/manifest.json`), as written and
    as they resolved then: each holds its client's named token, and rewritten it would send that
    client around the gateway. An unreadable manifest adds nothing (`uninstall` reports it)."""
    import json

    try:
        files = json.loads((home / "init" / "manifest.json").read_text(encoding="utf-8")).get("files")
    except (OSError, ValueError, AttributeError):
        return []
    if not isinstance(files, dict):
        return []
    out: list[str] = []
    for path, entry in files.items():
        out.append(str(path))
        real = entry.get("real") if isinstance(entry, dict) else None
        if isinstance(real, str):
            out.append(real)
    return out


def _extends_as_written(files: Iterable[str | Path]) -> list[Path]:
    """Each `extends` entry as the loader opens it, before symlinks are resolved: the policy's files
    are recorded resolved, and a directory holding a symlink on the way (`/x/link -> /y/team`) could
    otherwise be moved and a file of the agent's put at the written path for the next reload."""
    from mcpwall.policy import parse_policy_text

    out: list[Path] = []
    for file in files:
        try:
            resolved = Path(file).expanduser().resolve()
            doc, _ = parse_policy_text(resolved.read_text(encoding="utf-8"), str(resolved), plain=True)
        except Exception:  # not there, not a policy: the loader reports it; nothing to add
            continue
        for ext in doc.extends or []:
            written = Path(os.path.expanduser(ext))
            out.append(written if written.is_absolute() else resolved.parent / written)
    return out


def _anchor_dir(section: Mapping[str, Any]) -> Path | None:
    """The ledger's head anchors, kept outside the home (`ledger.anchor`, `$MCPWALL_ANCHOR_DIR`)."""
    try:
        module = importlib.import_module("mcpwall.ledger._anchor")
        found = module.anchor_dir(section.get("anchor"))
    except Exception:  # no anchors in this build, or a bad setting the ledger stage reports
        return None
    return Path(found) if found is not None else None


__all__ = ["protected_set"]
