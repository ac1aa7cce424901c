"""Seed behaviours that were partial (issue 19 section 2): each test failed on
the main before its fix."""

from __future__ import annotations

from pathlib import Path

from memstrata import Memory


def test_a_groups_context_and_gate_take_global_memory_labelled(tmp_path: Path) -> None:
    with Memory.open(tmp_path, "global", embedder="none") as shared:
        shared.remember("The office wifi password rotates every Monday")
        shared.flush()
    with Memory.open(tmp_path, "team", embedder="none") as team:
        team.remember("Alice prefers short standups")
        context = team.build_context("when does the wifi password rotate?", budget_tokens=2000)
        names = [section.name for section in context.sections]
        assert "Global memory" in names
        section = context.sections[names.index("Global memory")]
        assert section.sources == ("groups/global/MEMORY.md",)
        assert "wifi password rotates" in section.text
        hits = team.gate("when does the wifi password rotate?", 500)
        assert any(hit.layer == "global" and "wifi" in hit.text for hit in hits)
        assert hits[0].citation.startswith("groups/global/MEMORY.md:")
    with Memory.open(tmp_path, "global", embedder="none") as shared:  # not its own global
        names = [s.name for s in shared.build_context("wifi", budget_tokens=2000).sections]
        assert "Global memory" not in names


def test_a_group_without_global_memory_has_no_global_section(tmp_path: Path) -> None:
    with Memory.open(tmp_path, "team", embedder="none") as team:
        team.remember("Alice prefers short standups")
        context = team.build_context("standups", budget_tokens=2000)
        assert "Global memory" not in [s.name for s in context.sections]
        assert not (tmp_path / "groups" / "global").exists()
