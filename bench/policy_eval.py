"""Policy decision throughput and latency.

Prints decisions/s and p50/p99 per decision for the built-in default policy
and for a generated 1,000-rule policy, on one core (this process), for:

- `evaluate`: the decision on prepared facts (what the gateway's policy stage
  pays once the facts exist);
- `prepare+evaluate`: facts (normalisation, symlink check) plus decision;
- `reference`: the rule-by-rule path used for traces, for scale.

The hot-path modules run compiled when `make setup` built them (mcpwall._native),
with the thin RE2::Set binding where g++ and libre2-dev were there;
`MCPWALL_PURE=1` measures the same code as Python. The first lines say which.

The call stream is varied (thousands of distinct paths, URLs and messages, a
dozen tools), so caches help only as much as real agent traffic would let them.
`evaluate` and `prepare+evaluate` are measured in five passes over the stream
each (the engine's text caches emptied before each), and the median pass is the
decisions/s figure; this VM's speed varies by 30-60% from one second to the next.
(Until 2026-12-02 `prepare+evaluate` was one pass: on the loaded shared machine
one pass of the same build gave 40,094 and 196,575/s within three minutes.)
The script runs against older heads too (`PYTHONPATH=<tree>/src`), so two heads
are compared by the same measurement.

`--binding-ab` instead compares the thin RE2::Set binding with google-re2's
on the default policy in one process, passes alternating A B B A ..., since
this VM's speed moves more between runs than the difference.

    python bench/policy_eval.py [--calls 100000] [--seed 1] [--binding-ab]
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from mcpwall._native import compiled_modules
from mcpwall.policy import Call, CompiledPolicy, Context, PolicyEngine, compile_policy, evaluate, prepare
from mcpwall.policy._evaluate import evaluate_slow
from mcpwall.policy._loader import resolve_document
from mcpwall.policy._match import native_sets
from mcpwall.policy._model import PolicyFile

TOOLS = {
    "read_file": "Read the complete contents of a file from the file system.",
    "write_file": "Create a new file or completely overwrite an existing file with new content.",
    "list_directory": "Get a detailed listing of all files and directories in a specified path.",
    "search_files": "Recursively search for files and directories matching a pattern.",
    "fetch": "Fetches a URL from the internet and optionally extracts its contents as markdown.",
    "echo": "Echoes back the input",
    "get_current_time": "Get current time in a specific timezones",
    "create_entities": "Create multiple new entities in the knowledge graph",
    "git_status": "Shows the working tree status",
    "run_query": "Run a read-only SQL query",
}


def call_stream(n: int, rng: random.Random, extra_tools: int = 0) -> list[Call]:
    dirs = ["/workspace/src", "/workspace/docs", "/tmp/build", "/home/dev/project", "/srv/app12", "/etc"]
    paths = [f"{rng.choice(dirs)}/{'sub/' * rng.randint(0, 3)}file{i}.{rng.choice(['py', 'md', 'json'])}"
             for i in range(4000)]
    hosts = [f"https://host{i}.example.com/page/{i}" for i in range(800)] + ["http://127.0.0.1:8080/admin"]
    words = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "deploy", "build", "test", "report", "status"]
    names = list(TOOLS) + [f"tool_{i}" for i in range(extra_tools)]
    calls = []
    for _ in range(n):
        name = rng.choice(names)
        if name in ("read_file", "list_directory"):
            args: dict[str, Any] = {"path": rng.choice(paths)}
        elif name == "write_file":
            args = {"path": rng.choice(paths), "content": " ".join(rng.choices(words, k=12))}
        elif name == "search_files":
            args = {"path": rng.choice(paths).rsplit("/", 1)[0], "pattern": "*.py", "excludePatterns": ["node_modules"]}
        elif name == "fetch":
            args = {"url": rng.choice(hosts), "max_length": 5000}
        elif name == "run_query":
            args = {"sql": f"select * from t{rng.randint(0, 50)} where id = {rng.randint(0, 10**6)}"}
        else:
            args = {"message": " ".join(rng.choices(words, k=rng.randint(1, 8))), "count": rng.randint(0, 9)}
        calls.append(Call(name=name, arguments=args, server="bench", description=TOOLS.get(name, "A tool")))
    return calls


def generated_policy(rules: int, rng: random.Random) -> CompiledPolicy:
    """A realistic large policy: tool-scoped rules, path and host patterns, keys, commands."""
    out: list[dict[str, Any]] = []
    for i in range(rules):
        kind = i % 10
        action = rng.choice(["deny", "allow", "warn", "ask", "deny"])
        if kind < 4:
            out.append({"id": f"tool-{i}", "tools": [f"tool_{i}"], "action": action})
        elif kind < 7:
            out.append({"id": f"path-{i}", "target": "file", "match": "pattern",
                        "values": [f"^/srv/app{i}(/|$)", f"^/data/tenant{i}/"], "action": action})
        elif kind < 9:
            out.append({"id": f"host-{i}", "target": "network", "match": "contains",
                        "values": [f"host{i}.example.com"], "action": action})
        else:
            out.append({"id": f"key-{i}", "target": "argName", "match": "exact", "values": [f"secret_{i}"],
                        "action": "redact"})
    doc = PolicyFile.model_validate({"mode": "enforce", "defaultAction": "allow", "rules": out})
    return compile_policy(resolve_document(doc))


def measure(label: str, fn: Callable[[Any], object], items: list[Any],
            batch: Callable[[list[Any]], object] | None = None, repeat: int = 1,
            reset: Callable[[], None] | None = None) -> dict[str, float]:
    """Decisions/s over the whole stream in a plain loop (`batch`, else `fn` item by item),
    `repeat` passes (the median and the best are printed), then p50/p99 from one more pass
    that times each decision. Timing every call costs about as much as a decision here (two
    clock reads and a list append, ~0.5 us), so the throughput figure is taken without it.
    `reset` runs before each pass: emptying the engine's text cache makes every pass see as
    many new texts as the first (else the later passes would find every text cached)."""
    for item in items[:2000]:  # warm caches as a running gateway would be
        fn(item)
    rates = []
    for _ in range(repeat):  # this VM's speed varies from second to second: several passes
        if reset is not None:
            reset()
            for item in items[:2000]:
                fn(item)
        start = time.perf_counter()
        if batch is not None:
            batch(items)
        else:
            for item in items:
                fn(item)
        rates.append(len(items) / (time.perf_counter() - start))
    samples = []
    clock = time.perf_counter_ns
    for item in items:
        t0 = clock()
        fn(item)
        samples.append(clock() - t0)
    samples.sort()
    row = {"decisions_per_s": statistics.median(rates), "best_per_s": max(rates),
           "p50_us": samples[len(samples) // 2] / 1000, "p99_us": samples[int(len(samples) * 0.99)] / 1000,
           "mean_us": statistics.fmean(samples) / 1000}
    spread = f" (best {row['best_per_s']:,.0f})" if repeat > 1 else ""
    print(f"  {label:<34} {row['decisions_per_s']:>12,.0f}/s{spread}   p50 {row['p50_us']:7.2f} us"
          f"   p99 {row['p99_us']:7.2f} us")
    return row


def _clear_texts(policy: CompiledPolicy) -> None:
    """Empty the engine's text caches: the argument texts' and (issue 25) the facts' texts'."""
    policy.fast.texts.clear()
    fact_texts = getattr(policy.fast, "fact_texts", None)  # absent before issue 25: the A/B runs old heads too
    if fact_texts is not None:
        fact_texts.clear()


def run(policy_label: str, policy: CompiledPolicy, calls: list[Call]) -> None:
    ctx = Context(now=datetime.now().astimezone(), requests_last_minute=5)
    print(f"{policy_label}: {len(policy.all_rules)} rules, {len(calls):,} calls")
    facts = [prepare(c) for c in calls]
    measure("evaluate (prepared facts)", lambda f: evaluate(policy, f, ctx), facts,
            lambda items: [evaluate(policy, f, ctx) for f in items], repeat=5, reset=lambda: _clear_texts(policy))
    measure("prepare + evaluate", lambda c: evaluate(policy, prepare(c), ctx), calls,
            lambda items: [evaluate(policy, prepare(c), ctx) for c in items], repeat=5,
            reset=lambda: _clear_texts(policy))
    measure("reference path (rule by rule)", lambda f: evaluate_slow(policy, f, ctx),
            facts[: max(2000, len(facts) // 10)])


def binding_ab(calls: list[Call], passes: int = 10) -> None:
    """Decisions/s of the default policy with each RE2 binding, passes alternating."""
    from mcpwall.policy import _match

    thin = PolicyEngine.from_template("default").compiled
    saved, _match._NATIVE_SETS = _match._NATIVE_SETS, None
    try:
        google = PolicyEngine.from_template("default").compiled
    finally:
        _match._NATIVE_SETS = saved
    if thin.fast.arg_set._native_mask is None:
        print("the thin binding is not built (make native, with g++ and libre2-dev): nothing to compare")
        return
    ctx = Context(now=datetime.now().astimezone(), requests_last_minute=5)
    facts = [prepare(c) for c in calls]
    rates: dict[str, list[float]] = {"thin binding": [], "google-re2": []}
    policies = {"thin binding": thin, "google-re2": google}
    for policy in policies.values():
        [evaluate(policy, f, ctx) for f in facts[:5000]]
    for i in range(passes):
        order = list(policies) if i % 2 == 0 else list(reversed(policies))
        for name in order:
            policy = policies[name]
            policy.fast.texts.clear()
            start = time.perf_counter()
            [evaluate(policy, f, ctx) for f in facts]
            rates[name].append(len(facts) / (time.perf_counter() - start))
    print(f"default policy, {len(facts):,} calls, {passes} passes each, alternating")
    for name, values in rates.items():
        print(f"  {name:<14} median {statistics.median(values):>10,.0f}/s   passes "
              + " ".join(f"{v / 1000:.0f}k" for v in values))
    wins = sum(a > b for a, b in zip(rates["thin binding"], rates["google-re2"], strict=True))
    print(f"  the thin binding was faster in {wins} of {passes} pairs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--binding-ab", action="store_true", help="compare the two RE2 bindings only")
    opts = parser.parse_args()
    rng = random.Random(opts.seed)
    with open("/proc/cpuinfo", encoding="utf-8") as info:
        cpu = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")),
                   platform.processor())
    print(f"machine: {cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"{datetime.now():%Y-%m-%d}")
    print(f"compiled modules: {', '.join(compiled_modules()) or 'none (pure Python)'}")
    print("RE2 sets: " + ("the thin binding (mcpwall.policy._re2set)" if native_sets() else "google-re2's binding"))
    if opts.binding_ab:
        binding_ab(call_stream(opts.calls, rng))
        return
    run("default policy", PolicyEngine.from_template("default").compiled, call_stream(opts.calls, rng))
    run("generated 1,000-rule policy", generated_policy(1000, rng), call_stream(opts.calls, rng, extra_tools=1000))


if __name__ == "__main__":
    main()
