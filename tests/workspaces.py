"""A created workspace for tests of the modules below ``Memory`` (layers)."""

from __future__ import annotations

from pathlib import Path

from memstrata.storage.workspace import Workspace, init_workspace


def fresh(root: Path) -> Workspace:
    """The workspace at ``root``, its layout created."""
    workspace = Workspace.locate(root)
    init_workspace(workspace)
    return workspace
