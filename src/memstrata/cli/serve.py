"""``memstrata bench`` (LoCoMo recall, search latency), ``memstrata mcp`` (the
MCP server) and ``memstrata serve`` (the memory service for many tenants):
the commands that run something long-lived or heavy."""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

import click

from ..config import settings_from_env
from ..errors import MemstrataError
from .base import ENV_DEBUG, _one_line, memory_opener, workspace_options
from .tokens import database_option, database_url

__all__ = ["OneLineFormatter", "bench", "mcp", "plain_logs", "serve_command"]

_JSON_OUT = click.Path(dir_okay=False, path_type=Path)
_JSON_HELP = "Also write the report to this file."
_EMBEDDERS = click.Choice(["minilm", "static", "hash", "none"])
_EMBEDDER_HELP = (
    "The embedder: the local MiniLM, its static distillation (a token table), "
    "a hashing stand-in, or none (BM25 only)."
)


@click.group(name="bench")
def bench() -> None:
    """Benchmarks anyone can rerun (JSON on stdout, --json to keep it)."""


@bench.command(name="locomo")
@click.option(
    "--data",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help="The LoCoMo data file (locomo10.json).",
)
@click.option("--json", "out", type=_JSON_OUT, default=None, help=_JSON_HELP)
@click.option(
    "--limit-questions",
    type=click.IntRange(min=1),
    default=None,
    help="Ask at most N questions per conversation.",
)
@click.option(
    "--embedder",
    type=_EMBEDDERS,
    default="minilm",
    show_default=True,
    help=_EMBEDDER_HELP,
)
@click.option(
    "--cv",
    is_flag=True,
    help="Leave-one-conversation-out: the relevance floor tuned on the other conversations, "
    "recall and false hits (200 unrelated queries) measured on each.",
)
@click.option(
    "--context-vectors",
    type=click.FloatRange(0.0, 1.0),
    default=None,
    help="The weight of a turn's window in its vector (0: the turn alone); "
    "default: the one measured for the embedder (MiniLM 0.6, others 0).",
)
def bench_locomo(
    data: Path,
    out: Path | None,
    limit_questions: int | None,
    embedder: str,
    cv: bool,
    context_vectors: float | None,
) -> None:
    """Recall@k of memstrata's search on LoCoMo (a fresh workspace per conversation)."""
    from ..benchmarks import locomo
    from ..benchmarks.retrievers import memstrata_retriever

    conversations = locomo.load(data)
    if limit_questions is not None:
        conversations = locomo.limit_questions(conversations, limit_questions)
    if cv:
        from ..benchmarks import locomo_cv

        found = locomo_cv.collect(conversations, embedder, context_vectors)
        _emit({**locomo_cv.cross_validate(found), **_windows(embedder, context_vectors)}, out)
        return
    report = locomo.evaluate(
        conversations,
        lambda conversation: memstrata_retriever(
            conversation, embedder=embedder, context_vectors=context_vectors
        ),
    ).as_json()
    _emit({**report, **_windows(embedder, context_vectors)}, out)


def _windows(embedder: str, setting: float | None) -> dict[str, object]:
    """The report's embedder and the window weight its vectors were made with."""
    from ..index.windows import weight_for

    return {"embedder": embedder, "context_vectors": weight_for(setting, embedder)}


