"""Detectors the pipeline stages use: DLP, honeytokens, attack chains, schema and path
checks, threat intel, the judge, the fuzzer, tool poisoning and behavioural baselines.

Each detector is a module of its own, imported by the stage that needs it; this
package re-exports nothing so that importing one detector never loads the others.
"""

from mcpwall._native import use_compiled as _use_compiled

_use_compiled(__path__, __name__)  # before any submodule: see mcpwall._native

__all__: list[str] = []
