"""Shared fixtures: every test runs with its own $MEMSTRATA_HOME."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

import postgres_server
from memstrata import Memory
from memstrata.capture import rulecache
from memstrata.storage.workspace import Workspace
from workspaces import fresh

# No test may depend on the machine's speed: a loaded CI machine must not turn
# main red through hypothesis' deadline or its "input generation is slow" and
# "data too large" checks. A test's own suppress list replaces this one, so it
# names both again (tests/test_api.py checks every settings in tests/).
settings.register_profile(
    "memstrata",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile("memstrata")


@pytest.fixture(scope="session", autouse=True)
def isolated_rule_cache() -> Iterator[Path]:
    """No test may write the compiled capture rules to ~/.cache/memstrata: one
    temporary folder for the session, in this process (``rulecache.use_dir``)
    and in the processes tests start (``$MEMSTRATA_CACHE_DIR``)."""
    folder = Path(tempfile.mkdtemp(prefix="memstrata-rule-cache-"))
    before = os.environ.get(rulecache.ENV_CACHE_DIR)
    os.environ[rulecache.ENV_CACHE_DIR] = str(folder)
    rulecache.use_dir(folder)
    yield folder
    if before is None:
        del os.environ[rulecache.ENV_CACHE_DIR]
    else:
        os.environ[rulecache.ENV_CACHE_DIR] = before
    rulecache.use_dir(rulecache.dir_from(os.environ))
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No test may touch the real ~/.memstrata."""
    home = tmp_path / "home-workspace"
    monkeypatch.setenv("MEMSTRATA_HOME", str(home))
    return home


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """Path of a fresh (not yet created) workspace."""
    return tmp_path / "ws"


@pytest.fixture
def memory(ws: Path) -> Iterator[Memory]:
    with Memory.open(ws) as opened:
        yield opened


@pytest.fixture
def workspace(ws: Path) -> Workspace:
    """A created workspace (layout in place), for the modules below ``Memory``."""
    return fresh(ws)


@pytest.fixture(scope="session", autouse=True)
def _postgres_server() -> Iterator[None]:
    """The one embedded PostgreSQL of the session: started on first use
    (``postgres_server``), stopped here at the end."""
    yield
    postgres_server.stop()


@pytest.fixture(scope="session")
def postgres_url() -> str:
    """The app role's URL on the session's PostgreSQL (skips when there is none)."""
    return postgres_server.app_url()


AGENT_LOOP = Path(__file__).resolve().parent.parent / "examples" / "agent_loop.py"


@pytest.fixture(scope="session")
def agent_loop(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """``examples/agent_loop.py --workspace W`` run once for the session (a
    subprocess with the scripted model): the workspace it leaves and what it
    printed. Tests read them; none may change the workspace's meaning."""
    ws = tmp_path_factory.mktemp("agent-loop") / "ws"
    done = subprocess.run(
        [sys.executable, str(AGENT_LOOP), "--workspace", str(ws)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return ws, done.stdout