@bench.command(name="search")
@click.option(
    "--items",
    type=click.IntRange(min=1),
    default=10_000,
    show_default=True,
    help="How many synthetic chunks to index.",
)
@click.option(
    "--queries",
    type=click.IntRange(min=1),
    default=200,
    show_default=True,
    help="How many queries to time.",
)
@click.option("--json", "out", type=_JSON_OUT, default=None, help=_JSON_HELP)
@click.option(
    "--embedder",
    type=_EMBEDDERS,
    default="minilm",
    show_default=True,
    help=_EMBEDDER_HELP,
)
@click.option(
    "--keep",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Build the workspace here and keep it (a rerun reuses it; each run's "
    "search-after-a-write phase adds one fact per query to it, so compare rankings "
    "only between runs on the same state); with --backend, the embedded server's data.",
)
@click.option(
    "--backend",
    default=None,
    metavar="URL",
    help="postgresql://…: bench PostgreSQL at N synthetic chunks against its RAM mirror and "
    "the file backend (bench/bench_postgres_search.py; 'embedded' starts a server in the "
    "temp dir).",
)
def bench_search(
    items: int,
    queries: int,
    out: Path | None,
    embedder: str,
    keep: Path | None,
    backend: str | None,
) -> None:
    """Hybrid search latency over N realistic chunks, the query embedding included."""
    if backend is not None:
        from ..benchmarks.postgres_search import run as run_postgres

        url = None if backend == "embedded" else backend
        _emit(run_postgres(items, url=url, queries=queries, embedder=embedder, keep=keep), out)
        return
    from ..benchmarks.search_bench import run

    report = run(items, queries=queries, embedder=embedder, workspace=keep)
    _emit(report, out)


def _emit(report: dict[str, object], out: Path | None) -> None:
    text = json.dumps(report, indent=2)
    click.echo(text)
    if out is not None:
        out.write_text(text + "\n", encoding="utf-8")


class OneLineFormatter(logging.Formatter):
    """Each record on one line, however long (a traceback's line breaks escaped)."""

    def format(self, record: logging.LogRecord) -> str:
        return super().format(record).replace("\r", "\\r").replace("\n", "\\n")


def plain_logs(stream: object = None) -> bool:
    """When stderr is not a terminal (a log file, a service manager's pipe),
    log one plain line per record to it: the MCP SDK's rich handler would
    wrap them at 80 columns and split session ids. A no-op on a terminal or
    when logging is configured already; True when it configured it."""
    target = sys.stderr if stream is None else stream
    isatty = getattr(target, "isatty", None)
    if logging.getLogger().handlers or (callable(isatty) and isatty()):
        return False
    handler = logging.StreamHandler(target)  # type: ignore[arg-type]
    handler.setFormatter(OneLineFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[handler])
    return True


@click.command()
@workspace_options
@click.option("--http", is_flag=True, help="Serve streamable HTTP instead of stdio.")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="With --http: the address to bind; 0.0.0.0 or :: for every address "
    "(beyond loopback needs --token).",
)
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    default=8765,
    show_default=True,
    help="With --http: the port to listen on.",
)
@click.option(
    "--token",
    envvar="MEMSTRATA_MCP_TOKEN",
    show_envvar=True,
    default=None,
    help="Bearer token clients must send (needed to bind beyond loopback); "
    "surrounding whitespace is dropped, an empty one refused.",
)
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    envvar="MEMSTRATA_MCP_ALLOWED_HOSTS",
    show_envvar=True,
    metavar="HOST[:PORT]",
    help="With --http: one more name clients may address the server by (the Host header), "
    "e.g. a DNS name or a proxy's; repeatable. Bound beyond loopback, the bound address, "
    "this machine's hostname and (on 0.0.0.0 or ::) its addresses are allowed already.",
)
@click.option(
    "--main-group",
    envvar="MEMSTRATA_MAIN_GROUP",
    default="main",
    show_default=True,
    help="With --group: the group that may name any other group.",
)
@click.option(
    "--watch/--no-watch",
    default=True,
    show_default=True,
    envvar="MEMSTRATA_WATCH",
    show_envvar=True,
    help="Take in hand edits of MEMORY.md and the other searchable files within a "
    "second while serving (a polling thread; see docs/cli.md).",
)
def mcp(
    workspace: str | None,
    group: str | None,
    http: bool,
    host: str,
    port: int,
    token: str | None,
    allowed_hosts: tuple[str, ...],
    main_group: str,
    watch: bool,
) -> None:
    """Serve the memory tools over MCP (stdio; --http for streamable HTTP).

    With --group, the server acts for that group: its own memory, global
    memory to read, and no other group unless it is the main group."""
    from ..mcp_server import serve

    plain_logs()
    serve(
        memory_opener(workspace, group),  # opened while the client's initialize is answered
        http=http,
        host=host,
        port=port,
        token=token,
        main_group=main_group,
        extra_hosts=allowed_hosts,
        settings=settings_from_env(os.environ),
        watch=watch,
        failed=_open_failed,
    )


def _open_failed(exc: BaseException) -> None:
    """The served memory did not open: say it as any command would, and leave."""
    from ..mcp_server import _leave

    if isinstance(exc, MemstrataError):
        message = f"Error: {_one_line(str(exc))}"
    else:
        message = (
            f"Error: internal error: {type(exc).__name__}: {_one_line(str(exc))}; please "
            f"report it (rerun with {ENV_DEBUG}=1 for the traceback)"
        )
    if os.environ.get(ENV_DEBUG):
        import traceback

        traceback.print_exception(exc)
    click.echo(message, err=True)
    _leave(1)


@click.command(name="serve")
@database_option
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="The address to bind; 0.0.0.0 or :: for every address.",
)
@click.option(
    "--port", type=click.IntRange(1, 65535), default=8765, show_default=True, help="The port."
)
@click.option(
    "--pool-size",
    type=click.IntRange(1, 1000),
    default=8,
    show_default=True,
    help="At most this many connections to the database.",
)
@click.option(
    "--max-open",
    type=click.IntRange(min=1),
    default=100,
    show_default=True,
    help="Keep at most this many tenants' memories open (the least recently used closes).",
)
@click.option(
    "--grace",
    type=click.IntRange(min=0),
    default=30,
    show_default=True,
    help="At shutdown, wait this many seconds at most for requests in flight.",
)
@click.option(
    "--main-group",
    envvar="MEMSTRATA_MAIN_GROUP",
    default=None,
    help="A group whose tokens may name any other group (default: none may).",
)
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    envvar="MEMSTRATA_MCP_ALLOWED_HOSTS",
    show_envvar=True,
    metavar="HOST[:PORT]",
    help="One more name clients may address the server by (the Host header), "
    "e.g. a proxy's; repeatable.",
)
def serve_command(
    database: str,
    host: str,
    port: int,
    pool_size: int,
    max_open: int,
    grace: int,
    main_group: str | None,
    allowed_hosts: tuple[str, ...],
) -> None:
    """Serve the memory tools over streamable HTTP (/mcp) to many tenants.

    Each request's bearer token (see `memstrata tokens`) names its tenant;
    GET /health needs none. One JSON line per request on stderr. SIGTERM or
    SIGINT: requests in flight finish, then the memories close."""
    from ..mcp_server import require_sdk

    url = database_url(database)
    require_sdk()
    from ..mcp_server.service import run

    run(
        url,
        host=host,
        port=port,
        pool_size=pool_size,
        max_open=max_open,
        main_group=main_group,
        extra_hosts=allowed_hosts,
        grace=grace,
    )
