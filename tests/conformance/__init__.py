"""The official MCP conformance suite against mcpwall (issue 4)."""
