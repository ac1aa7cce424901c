"""Groups through the memory tools: the rules of seed 001, and no way for a
non-main group to read another group's memory (issue 8)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata.tools import GroupTools

SECRET = "b-secret-cobalt"


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GroupTools]:
    root = tmp_path_factory.mktemp("root")
    served = GroupTools(root, "main", embedder="none")
    assert "Error" not in served.dispatch(
        "memory_write", {"text": f"The vault code is {SECRET}", "group": "b"}, group="main"
    )
    assert "Error" not in served.dispatch(
        "memory_write", {"text": "Office opens at nine", "group": "global"}, group="main"
    )
    yield served
    served.close()


def test_the_rules_of_seed_001(tools: GroupTools) -> None:
    own = tools.dispatch("memory_write", {"text": "A's own note about kites"}, group="a")
    assert json.loads(own)["source"] == "agent"
    denied = tools.dispatch("memory_search", {"query": "vault", "group": "b"}, group="a")
    assert denied.startswith("Error: group 'a' may not read group 'b'")
    assert tools.dispatch("memory_write", {"text": "x", "group": "global"}, group="a").startswith(
        "Error: group 'a' may not write group 'global'"
    )
    found = json.loads(tools.dispatch("memory_search", {"query": "office opens"}, group="a"))
    shared = found["hits"]
    assert shared and shared[0]["group"] == "global"  # a non-main group reads global
    main_reads_b = json.loads(
        tools.dispatch("memory_search", {"query": "vault code", "group": "b"}, group="main")
    )
    assert SECRET in main_reads_b["hits"][0]["snippet"]  # main may name any group
    assert tools.dispatch("memory_status", {}, group="../b").startswith("Error:")


call = st.tuples(
    st.sampled_from(["memory_search", "memory_get", "memory_write", "memory_status"]),
    st.sampled_from([None, "b", "global", "main", "a"]),
    st.sampled_from(["vault code", "cobalt", SECRET, "MEMORY.md", "memory/../MEMORY.md", "x"]),
)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(st.lists(call, min_size=1, max_size=6))
def test_no_calls_of_a_non_main_group_return_another_groups_content(
    tools: GroupTools, calls: list[tuple[str, str | None, str]]
) -> None:
    for name, target, word in calls:
        arguments: dict[str, object] = {}
        if name == "memory_search":
            arguments["query"] = word
        elif name == "memory_get":
            arguments["path"] = word if word.endswith(".md") else "MEMORY.md"
        elif name == "memory_write":
            arguments["text"] = f"a note about {word}"
        if target is not None:
            arguments["group"] = target
        result = tools.dispatch(name, arguments, group="a")
        assert SECRET not in result.replace(f"a note about {SECRET}", ""), (name, target, result)
        if target in ("b", "main"):
            assert result.startswith("Error: group 'a' may not"), result


def test_each_group_opens_with_its_own_settings_file(tmp_path: Path) -> None:
    from memstrata import Memory

    root = tmp_path / "root"
    for group, toml in (
        ("main", 'embedder = "none"\nmax_items = 5\n'),
        ("b", 'embedder = "hash"\nmax_items = 3\nsession_keep_turns = 7\n'),
        ("global", 'embedder = "none"\nmax_items = 9\n'),
    ):
        (root / "groups" / group).mkdir(parents=True)
        (root / "groups" / group / "memstrata.toml").write_text(f"[memory]\n{toml}")
    server = Memory.open(root, "main", embedder="none", max_items=5)
    tools = GroupTools(root, "main", summarizer="extractive", session_keep_turns=11)
    tools.adopt(server)  # a server's own memory: its settings are not the others'
    try:
        b, shared = tools.memory("b").settings, tools.memory("global").settings
        assert (b.embedder, b.max_items) == ("hash", 3)
        assert (shared.embedder, shared.max_items) == ("none", 9)
        assert b.session_keep_turns == shared.session_keep_turns == 11  # given over the file
        assert tools.memory("main") is server
        (root / "groups" / "c").mkdir()
        (root / "groups" / "c" / "memstrata.toml").write_text("[memory]\nmax_items = 'x'\n")
        refused = tools.dispatch("memory_status", {"group": "c"}, group="main")
        assert refused.startswith("Error:") and "memstrata.toml" in refused
    finally:
        tools.close()
