"""Detectors the pipeline stages use: DLP, honeytokens, attack chains, schema and path
checks, threat intel, the judge, the fuzzer, tool poisoning and behavioural baselines.

Each detector is a module of its own, imported by the stage that needs it; this
package re-exports nothing so that importing one detector never loads the others.
"""

__all__: list[str] = []
