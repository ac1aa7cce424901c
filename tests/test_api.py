"""The public face and the module map stay small and layered."""

from __future__ import annotations

import ast
from pathlib import Path

import memstrata
from memstrata import errors

PACKAGE = Path(memstrata.__file__).parent

# DESIGN.md's module map: imports point down only.
LAYERS = {
    "interfaces": {
        "__main__",
        "cli",
        "cli_base",
        "cli_layers",
        "cli_search",
        "demo",
        "doctor",
        "benchmarks",
        "tools",
        "mcp_server",
        "memory_tool",
    },
    "facade": {
        "memory",
        "engine",
        "transcripts",
        "layered",
        "documents",
        "searching",
        "prompting",
    },
    "services": {"capture", "layers", "history", "index", "embed", "context", "access"},
    "foundation": {
        "config",
        "errors",
        "files",
        "journal",
        "lock",
        "model",
        "workspace",
        "store",
    },
}
RANK = {"foundation": 0, "services": 1, "facade": 2, "interfaces": 3}


def test_public_names_are_pinned_and_sorted() -> None:
    assert memstrata.__all__ == [
        "AccessDenied",
        "BackendUnavailable",
        "CompactResult",
        "Conflict",
        "Corrupt",
        "InvalidInput",
        "Item",
        "Memory",
        "MemstrataError",
        "NotFound",
        "Source",
        "Status",
        "StorageError",
        "__version__",
    ]
    assert memstrata.__all__ == sorted(memstrata.__all__)
    for name in memstrata.__all__:
        assert hasattr(memstrata, name)


def test_one_error_tree_that_shadows_no_builtin() -> None:
    import builtins

    for name in errors.__all__:
        error = getattr(errors, name)
        assert issubclass(error, errors.MemstrataError)
        assert not hasattr(builtins, name), f"{name} shadows a builtin"


def _layer(module: str) -> str:
    top = module.split(".")[0]
    for layer, members in LAYERS.items():
        if top in members:
            return layer
    raise AssertionError(f"module {module} is not in the module map")


def test_imports_point_down_the_module_map() -> None:
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE).with_suffix("")
        if relative.name == "__init__" and relative.parent == Path("."):
            continue
        module = ".".join(relative.parts)
        own = RANK[_layer(module)]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = relative.parts[: len(relative.parts) - node.level]
                target = ".".join([*base, node.module] if node.module else base)
                if not target:
                    continue
                assert RANK[_layer(target)] <= own, f"{module} imports {target} (upward)"


def test_the_package_ships_its_type_marker_and_templates() -> None:
    assert (PACKAGE / "py.typed").exists()
    for name in ("AGENT.md", "USER.md", "SOUL.md", "WORKING_MEMORY.md", "memstrata.toml"):
        assert (PACKAGE / "templates" / name).exists()
