"""``memstrata search`` and ``memstrata reindex`` (issue 5)."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import click
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

from ..config import settings_from_env
from ..memory.search import LAYERS
from .base import console, json_option, open_memory, print_json, workspace_options

__all__ = ["bench", "context", "mcp", "reindex", "search"]


def _date(value: str | None, name: str) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not an ISO date or time", param_hint=name) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


@click.command()
@workspace_options
@click.argument("query")
@click.option("--k", "-k", type=click.IntRange(min=1), default=10, show_default=True)
@click.option(
    "--layer", "layers", multiple=True, type=click.Choice(sorted(LAYERS)), help="Only this layer."
)
@click.option("--session", "-s", default=None, help="Only this session.")
@click.option("--since", default=None, help="Only chunks from this time on (ISO 8601).")
@click.option("--until", default=None, help="Only chunks up to this time (ISO 8601).")
@click.option("--source", type=click.Choice(["user", "agent", "tool", "import"]), default=None)
@click.option("--superseded", is_flag=True, help="Also superseded facts.")
@json_option
def search(
    workspace: str | None,
    group: str | None,
    query: str,
    k: int,
    layers: tuple[str, ...],
    session: str | None,
    since: str | None,
    until: str | None,
    source: str | None,
    superseded: bool,
    as_json: bool,
) -> None:
    """Find memories for QUERY (BM25 and local vectors, fused), with citations."""
    with open_memory(workspace, group) as memory:
        hits = memory.search(
            query,
            k=k,
            layers=layers or None,
            session=session,
            since=_date(since, "--since"),
            until=_date(until, "--until"),
            source=source,
            include_superseded=superseded,
        )
        embedder = memory.index_status()["embedder"]
    if as_json:
        print_json({"query": query, "embedder": embedder, "hits": [h.to_dict() for h in hits]})
        return
    if embedder.startswith("unavailable"):
        console.print(Text(f"warning: search runs on BM25 alone ({embedder})", "yellow"))
    if not hits:
        console.print("Nothing found.")
        return
    table = Table(show_edge=False, pad_edge=False)
    for column in ("score", "where", "layer", "snippet"):
        table.add_column(column, overflow="fold" if column == "snippet" else "ellipsis")
    for hit in hits:
        table.add_row(f"{hit.score:.4f}", Text(hit.citation), hit.layer, Text(hit.snippet))
    console.print(table)


@click.command()
@workspace_options
@click.option("--full", is_flag=True, help="Drop the index and rebuild it from the files.")
@json_option
def reindex(workspace: str | None, group: str | None, full: bool, as_json: bool) -> None:
    """Bring the search index up to date with the files (hand edits included)."""
    with open_memory(workspace, group) as memory:
        if as_json:
            report = memory.reindex(full=full)
        else:
            columns = (
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
            )
            with Progress(*columns, console=console, transient=True) as bar:
                tasks: dict[str, TaskID] = {}

                def progress(stage: str, done: int, total: int) -> None:
                    if stage not in tasks:
                        tasks[stage] = bar.add_task(stage, total=total)
                    bar.update(tasks[stage], completed=done, total=total)

                report = memory.reindex(full=full, progress=progress)
    if as_json:
        print_json(report.to_dict())
        return
    console.print(
        f"Indexed {report.files_indexed} file(s), removed {report.files_removed}; "
        f"{report.chunks} chunk(s), {report.vectors} vector(s) ({report.embedder}) "
        f"in {report.seconds:.2f} s.",
        markup=False,
    )


@click.group(name="bench")
def bench() -> None:
    """Benchmarks anyone can rerun (JSON on stdout, --json to keep it)."""


@bench.command(name="locomo")
@click.option("--data", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True)
@click.option("--json", "out", type=click.Path(dir_okay=False, path_type=Path), default=None)
@click.option("--limit-questions", type=click.IntRange(min=1), default=None)
@click.option(
    "--embedder", type=click.Choice(["minilm", "hash", "none"]), default="minilm", show_default=True
)
def bench_locomo(data: Path, out: Path | None, limit_questions: int | None, embedder: str) -> None:
    """Recall@k of memstrata's search on LoCoMo (a fresh workspace per conversation)."""
    from ..benchmarks import locomo
    from ..benchmarks.retrievers import memstrata_retriever

    conversations = locomo.load(data)
    if limit_questions is not None:
        conversations = locomo.limit_questions(conversations, limit_questions)
    report = locomo.evaluate(
        conversations, lambda conversation: memstrata_retriever(conversation, embedder=embedder)
    ).as_json()
    report["embedder"] = embedder
    _emit(report, out)


@bench.command(name="search")
@click.option("--items", type=click.IntRange(min=1), default=10_000, show_default=True)
@click.option("--queries", type=click.IntRange(min=1), default=200, show_default=True)
@click.option("--json", "out", type=click.Path(dir_okay=False, path_type=Path), default=None)
@click.option(
    "--embedder", type=click.Choice(["minilm", "hash", "none"]), default="minilm", show_default=True
)
@click.option(
    "--keep",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Build the workspace here and keep it (a rerun reuses it).",
)
def bench_search(
    items: int, queries: int, out: Path | None, embedder: str, keep: Path | None
) -> None:
    """Hybrid search latency over N realistic chunks, the query embedding included."""
    from ..benchmarks.search_bench import run

    report = run(items, queries=queries, embedder=embedder, workspace=keep)
    _emit(report, out)


def _emit(report: dict[str, object], out: Path | None) -> None:
    text = json.dumps(report, indent=2)
    click.echo(text)
    if out is not None:
        out.write_text(text + "\n", encoding="utf-8")


@click.command()
@workspace_options
@click.argument("prompt")
@click.option("--budget", type=click.IntRange(min=1), required=True, help="Token budget.")
@click.option("--session", "-s", default=None, help="Session whose state and turns to include.")
@json_option
def context(
    workspace: str | None,
    group: str | None,
    prompt: str,
    budget: int,
    session: str | None,
    as_json: bool,
) -> None:
    """Print the memory context for PROMPT within --budget tokens (--json: with sections)."""
    with open_memory(workspace, group) as memory:
        built = memory.build_context(prompt, session=session, budget_tokens=budget)
    if as_json:
        print_json(built.to_dict())
        return
    click.echo(built.text, nl=False)
    console.print(
        Text(f"\n[{built.tokens} of {budget} tokens ({built.counter})]", "dim"), highlight=False
    )


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
def mcp(
    workspace: str | None,
    group: str | None,
    http: bool,
    host: str,
    port: int,
    token: str | None,
    allowed_hosts: tuple[str, ...],
    main_group: str,
) -> None:
    """Serve the memory tools over MCP (stdio; --http for streamable HTTP).

    With --group, the server acts for that group: its own memory, global
    memory to read, and no other group unless it is the main group."""
    from ..mcp_server import serve

    with open_memory(workspace, group) as memory:
        serve(
            memory,
            http=http,
            host=host,
            port=port,
            token=token,
            main_group=main_group,
            extra_hosts=allowed_hosts,
            settings=settings_from_env(os.environ),
        )
