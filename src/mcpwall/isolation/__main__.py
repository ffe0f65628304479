"""`python -m mcpwall.isolation`: the aggregator process (started by the gateway, not by people)."""

from mcpwall.isolation._child import main

main()
