"""The PostgreSQL campaign's lost connections: the server ends a writer's
connections at random instants, and the writer carries on.

Each round runs a writer (``pg_writes.CHILD``, flag ``survive``) for a fixed
number of calls, its connections named (``application_name``) so that the
parent can end them, and only them: once it has opened the tenant, every few
milliseconds the parent calls
``pg_terminate_backend`` on them (mostly those inside a transaction, now and
then the idle ones of the pool too). A call that fails says so (``E``) and
the writer makes the next; a call that returned is acknowledged and must be
there (``pg_writes.check``, through ``pg_kills.check_tenant``), as after a
kill. This is what found that a transaction whose connection died while its
caller carried on was passed off as committed (``connect.Database``).

The app's role may end its own role's backends: no superuser is needed, and
no other client's connection is touched.
"""

from __future__ import annotations

import subprocess
import threading
import time
import uuid
from random import Random
from urllib.parse import urlencode, urlsplit, urlunsplit

import psycopg

from .common import Attack, Progress, acks, child_env, child_error, quiet
from .pg_kills import CHILD_TIMEOUT, KILL_MODES, check_tenant, child_command, new_mark
from .pg_writes import Expected

_END = (
    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
    "WHERE application_name = %s AND pid <> pg_backend_pid()"
)


def named(url: str, name: str) -> str:
    """``url`` whose connections carry ``application_name`` ``name``."""
    parts = urlsplit(url)
    query = "&".join(q for q in (parts.query, urlencode({"application_name": name})) if q)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))


class Dropper(threading.Thread):
    """Ends the connections named ``name`` at random instants until stopped."""

    def __init__(self, url: str, name: str, rng: Random) -> None:
        super().__init__(daemon=True)
        self.url, self.name, self.rng = url, name, rng
        self.dropped = 0
        self.stopped = threading.Event()

    def run(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            while not self.stopped.wait(self.rng.uniform(0.0, 0.08)):
                busy = self.rng.random() < 0.7  # inside a transaction, or any
                query = _END + (" AND state <> 'idle'" if busy else "")
                row = conn.execute(query.encode(), (self.name,)).fetchone()
                self.dropped += int(row[0]) if row else 0


def run_dropping(
    url: str, command: list[str], name: str, rng: Random
) -> tuple[list[str], str, int]:
    """Run the writer while its connections are ended: its lines, its error
    ("" when it ended as it should), how many connections were ended."""
    dropper = Dropper(url, name, rng)
    with subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=child_env(),
    ) as proc:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # "open": from now on
        dropper.start()
        try:
            out, err = proc.communicate(timeout=CHILD_TIMEOUT)
            out = first + out
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        finally:
            dropper.stopped.set()
            dropper.join()
    lines = [line for line in out.decode().splitlines() if line not in ("open", "done")]
    error = "" if proc.returncode == 0 else child_error(err, proc.returncode)[0]
    return lines, error, dropper.dropped


def run_drops(url: str, rounds: int, ops: int, seed: int, say: Progress = quiet) -> Attack:
    """``rounds`` writers of ``ops`` calls each, cycling through the modes,
    each mode on a tenant of its own (see the module)."""
    attack = Attack("postgres/drops", seed=seed)
    rng = Random(seed)
    started = time.perf_counter()
    run = uuid.uuid4().hex[:8]
    tenants = {mode: f"drops-{mode}-{run}" for mode in KILL_MODES}
    marks = {mode: new_mark(mode[:3]) for mode in KILL_MODES}
    expected = {mode: Expected() for mode in KILL_MODES}
    for number in range(rounds):
        mode = KILL_MODES[number % len(KILL_MODES)]
        round_seed = rng.randrange(2**32)
        name = f"memstrata-drops-{run}-{number}"
        target = named(url, name)
        command = child_command(
            target, tenants[mode], mode, marks[mode], round_seed, ops, "survive"
        )
        with attack.attempt(f"round {number} ({mode})", round_seed) as attempt:
            lines, error, dropped = run_dropping(url, command, name, Random(round_seed))
            if error:
                attempt.fail("child_error", error)
            expected[mode].take(lines)
            attack.counts["acknowledged"] += sum(1 for tag, _ in acks(lines) if tag == "A")
            attack.counts["failed_calls"] += sum(1 for line in lines if line.startswith("E "))
            attack.counts["connections_ended"] += dropped
            check_tenant(url, tenants[mode], mode, expected[mode], attempt)
        say(f"drop round {number + 1}/{rounds}: {attack.lost} lost")
    attack.seconds = time.perf_counter() - started
    return attack
