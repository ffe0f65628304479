"""mcpwall: a firewall for the Model Context Protocol.

The public surface is small on purpose: the command line (`mcpwall ...`) is the
product, and the packages below are its rooms (see docs/ARCHITECTURE.md).
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
