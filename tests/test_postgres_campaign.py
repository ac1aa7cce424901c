"""Issue 15's durability and isolation bar on a real PostgreSQL, in small:
``bench/pg_campaign.py`` runs the same attacks (``tests/attacks/pg_*.py``)
at full size (50 kills, 8 x 500 writers).

* A writer SIGKILLed at random instants, in the middle of a checkpoint and
  of a compaction, and while it creates its tenant: every acknowledged write
  is there after a fresh open, nothing twice, the files agree, the journal
  rows have no gap.
* Several processes remember() at once on one tenant: all there, once.
* Two tenants writing at once see nothing of each other through any API,
  tool, export or raw query.
"""

from __future__ import annotations

import random

import pytest

from attacks.common import Attack
from attacks.pg_kills import run_kills, run_writers
from attacks.pg_tenants import run_tenants


def failures(attack: Attack) -> str:
    return f"seed {attack.seed}: {attack.to_dict()['failures']}"


@pytest.mark.slow  # writer processes, killed with SIGKILL
def test_sigkill_at_random_instants_loses_no_acknowledged_write(postgres_url: str) -> None:
    attack = run_kills(postgres_url, 5, random.randrange(2**32))
    assert attack.tries == 5 and not attack.failed, failures(attack)


@pytest.mark.slow  # writer processes, killed with SIGKILL
def test_sigkill_inside_a_checkpoint_or_a_compaction_loses_nothing(postgres_url: str) -> None:
    plan = [("checkpoint", "marker"), ("compact", "marker")] * 2
    attack = run_kills(postgres_url, 0, random.randrange(2**32), plan=plan)
    assert not attack.failed, failures(attack)
    # the writer waited on each marker: each kill landed inside its phase
    assert attack.counts["landed_checkpoint"] == attack.counts["landed_compact"] == 2
    assert attack.counts["acknowledged"] > 0


@pytest.mark.slow  # writer processes, killed with SIGKILL
def test_sigkill_while_a_writer_creates_its_tenant(postgres_url: str) -> None:
    attack = run_kills(postgres_url, 0, random.randrange(2**32), plan=[("mix", "opening")] * 2)
    assert not attack.failed, failures(attack)


@pytest.mark.slow  # writer processes, killed with SIGKILL
def test_processes_writing_one_tenant_at_once_store_each_fact_once(postgres_url: str) -> None:
    attack = run_writers(postgres_url, 4, 50, random.randrange(2**32))
    assert not attack.failed, failures(attack)
    assert attack.counts["present"] == attack.counts["acknowledged"] == 200


@pytest.mark.slow  # writer processes, killed with SIGKILL
def test_two_tenants_writing_at_once_see_nothing_of_each_other(postgres_url: str) -> None:
    attack = run_tenants(postgres_url, 40, random.randrange(2**32))
    assert not attack.failed, failures(attack)
    assert attack.leaked == 0 and attack.counts["blind"] == 0
    assert attack.counts["passes"] >= 2 and attack.counts["exported_files"] > 0
