"""The memory service's bearer tokens (issue 15, item 5): stored as digests,
found without knowing the tenant, and invisible to any query that does not
present the token itself (row-level security, not the queries)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import psycopg
import pytest
from click.testing import CliRunner

import postgres_server
from memstrata.errors import InvalidInput, NotFound
from memstrata.postgres import tokens
from memstrata.postgres.connect import Database
from memstrata.postgres.schema import TOKEN_DIGEST_SETTING


@pytest.fixture
def db(postgres_url: str) -> Iterator[Database]:
    database = Database(postgres_url, max_size=2)
    yield database
    database.close()


def _group() -> str:
    return postgres_server.tenant("g")


def test_a_token_names_its_group_until_revoked(db: Database) -> None:
    group = _group()
    token_id, token = tokens.add(db, group, "laptop")
    assert token.startswith(tokens.PREFIX) and len(token) == 47
    assert tokens.tenant_of(db, token) == group
    [listed] = tokens.list(db, group)
    assert (listed.id, listed.group, listed.label, listed.revoked) == (
        token_id,
        group,
        "laptop",
        False,
    )
    assert token not in json.dumps(listed.to_dict()) and tokens.digest_of(token) not in str(listed)
    revoked = tokens.revoke(db, group, token_id[:5])
    assert revoked.id == token_id and revoked.revoked_at is not None
    assert tokens.tenant_of(db, token) is None
    again = tokens.revoke(db, group, token_id)  # revoking twice changes nothing
    assert again.revoked_at == revoked.revoked_at
    assert [t.revoked for t in tokens.list(db, group)] == [True]


def test_unknown_malformed_and_near_tokens_name_no_group(db: Database) -> None:
    group = _group()
    _, token = tokens.add(db, group)
    near = token[:-1] + ("A" if token[-1] != "A" else "B")
    for bad in ("", "mst_", near, token + "x", " " + token, token.upper(), "mst_\udcff" * 12):
        assert tokens.tenant_of(db, bad) is None, bad
    assert tokens.tenant_of(db, token) == group


def test_a_group_lists_and_revokes_only_its_own_tokens(db: Database) -> None:
    ann, bob = _group(), _group()
    ann_id, ann_token = tokens.add(db, ann, "a")
    bob_id, _ = tokens.add(db, bob, "b")
    assert [t.id for t in tokens.list(db, ann)] == [ann_id]
    assert [t.id for t in tokens.list(db, bob)] == [bob_id]
    with pytest.raises(NotFound):
        tokens.revoke(db, bob, ann_id)  # bob cannot revoke ann's token
    assert tokens.tenant_of(db, ann_token) == ann


def test_revoke_refuses_short_and_malformed_references(db: Database) -> None:
    group = _group()
    token_id, _ = tokens.add(db, group)
    for bad in ("", "ab", token_id[:3], "zzzz", "%%%%", "____", token_id + "%"):
        with pytest.raises(InvalidInput):
            tokens.revoke(db, group, bad)
    with pytest.raises(NotFound):
        tokens.revoke(db, group, "0000" if not token_id.startswith("0000") else "ffff")
    assert not tokens.list(db, group)[0].revoked


def test_an_ambiguous_prefix_is_refused(db: Database) -> None:
    group = _group()
    first, _ = tokens.add(db, group)
    second, _ = tokens.add(db, group)
    with psycopg.connect(db.url, autocommit=True) as conn, conn.transaction():
        conn.execute("SELECT set_config('memstrata.tenant', %s, true)", (group,))
        conn.execute("UPDATE memstrata_tokens SET id = %s WHERE id = %s", ("beef01", first))
        conn.execute("UPDATE memstrata_tokens SET id = %s WHERE id = %s", ("beef02", second))
    with pytest.raises(InvalidInput, match="several"):
        tokens.revoke(db, group, "beef")
    assert tokens.revoke(db, group, "beef02").id == "beef02"


def test_bad_groups_and_labels_are_refused(db: Database) -> None:
    for group in ("", "A", "a b", "../x", "x" * 64):
        with pytest.raises(InvalidInput):
            tokens.add(db, group)
    with pytest.raises(InvalidInput):
        tokens.add(db, _group(), "x" * 201)
    with pytest.raises(InvalidInput):
        tokens.add(db, _group(), "a\x00b")


def test_no_query_sees_a_token_without_its_tenant_or_its_digest(db: Database) -> None:
    ann, bob = _group(), _group()
    _, ann_token = tokens.add(db, ann)
    _, bob_token = tokens.add(db, bob)
    with psycopg.connect(db.url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM memstrata_tokens").fetchone() == (0,)
        with conn.transaction():  # a guessed digest shows nothing
            conn.execute("SELECT set_config(%s, %s, true)", (TOKEN_DIGEST_SETTING, "0" * 64))
            assert conn.execute("SELECT count(*) FROM memstrata_tokens").fetchone() == (0,)
        with conn.transaction():  # ann's digest shows ann's token, read-only
            conn.execute(
                "SELECT set_config(%s, %s, true)",
                (TOKEN_DIGEST_SETTING, tokens.digest_of(ann_token)),
            )
            rows = conn.execute("SELECT tenant FROM memstrata_tokens").fetchall()
            assert rows == [(ann,)]
            changed = conn.execute("UPDATE memstrata_tokens SET revoked_at = now()")
            assert changed.rowcount == 0
            assert conn.execute("DELETE FROM memstrata_tokens").rowcount == 0
        with conn.transaction():  # as ann: ann's tokens only
            conn.execute("SELECT set_config('memstrata.tenant', %s, true)", (ann,))
            assert {r[0] for r in conn.execute("SELECT tenant FROM memstrata_tokens")} == {ann}
        assert conn.execute("SELECT count(*) FROM memstrata_tokens").fetchone() == (0,)
    with psycopg.connect(postgres_server.admin_url(), autocommit=True) as admin:
        stored = admin.execute(
            "SELECT id, tenant, digest, label FROM memstrata_tokens WHERE tenant = ANY(%s)",
            ([ann, bob],),
        ).fetchall()
    assert len(stored) == 2  # there, hidden by the policies
    assert not any(secret in str(stored) for secret in (ann_token, bob_token))
    assert not any(secret[len(tokens.PREFIX) :] in str(stored) for secret in (ann_token, bob_token))


def test_a_revoked_token_is_hidden_from_its_digest_too(db: Database) -> None:
    group = _group()
    token_id, token = tokens.add(db, group)
    tokens.revoke(db, group, token_id)
    with psycopg.connect(db.url, autocommit=True) as conn, conn.transaction():
        conn.execute(
            "SELECT set_config(%s, %s, true)", (TOKEN_DIGEST_SETTING, tokens.digest_of(token))
        )
        assert conn.execute("SELECT count(*) FROM memstrata_tokens").fetchone() == (0,)


# -- the command line ----------------------------------------------------------------------


def _cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    from memstrata.cli import cli

    result = CliRunner().invoke(cli, ["tokens", *args], env=env)
    return result.exit_code, result.output


def test_tokens_add_list_revoke_from_the_command_line(postgres_url: str, db: Database) -> None:
    group = _group()
    code, out = _cli("add", "--group", group, "--label", "ci", "--database", postgres_url, "--json")
    assert code == 0, out
    added = json.loads(out)
    assert added["group"] == group and added["label"] == "ci"
    assert tokens.tenant_of(db, added["token"]) == group
    env = {"MEMSTRATA_DATABASE_URL": postgres_url}
    code, out = _cli("list", "--group", group, "--json", env=env)
    assert code == 0, out
    listed = json.loads(out)
    assert [t["id"] for t in listed] == [added["id"]] and added["token"] not in out
    code, out = _cli("list", "--group", group, env=env)
    assert code == 0 and added["id"] in out and "ci" in out and added["token"] not in out
    code, out = _cli("revoke", added["id"][:6], "--group", group, env=env)
    assert code == 0, out
    assert tokens.tenant_of(db, added["token"]) is None
    code, out = _cli("revoke", "ffff", "--group", group, env=env)
    assert code == 1 and len(out.strip().splitlines()) == 1 and "no token" in out


def test_tokens_add_prints_the_token_once_in_plain_text(postgres_url: str, db: Database) -> None:
    group = _group()
    code, out = _cli("add", "--group", group, "--database", postgres_url)
    assert code == 0, out
    [token] = [word for word in out.split() if word.startswith(tokens.PREFIX)]
    assert tokens.tenant_of(db, token) == group


def test_tokens_without_a_database_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMSTRATA_DATABASE_URL", raising=False)
    code, out = _cli("list", "--group", "a")
    assert code == 2 and "--database" in out  # a usage error: the option is required
    code, out = _cli("list", "--group", "a", "--database", "/tmp/not-a-url")
    assert code == 1 and len(out.strip().splitlines()) == 1 and "postgresql://" in out
