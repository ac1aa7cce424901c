"""The public face and the module map stay small and layered."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import memstrata
from memstrata import errors

PACKAGE = Path(memstrata.__file__).parent

# DESIGN.md's module map, bottom to top: a module imports its own rank or below.
RANKS: list[tuple[str, set[str]]] = [
    ("values", {"errors", "model", "config"}),
    ("leaves", {"storage", "capture", "embed"}),  # capture is pure: text in, entries out
    ("stores", {"stores"}),
    # postgres: the Index and FactStore backends on PostgreSQL (imports index, stores, storage)
    ("services", {"index", "context", "migrations", "postgres"}),
    ("facade", {"memory"}),
    ("importers", {"importers"}),  # other agents' memory, through the facade's public API
    # ui: memstrata ui, the local web inspector (over the facade, like the servers)
    (
        "entry points",
        {
            "cli",
            "tools",
            "mcp_server",
            "integrations",
            "doctor",
            "demo",
            "benchmarks",
            "ui",
            "__main__",
        },  # fmt: skip
    ),
]
RANK = {top: rank for rank, (_, tops) in enumerate(RANKS) for top in tops}
# Leaves import nothing of memstrata but values.
LEAVES = {"capture", "embed", "storage"}
TOP_LEVEL_MODULES = 12
MAX_LINES = 600


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


def _imports(path: Path) -> Iterator[str]:
    """The memstrata modules ``path`` imports (relative imports resolved), as
    dotted names below ``memstrata``."""
    relative = path.relative_to(PACKAGE).with_suffix("")
    package = list(relative.parts[:-1])
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - (node.level - 1)]
            if node.module:
                yield ".".join([*base, node.module])
            else:
                yield from (".".join([*base, alias.name]) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("memstrata."):
            yield (node.module or "").removeprefix("memstrata.")


def _sources() -> list[tuple[str, Path]]:
    return [
        (".".join(path.relative_to(PACKAGE).with_suffix("").parts), path)
        for path in sorted(PACKAGE.rglob("*.py"))
    ]


def test_imports_point_down_the_module_map() -> None:
    wrong = []
    for module, path in _sources():
        top = module.split(".")[0]
        if top == "__init__":
            continue  # the package's public names: anything below it
        assert top in RANK, f"{module} is not in the module map"
        for target in _imports(path):
            other = target.split(".")[0]
            if other in ("", "__version__") or other == top:
                continue
            assert other in RANK, f"{module} imports {target}, not in the module map"
            if RANK[other] > RANK[top]:
                wrong.append(f"{module} imports {target} (upward)")
            if top in LEAVES and RANK[other] > 0:
                wrong.append(f"{module} imports {target} (a leaf imports only values)")
    assert not wrong, "\n".join(wrong)


# The parts of the facade: each holds the engine and imports none of the others.
PARTS = {"capture", "context", "documents", "facts", "layers", "search", "sessions"}


def test_memory_is_composed_not_inherited() -> None:
    assert len(memstrata.Memory.__mro__) <= 3, memstrata.Memory.__mro__
    for module, path in _sources():
        if module.startswith("memory.") and module.split(".")[1] in PARTS:
            others = {t.split(".")[1] for t in _imports(path) if t.startswith("memory.")}
            assert not others & (PARTS - {module.split(".")[1]}), f"{module} imports {others}"


def test_few_top_level_modules_and_no_long_ones() -> None:
    top = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert len(top) <= TOP_LEVEL_MODULES, top
    long = {
        module: lines
        for module, path in _sources()
        if (lines := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}, f"over {MAX_LINES} lines: {long}"


def test_the_package_ships_its_type_marker_and_templates() -> None:
    assert (PACKAGE / "py.typed").exists()
    for name in ("AGENT.md", "USER.md", "SOUL.md", "WORKING_MEMORY.md", "memstrata.toml"):
        assert (PACKAGE / "templates" / name).exists()


ENTRY_POINTS = RANKS[-1][1]
_ENVIRONMENT = {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}


def _environment_reads(path: Path) -> Iterator[int]:
    """The lines of ``path`` that name the process environment (``os.environ``,
    ``os.getenv``, ``from os import environ``...)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute):
            names = {node.attr}
        elif isinstance(node, ast.Name):
            names = {node.id}
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            names = {alias.name for alias in node.names}
        else:
            continue
        if names & _ENVIRONMENT:
            yield node.lineno


def test_only_entry_points_read_the_environment() -> None:
    """The library takes explicit values (``Settings``, parameters); only the
    entry points read environment variables and hand them in."""
    readers = [
        f"{module}:{line}"
        for module, path in _sources()
        if module.split(".")[0] not in ENTRY_POINTS
        for line in _environment_reads(path)
    ]
    assert readers == [], f"the environment read outside the entry points: {readers}"


TESTS = Path(__file__).parent
# The health checks that a loaded machine or a big input can trip: every
# hypothesis settings in tests/ suppresses them (a test's own list replaces the
# profile's, so each list must name them again).
UNTIMED = {"too_slow", "data_too_large"}


def _unguarded_settings(source: str) -> Iterator[int]:
    """Lines of ``source`` where hypothesis settings suppress health checks
    without ``UNTIMED``, or set a deadline other than None."""
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        called = node.func
        name = called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", "")
        if name not in ("settings", "register_profile"):
            continue
        for keyword in node.keywords:
            value = keyword.value
            if keyword.arg == "deadline" and not (
                isinstance(value, ast.Constant) and value.value is None
            ):
                yield node.lineno
            if keyword.arg == "suppress_health_check":
                named = {n.attr for n in ast.walk(value) if isinstance(n, ast.Attribute)}
                if not named >= UNTIMED:
                    yield node.lineno


def test_no_hypothesis_test_depends_on_the_machines_speed() -> None:
    sample = "settings(suppress_health_check=[HealthCheck.function_scoped_fixture])\n"
    assert list(_unguarded_settings(sample)) == [1]
    assert list(_unguarded_settings("settings(deadline=200)\n")) == [1]
    wrong = [
        f"{path.relative_to(TESTS)}:{line}"
        for path in sorted(TESTS.rglob("*.py"))
        for line in _unguarded_settings(path.read_text())
    ]
    assert wrong == [], f"suppress {sorted(UNTIMED)} and set no deadline: {wrong}"


def test_every_setting_is_a_typed_keyword_of_open() -> None:
    import dataclasses
    import inspect
    import typing

    from memstrata.config import Settings, SettingsFields

    fields = {f.name: f.type for f in dataclasses.fields(Settings)}
    typed = typing.get_type_hints(SettingsFields)
    assert fields.keys() == typed.keys()
    for name, hint in typing.get_type_hints(Settings).items():
        assert typed[name] == hint, name
    kwargs = inspect.signature(memstrata.Memory.open).parameters["fields"]
    assert "SettingsFields" in str(kwargs.annotation)


def test_a_url_is_never_taken_for_a_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memstrata import BackendUnavailable, InvalidInput

    monkeypatch.chdir(tmp_path)
    with pytest.raises(BackendUnavailable):  # the database, which is not there
        memstrata.Memory.open("postgresql://user@db.invalid/memory?connect_timeout=2", group="a")
    with pytest.raises(InvalidInput, match="https:// URL: a workspace is a folder or a postgresql"):
        memstrata.Memory.open("https://example.com/ws")
    assert list(tmp_path.iterdir()) == []  # no folder named "postgresql:" or "https:"
