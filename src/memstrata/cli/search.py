"""``memstrata search``, ``reindex`` and ``context``: retrieval and the prompt context."""

from __future__ import annotations

from datetime import UTC, datetime

import click
from rich.text import Text

from ..storage.layers import SEARCHABLE as LAYERS  # not memory.search: the engine loads in search()
from .base import console, json_option, open_memory, print_json, workspace_options

__all__ = ["DEFAULT_BUDGET", "context", "reindex", "search"]

DEFAULT_BUDGET = 2000  # tokens: room for the core files, a few facts and the last turns


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
@click.option(
    "--k",
    "-k",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    help="How many hits to return at most.",
)
@click.option(
    "--layer", "layers", multiple=True, type=click.Choice(sorted(LAYERS)), help="Only this layer."
)
@click.option("--session", "-s", default=None, help="Only this session.")
@click.option("--since", default=None, help="Only chunks from this time on (ISO 8601).")
@click.option("--until", default=None, help="Only chunks up to this time (ISO 8601).")
@click.option(
    "--source",
    type=click.Choice(["user", "agent", "tool", "import"]),
    default=None,
    help="Only chunks from this source (who wrote them).",
)
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
    from rich.table import Table

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
            # rich.progress only here: importing it costs `search` 36 ms of start-up
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TaskID,
                TextColumn,
                TimeElapsedColumn,
            )

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


@click.command()
@workspace_options
@click.argument("prompt")
@click.option(
    "--budget",
    type=click.IntRange(min=1),
    default=DEFAULT_BUDGET,
    show_default=True,
    help="Token budget of the whole context.",
)
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
