"""mcpwall: a firewall for the Model Context Protocol.

The public surface is small on purpose: the command line (`mcpwall ...`) is the
product, and the packages below are its rooms (see docs/ARCHITECTURE.md).
"""

from mcpwall._native import use_compiled as _use_compiled

_use_compiled(__path__, __name__)  # the compiled modules' shared runtime (see mcpwall._native)

__version__ = "0.1.0"

__all__ = ["__version__"]
