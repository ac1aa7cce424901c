"""Search candidates found in SQL, for ``PostgresIndex`` (an
``index.hybrid.CandidateSource``): the lists ``hybrid`` fuses, with the same
fusion, context, factors and citations as the RAM mirror's lists.

* **Words**: the ``tsv`` column (``to_tsvector('simple', title || ' ' ||
  text)``) through its GIN index, ranked by ``ts_rank_cd`` (cover density,
  normalisation 1: divided by 1 + the log of the chunk's length, as BM25 also
  weighs a short chunk more), best first, ties by id. The query is parsed by the same
  parser and configuration as the column (lower-cased, not stemmed), its
  words OR-ed, function words dropped (``text.STOPWORDS``, unless nothing
  else is left) -- the mirror's BM25 differs: Porter stems, idf, length
  normalisation, CJK bigrams (``docs/postgres.md`` measures the difference).
* **Vectors**: ``ORDER BY embedding <=> q LIMIT n`` on the HNSW index (cosine;
  the ``vector(384)`` column), with ``hnsw.ef_search`` and
  ``hnsw.iterative_scan = relaxed_order`` set for the transaction only: rows
  a filter drops after the index scan (the tenant's row-level security
  policy first of all, then live, layers ...) make pgvector scan on, up to
  ``hnsw.max_scan_tuples``, instead of returning fewer rows than asked. The
  rows come back re-sorted by their exact score (relaxed order may swap
  near ones); a score is the inner product with the query (``1 - distance``
  here): the cosine for a unit vector, and for a transcript turn's mix with
  its window exactly the mix of the two cosines (``index.windows``), as the
  RAM matrix scores it.
* **Filters** SQL checks exactly (live, layers, session, source, path
  prefix) are in the ``WHERE``; the time window (since, until) is checked in
  RAM by the caller.
* Reads only, in one transaction with the tenant set (``Database``): a row
  another writer committed after the mirror last followed the log may be
  among them; the caller drops ids its mirror does not hold.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..index.text import STOPWORDS
from .schema import VECTOR_DIM

if TYPE_CHECKING:
    import numpy as np

    from ..index.hybrid import Filters, Ranked
    from .connect import Connection

__all__ = ["ITERATIVE_SCAN", "STOP_LIST", "nearest_rows", "nearest_sql", "settings", "word_rows"]

ITERATIVE_SCAN = "relaxed_order"
STOP_LIST = sorted(STOPWORDS)

# The query's lexemes as the column's parser and configuration make them,
# function words dropped unless nothing else is left, OR-ed into a tsquery
# (each lexeme quoted: a lexeme may hold tsquery's operators).
_QUERY = """
WITH said AS (SELECT lexeme FROM unnest(to_tsvector('simple', %s))),
kept AS (SELECT lexeme FROM said WHERE lexeme <> ALL(%s)),
used AS (
    SELECT lexeme FROM kept
    UNION ALL SELECT lexeme FROM said WHERE NOT EXISTS (SELECT FROM kept)
),
q AS (
    SELECT string_agg(
        '''' || replace(replace(lexeme, '\\', '\\\\'), '''', '''''') || '''', ' | '
    )::tsquery AS q
    FROM used
)
SELECT c.id, ts_rank_cd(c.tsv, q.q, 1) AS score
FROM memstrata_chunks c, q
WHERE q.q IS NOT NULL AND c.tsv @@ q.q AND {where}
ORDER BY score DESC, c.id
LIMIT %s
"""

_NEAREST = """
SELECT v.chunk_id, 1 + (v.embedding <#> %b) AS distance
FROM memstrata_vectors v {join}
WHERE v.embedding IS NOT NULL AND {where}
ORDER BY v.embedding <=> %b
LIMIT %s
"""


def where(filters: Filters) -> tuple[str, list[Any]]:
    """The SQL condition on ``memstrata_chunks c`` for what ``filters`` check
    exactly, and its parameters (``true`` when none)."""
    parts: list[str] = []
    params: list[Any] = []
    if not filters.include_superseded:
        parts.append("c.live")
    if filters.layers is not None:
        parts.append("c.layer = ANY(%s)")
        params.append(sorted(filters.layers))
    if filters.session is not None:
        parts.append("c.session = %s")
        params.append(filters.session)
    if filters.sessions is not None:
        parts.append("c.session = ANY(%s)")
        params.append(sorted(filters.sessions))
    if filters.source is not None:
        parts.append("c.source = %s")
        params.append(filters.source)
    if filters.path_prefix is not None:
        parts.append("starts_with(c.path, %s)")
        params.append(filters.path_prefix)
    return (" AND ".join(parts) or "true"), params


def settings(conn: Connection, ef_search: int) -> None:
    """``hnsw.ef_search``, the iterative scan, and no sort, for the rest of
    this transaction: the planner cannot know how many rows the tenant's
    policy keeps (the tenant is a setting, not a constant), and where it
    guesses few it sorts every row the policy keeps -- of a big tenant, or
    after a scan of every tenant's vectors -- instead of reading the HNSW
    index in order."""
    conn.execute(
        "SELECT set_config('hnsw.ef_search', %s, true), "
        "set_config('hnsw.iterative_scan', %s, true), set_config('enable_sort', 'off', true)",
        (str(ef_search), ITERATIVE_SCAN),
    )


def word_rows(conn: Connection, query: str, limit: int, filters: Filters) -> Ranked:
    """The ``limit`` best chunks for the words of ``query`` (see the module)."""
    clause, params = where(filters)
    sql = _QUERY.format(where=clause)
    rows = conn.execute(sql.encode(), (query, STOP_LIST, *params, limit)).fetchall()
    return [(int(cid), float(score)) for cid, score in rows]


def nearest_sql(filters: Filters) -> tuple[str, list[Any]]:
    """The statement of ``nearest_rows`` (parameters: the vector, those
    returned, the vector again, the limit)."""
    clause, params = where(filters)
    join = "JOIN memstrata_chunks c ON c.id = v.chunk_id" if clause != "true" else ""
    return _NEAREST.format(join=join, where=clause), params


def nearest_rows(
    conn: Connection, vector: np.ndarray, limit: int, filters: Filters
) -> list[tuple[int, float]]:
    """Up to ``limit`` chunks nearest to ``vector`` by the HNSW index, as
    ``(chunk id, 1 - inner product)``, nearest first (ties by id)."""
    if vector.shape != (VECTOR_DIM,):
        return []
    sql, params = nearest_sql(filters)
    rows = conn.execute(sql.encode(), (vector, *params, vector, limit)).fetchall()
    found = [(int(cid), float(distance)) for cid, distance in rows]
    found.sort(key=lambda row: (row[1], row[0]))
    return found
