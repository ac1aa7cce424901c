"""Every tool's definition, in the order they are listed (``SPECS``), by name
(``BY_NAME``), and the tools that change memory (``WRITES``: the group rules
give them write access only).

Only the definitions (``specs``, ``specs_more``): importing this module loads
no engine, so a server can list its tools before it opens a memory
(``mcp_server.toolset``).
"""

from __future__ import annotations

from .specs import FACT_TOOLS, Spec
from .specs_more import MORE

__all__ = ["BY_NAME", "SPECS", "WRITES"]

SPECS: tuple[Spec, ...] = (*FACT_TOOLS, *MORE)
BY_NAME: dict[str, Spec] = {spec.name: spec for spec in SPECS}
WRITES = frozenset(spec.name for spec in SPECS if spec.writes)
