"""Call-level detection on the `call` cases of shared/efficacy/dev.jsonl.

Each case runs through the real gateway pipeline in-process (policy + every defence stage; the
upstream is replaced by a dispatch that answers "ok"), in a fresh session, as a client would
send it. A case is *detected* when the gateway refuses it (deny, or ask without an approver).
Two policies:

  A. the default policy (seatbelt's nine rules + mcpwall's defence rules), as shipped
     (defaultAction: deny, so every call no rule allows is refused: detection is trivial and
     the false-positive rate is that of default-deny);
  B. the same rules with defaultAction: allow, which measures what the deny rules and the
     stages catch on their own (the figure that matters for an operator with allow rules).

Usage: python bench/efficacy_calls.py [--cases PATH] [--json]
Nothing here special-cases the sample's strings; a held-out set measures the same code.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from mcpwall.pipeline import Session  # noqa: E402
from mcpwall.proxy import GatewaySettings, build  # noqa: E402
from mcpwall.stages import RequestContext  # noqa: E402

TEMPLATES = ROOT / "src" / "mcpwall" / "policy" / "templates"
DEFAULT_CASES = ROOT.parent / "shared" / "efficacy" / "dev.jsonl"


def _policy(dir_: Path, default_action: str | None) -> Path:
    path = dir_ / f"policy-{default_action or 'shipped'}.yaml"
    text = f"extends: [{TEMPLATES / 'default.yaml'}]\n"
    if default_action:
        text += f"defaultAction: {default_action}\n"
    path.write_text(text)
    return path


async def _ok(ctx: RequestContext) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ctx.id, "result": {"content": [{"type": "text", "text": "ok"}]}}


async def run(cases: list[dict[str, Any]], policy: Path, home: Path) -> list[dict[str, Any]]:
    gateway = build(GatewaySettings(home=home, policy_path=policy, insecure_no_auth=True)).gateway
    await gateway.start()
    out = []
    try:
        for i, case in enumerate(cases):
            p = case["payload"]
            session = Session(kind="stdio", client_name="efficacy", initialized=True)
            params = {"name": p["tool"], "arguments": p["arguments"]}
            msg = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}
            ctx = RequestContext(gateway, session, msg, "tools/call", i, params, server=p["server"], target=p["tool"])
            answer = await gateway.pipeline.run(ctx, _ok)
            err = (answer or {}).get("error") or {}
            data = err.get("data") or {}
            by = ",".join(data.get("rule_ids") or []) or ("default" if err else "")
            if err and ctx.decision is not None and not ctx.decision.rule_ids and ctx.decision.action == "deny":
                by = "defaultAction"
            out.append({"id": case["id"], "label": case["label"], "attack_type": case["attack_type"],
                        "refused": bool(err), "by": by, "warned": "judge" in ctx.notes and not err})
    finally:
        await gateway.stop()
    return out


def summarize(name: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    mal = [r for r in rows if r["label"] == "malicious"]
    ben = [r for r in rows if r["label"] == "benign"]
    detected = sum(r["refused"] for r in mal)
    fp = sum(r["refused"] for r in ben)
    return {"policy": name, "malicious": len(mal), "detected": detected,
            "detection_rate": round(detected / len(mal), 3) if mal else None,
            "benign": len(ben), "false_positives": fp, "false_positive_rate": round(fp / len(ben), 3) if ben else None,
            "flagged_not_refused": sum(r["warned"] for r in mal),
            "by_mechanism": dict(Counter(r["by"].split(",")[0] for r in mal if r["refused"])),
            "missed": [(r["id"], r["attack_type"]) for r in mal if not r["refused"]],
            "false_positive_ids": [r["id"] for r in ben if r["refused"]]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=Path, default=DEFAULT_CASES)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # every refusal is logged; the summary is what counts here
    cases = [c for c in map(json.loads, args.cases.read_text().splitlines()) if c["kind"] == "call"]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, action in (("A: default + defence rules (as shipped)", None),
                             ("B: defence rules + stages only (defaultAction: allow)", "allow")):
            rows = asyncio.run(run(cases, _policy(Path(tmp), action), Path(tmp) / (action or "shipped")))
            results.append(summarize(name, rows))
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"call cases: {len(cases)} from {args.cases}")
    for r in results:
        print(f"\n{r['policy']}")
        print(f"  detection: {r['detected']}/{r['malicious']} = {r['detection_rate']:.1%}"
              f"   false positives: {r['false_positives']}/{r['benign']} = {r['false_positive_rate']:.1%}")
        print(f"  refused by: {r['by_mechanism']}")
        if r["flagged_not_refused"]:
            print(f"  flagged (warn) but not refused: {r['flagged_not_refused']}")
        for case_id, kind in r["missed"]:
            print(f"  missed: {case_id} ({kind})")


if __name__ == "__main__":
    main()
