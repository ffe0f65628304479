"""Schema and path validation of tools/call arguments (after policy and chain tracking).

The tool's `inputSchema` comes from the server's catalog (`tools/list`, kept
current by the gateway); invalid arguments are refused with -32602 and the
validation errors in `error.data.errors`, whatever the mode: a call that does
not match its tool's schema is malformed, not a policy question. A tool the
catalog does not know passes (the upstream answers for it).

Path safety (NUL bytes, traversal, encoded dots, system and credential
locations; see `mcpwall.security.schema`) denies with -32001 in enforce mode
and is recorded in audit mode. Paths under the policy's `allowlist.paths`
and this block's `allowPaths` are exempt from the location check.

policy.yaml::

    stages:
      schema: {enabled: true, validate: true, pathSafety: true, allowPaths: [], sensitivePaths: ['regex', ...]}
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from typing import Any

from mcpwall.pipeline import Reject, RequestContext, Stage
from mcpwall.protocol import ErrorCode
from mcpwall.security.schema import SchemaCache, path_violations
from mcpwall.stages._components import Components
from mcpwall.stages._configs import SchemaConfig
from mcpwall.stages._kit import arguments, enforce, flat, parse, stage_block

log = logging.getLogger("mcpwall.schema")
_HOME = os.path.expanduser("~")


class SchemaStage(Stage):
    name = "schema"

    def __init__(self, config: SchemaConfig | None = None) -> None:
        self.config = config or SchemaConfig.model_validate({})
        self.cache = SchemaCache()
        try:
            self.extra = tuple(("configured sensitive path", re.compile(p, re.IGNORECASE))
                               for p in self.config.sensitivePaths)
        except re.error as exc:
            from mcpwall.errors import ConfigError

            raise ConfigError(f"policy stages.schema.sensitivePaths: invalid regex: {exc}") from exc
        self.checked = 0
        self.invalid = 0
        self.unsafe_paths = 0

    async def on_request(self, ctx: RequestContext) -> Reject | None:
        if ctx.method != "tools/call" or ctx.server is None:
            return None
        self.checked += 1
        args = ctx.params.get("arguments", {})
        if self.config.validate_arguments:
            upstream = ctx.gateway.servers.get(ctx.server)
            tool = upstream.catalog.tools.get(ctx.target) if upstream is not None else None
            schema = tool.get("inputSchema") if isinstance(tool, dict) else None
            if schema is not None:
                if not isinstance(args, dict):
                    errors = [{"path": "$", "message": "arguments must be an object", "validator": "type"}]
                else:
                    errors = self.cache.errors(ctx.server, ctx.target, schema, args)
                if errors:
                    self.invalid += 1
                    ctx.notes["schema"] = {"errors": errors}
                    return Reject(ErrorCode.INVALID_PARAMS,
                                  f"Schema validation failed for {ctx.target}: {errors[0]['path']}: "
                                  f"{errors[0]['message']}", {"errors": errors, "server": ctx.server,
                                                               "tool": ctx.target})
        if not self.config.pathSafety:
            return None
        allow = [*self.config.allowPaths, *ctx.gateway.policy.current.allow_paths]
        args = arguments(ctx)
        violations = path_violations(args, home=_HOME, allow=allow, extra=self.extra, flat=flat(ctx, args))
        if not violations:
            return None
        self.unsafe_paths += 1
        found = [v.as_dict() for v in violations[:10]]
        reason = "[mcpwall.path-safety] " + "; ".join(f"{v.kind} at {v.path}: {v.detail}" for v in violations[:3])
        ctx.notes["path_safety"] = found
        log.warning("%s/%s: %s", ctx.server, ctx.target, reason)
        return enforce(ctx, "path_safety", Reject(ErrorCode.BLOCKED, "Blocked by mcpwall: Path safety violation: "
                                                  + reason, {"reasons": [reason], "rule_ids": ["mcpwall.path-safety"],
                                                             "violations": found}))

    def status(self) -> dict[str, Any]:
        return {"checked": self.checked, "invalid": self.invalid, "unsafe_paths": self.unsafe_paths,
                "validators": self.cache.compiled, "unusable_schemas": dict(self.cache.unusable)}


def build(config: Mapping[str, Any], settings: Any = None,
          components: Components | None = None) -> SchemaStage | None:
    cfg = parse(SchemaConfig, stage_block(config, "schema"), "stages.schema")
    return SchemaStage(cfg) if cfg.enabled else None


__all__ = ["SchemaConfig", "SchemaStage", "build"]
