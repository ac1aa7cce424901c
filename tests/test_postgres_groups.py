"""The group rules (seed 001) on PostgreSQL: the same ``GroupTools`` rules over
tenants of one database as over folders of one root."""

from __future__ import annotations

import json
import uuid

import postgres_server
from memstrata import Memory
from memstrata.tools import GroupTools

FAST = {"embedder": "none"}


def test_groups_on_a_database_follow_the_same_rules() -> None:
    url = postgres_server.app_url()
    tag = uuid.uuid4().hex[:8]
    main, team, other = f"main-{tag}", f"team-{tag}", f"other-{tag}"
    with Memory.open(url, "global", **FAST) as shared:
        shared.remember(f"The office wifi is called zebra{tag}")
    tools = GroupTools(url, main, **FAST)
    try:
        assert not tools.dispatch(
            "memory_write", {"text": f"Team {tag} ships on Fridays"}, group=team
        ).startswith("Error")
        tools.dispatch("memory_write", {"text": f"Other {tag} ships on Mondays"}, group=other)
        # A non-main group reads its own memory and global, never another group's.
        found = json.loads(tools.dispatch("memory_search", {"query": f"zebra{tag}"}, group=team))[
            "hits"
        ]
        assert {hit["group"] for hit in found} == {"global"}
        denied = tools.dispatch("memory_search", {"query": "ships", "group": other}, group=team)
        assert denied.startswith("Error") and "may not read" in denied
        mine = json.loads(tools.dispatch("memory_search", {"query": "ships"}, group=team))["hits"]
        assert [hit["snippet"] for hit in mine if hit["group"] == team] == [
            f"Team {tag} ships on Fridays"
        ]
        # Only global is shared: the main group may name another group.
        theirs = json.loads(
            tools.dispatch("memory_search", {"query": "ships", "group": other}, group=main)
        )["hits"]
        assert [hit["snippet"] for hit in theirs] == [f"Other {tag} ships on Mondays"]
        refused = tools.dispatch("memory_write", {"text": "x is y"}, group=team)
        assert not refused.startswith("Error")
        global_write = tools.dispatch(
            "memory_write", {"text": "global rule", "group": "global"}, group=team
        )
        assert global_write.startswith("Error") and "only the main group" in global_write
    finally:
        tools.close()
        postgres_server.drop_tenant("global")  # every tenant reads it: leave it empty
