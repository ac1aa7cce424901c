"""``PostgresFactStore``: one tenant's long-term facts in PostgreSQL, a
``stores.protocol.FactStore``.

Tables (``schema``, each under the tenant policy): ``memstrata_facts`` (one
row per item: ``Item.to_dict`` as jsonb, the de-duplication key of a live
item, ``seq`` the order first put), ``memstrata_forgotten``
(``Forgotten.to_dict`` and when), ``memstrata_fact_state`` (the lsn).

* **The database is the truth; RAM is its copy.** Reads (``items``,
  ``live_by_key``, ``newest`` ...) touch no database: they are answered by a
  ``LongTermStore`` holding exactly what the tenant's rows hold, loaded at
  open, so the rules of the embedded store (order first put, restore,
  forgotten, de-duplication keys) are the same code.
* **One record, one transaction.** ``apply`` locks the tenant's lsn row
  (``FOR UPDATE``), so writers of one tenant apply records one at a time;
  a record not above the database's lsn changes nothing (replaying is
  harmless); otherwise its rows and the new lsn commit together, and RAM
  takes the record only after the commit. When another writer moved the
  database past what RAM holds, RAM is loaded again inside that transaction
  first, so a write is always decided on the database's state.
* ``reset`` replaces the tenant's rows in one transaction; ``lsn = n``
  (the engine raising it to its journal) is stored too.
* No driver exception leaves it (``connect.errors``); it is not thread-safe
  (the engine holds its lock around every call).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from datetime import datetime
from types import MappingProxyType
from typing import TYPE_CHECKING

from ..model import Item, now, parse_time_or_none
from ..storage.journal import Record
from ..stores.longterm import OP_DELETE, OP_PUT, RESTORABLE, Forgotten, LongTermStore
from .connect import Database, check_tenant

if TYPE_CHECKING:
    from .connect import Connection

__all__ = ["PostgresFactStore"]


class PostgresFactStore:
    """The long-term facts of ``tenant`` on the database at ``url`` (a URL, or
    an open ``Database`` the caller keeps)."""

    def __init__(self, url: str | Database, tenant: str) -> None:
        self.tenant = check_tenant(tenant)
        self._owned = isinstance(url, str)
        self._db = Database.shared(url) if isinstance(url, str) else url
        self._ram = LongTermStore()
        try:
            with self._tx("load the long-term facts") as conn:
                self._load(conn)
        except BaseException:
            self.close()
            raise

    # -- reads (RAM) -----------------------------------------------------------------

    @property
    def items(self) -> Mapping[str, Item]:
        return MappingProxyType(self._ram.items)

    @property
    def forgotten(self) -> Mapping[str, Forgotten]:
        return MappingProxyType(self._ram.forgotten)

    @property
    def lsn(self) -> int:
        return self._ram.lsn

    @lsn.setter
    def lsn(self, value: int) -> None:
        with self._tx("store the long-term lsn") as conn:
            self._store_lsn(conn, value)
        self._ram.lsn = value

    def live_by_key(self, key: str) -> Item | None:
        return self._ram.live_by_key(key)

    def find_live(self, text: str, user: str | None = None) -> Item | None:
        return self._ram.find_live(text, user)

    def newest(self, accept: Callable[[Item], bool], limit: int | None) -> list[Item]:
        return self._ram.newest(accept, limit)

    def unused_id(self) -> str:
        return self._ram.unused_id()

    # -- writes ----------------------------------------------------------------------

    def apply(self, record: Record) -> None:
        """Apply one journal record in one transaction (see the module)."""
        if record.lsn <= self._ram.lsn:
            return
        with self._tx("write long-term facts") as conn:
            conn.execute(
                "INSERT INTO memstrata_fact_state (tenant, lsn) VALUES (%s, 0) "
                "ON CONFLICT (tenant) DO NOTHING",
                (self.tenant,),
            )
            row = conn.execute("SELECT lsn FROM memstrata_fact_state FOR UPDATE").fetchone()
            stored = int(row[0]) if row else 0
            if stored != self._ram.lsn:
                self._load(conn)  # another writer moved on: decide on what it wrote
            if record.lsn <= stored:
                return
            if record.op == OP_PUT:
                self._put(conn, [Item.from_dict(data) for data in record.data["items"]])
            elif record.op == OP_DELETE:
                self._delete(conn, record)
            self._store_lsn(conn, record.lsn)
        self._ram.apply(record)

    def reset(
        self,
        items: dict[str, Item],
        lsn: int,
        keys: dict[str, str] | None = None,
        forgotten: dict[str, Forgotten] | None = None,
    ) -> None:
        """Replace the tenant's whole state in one transaction."""
        with self._tx("replace the long-term facts") as conn:
            conn.execute("DELETE FROM memstrata_facts")
            conn.execute("DELETE FROM memstrata_forgotten")
            self._put(conn, list(items.values()))
            self._forget(conn, list((forgotten or {}).values()))
            self._store_lsn(conn, lsn)
        self._ram.reset(dict(items), lsn, keys, forgotten)

    def expire_forgotten(self, before: datetime) -> None:
        with self._tx("expire forgotten facts") as conn:
            conn.execute("DELETE FROM memstrata_forgotten WHERE at < %s", (before,))
        self._ram.expire_forgotten(before)

    def close(self) -> None:
        """Let go of the shared pool (when this store opened it)."""
        if self._owned:
            self._owned = False
            self._db.release()

    # -- internals -------------------------------------------------------------------

    def _tx(self, doing: str) -> AbstractContextManager[Connection]:
        return self._db.transaction(self.tenant, doing)

    def _load(self, conn: Connection) -> None:
        """RAM := the tenant's rows."""
        items = {}
        for (data,) in conn.execute("SELECT item FROM memstrata_facts ORDER BY seq"):
            item = Item.from_dict(data)
            items[item.id] = item
        forgotten = {}
        for (data,) in conn.execute("SELECT entry FROM memstrata_forgotten ORDER BY at, id"):
            entry = Forgotten.from_dict(data)
            forgotten[entry.item.id] = entry
        row = conn.execute("SELECT lsn FROM memstrata_fact_state").fetchone()
        self._ram.reset(items, int(row[0]) if row else 0, None, forgotten)

    def _put(self, conn: Connection, items: list[Item]) -> None:
        if not items:
            return
        with conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO memstrata_facts (tenant, id, item, key) "
                "VALUES (%s, %s, %s::jsonb, %s) "
                "ON CONFLICT (tenant, id) DO UPDATE SET item = excluded.item, key = excluded.key",
                [
                    (
                        self.tenant,
                        item.id,
                        _json(item.to_dict()),
                        item.key if item.is_live else None,
                    )
                    for item in items
                ],
            )
            cursor.execute(
                "DELETE FROM memstrata_forgotten WHERE id = ANY(%s)", ([i.id for i in items],)
            )

    def _delete(self, conn: Connection, record: Record) -> None:
        reason = str(record.data.get("reason", ""))
        at = parse_time_or_none(record.data.get("at")) or now()
        ids = [str(item_id) for item_id in record.data["ids"]]
        gone = [self._ram.items[i] for i in dict.fromkeys(ids) if i in self._ram.items]
        conn.execute("DELETE FROM memstrata_facts WHERE id = ANY(%s)", (ids,))
        if reason in RESTORABLE:
            self._forget(conn, [Forgotten(item, at, reason) for item in gone])

    def _forget(self, conn: Connection, entries: list[Forgotten]) -> None:
        if not entries:
            return
        with conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO memstrata_forgotten (tenant, id, entry, at) "
                "VALUES (%s, %s, %s::jsonb, %s) "
                "ON CONFLICT (tenant, id) DO UPDATE SET entry = excluded.entry, at = excluded.at",
                [
                    (self.tenant, entry.item.id, _json(entry.to_dict()), entry.at)
                    for entry in entries
                ],
            )

    def _store_lsn(self, conn: Connection, lsn: int) -> None:
        conn.execute(
            "INSERT INTO memstrata_fact_state (tenant, lsn) VALUES (%s, %s) "
            "ON CONFLICT (tenant) DO UPDATE SET lsn = excluded.lsn",
            (self.tenant, lsn),
        )


def _json(data: object) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))
