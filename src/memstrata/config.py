"""Settings, and where they come from.

The library takes explicit arguments (``Memory.open(path, **settings)``) and
reads no environment variable. Only entry points (the CLI, the MCP server,
the doctor) read ``os.environ`` and hand it to ``resolve_root`` (for
``$MEMSTRATA_HOME``) and ``settings_from_env`` (the variables of ``ENV_SETTINGS``),
and call ``load_settings`` to read ``memstrata.toml``; ``workspace_settings``
puts the two together, the environment over the file.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, TypedDict

from .errors import InvalidInput
from .model import Embedder, SummarizerLike

__all__ = [
    "CONFIG_FILE",
    "ENV_DATABASE_URL",
    "ENV_HOME",
    "ENV_SETTINGS",
    "Settings",
    "SettingsFields",
    "is_database",
    "load_settings",
    "local_folder",
    "resolve_root",
    "settings_from_env",
    "workspace_location",
    "workspace_settings",
]

ENV_HOME = "MEMSTRATA_HOME"
ENV_DATABASE_URL = "MEMSTRATA_DATABASE_URL"  # a workspace on PostgreSQL; before ENV_HOME
#: The environment variables the entry points honour, and the setting each gives.
ENV_SETTINGS = {
    "MEMSTRATA_SUMMARIZER": "summarizer",
    "MEMSTRATA_SUMMARY_MODEL": "summary_model",
    "MEMSTRATA_EMBED_MODEL": "embed_model",
    "MEMSTRATA_EMBED_TOKENIZER": "embed_tokenizer",
}
CONFIG_FILE = "memstrata.toml"
DEFAULT_HOME = Path("~/.memstrata/workspace")


@dataclass(frozen=True, slots=True)
class Settings:
    """Tunables of one open workspace (see templates/memstrata.toml for meaning)."""

    flush_every_updates: int = 20
    flush_interval_seconds: float = 5.0
    checkpoint_every_updates: int = 1000
    checkpoint_interval_seconds: float = 30.0
    max_items: int = 0
    lock_timeout_seconds: float = 30.0
    session_state_max_chars: int = 8000
    session_max_turns: int = 1000
    session_max_bytes: int = 2_000_000
    session_keep_turns: int = 200
    working_max_chars: int = 4000
    # A name ("minilm", "static", "hash", "none") or an object implementing the
    # Embedder protocol (Memory.open checks and wraps it: embed.plugged_embedder).
    embedder: str | Embedder = "minilm"
    session_summary_tokens: int = 8000
    forgotten_retention_days: float = 30.0
    # The automatic session summaries: "extractive" (no model), "openai" or
    # "anthropic" (with summary_model; the SDK's own variables give the key);
    # from Python also an object with name and summarize(turns).
    summarizer: str | SummarizerLike = "extractive"
    summary_model: str | None = None
    # Another ONNX model (and its tokenizer.json) for embedder "minilm";
    # another table (no tokenizer) for embedder "static".
    embed_model: str | None = None
    embed_tokenizer: str | None = None
    # A transcript turn's vector mixes its own embedding with its window's
    # (the turns before and after it) by this weight; 0: the turn alone;
    # None: the weight measured for the embedder (index.windows.DEFAULTS).
    context_vectors: float | None = None

    def __post_init__(self) -> None:
        for spec in fields(self):
            value = getattr(self, spec.name)
            if spec.type in ("str | None", "float | None") and value is None:
                continue
            if spec.name == "embedder" and not isinstance(value, (str, Embedder)):
                raise InvalidInput(
                    f"setting embedder must be a name or an object with name, dim and "
                    f"embed(texts), not {value!r}"
                )
            if spec.name == "embedder" and not isinstance(value, str):
                continue  # Memory.open checks it further (embed.plugged_embedder)
            if spec.name == "summarizer" and not isinstance(value, (str, SummarizerLike)):
                raise InvalidInput(
                    f"setting summarizer must be a name or an object with name and "
                    f"summarize(turns), not {value!r}"
                )
            if spec.name == "summarizer" and not isinstance(value, str):
                continue
            if spec.type in ("str", str, "str | None", "str | Embedder", "str | SummarizerLike"):
                if not isinstance(value, str) or not value.strip():
                    raise InvalidInput(f"setting {spec.name} must be a non-empty string")
                continue
            wanted = float if spec.type in ("float", float, "float | None") else int
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise InvalidInput(f"setting {spec.name} must be a number, not {value!r}")
            if wanted is int and not isinstance(value, int):
                raise InvalidInput(f"setting {spec.name} must be a whole number, not {value!r}")
            if value < 0:
                raise InvalidInput(f"setting {spec.name} must not be negative, not {value!r}")
        if self.context_vectors is not None and self.context_vectors > 1:
            raise InvalidInput(
                f"setting context_vectors must be between 0 and 1, not {self.context_vectors!r}"
            )
        if self.flush_every_updates < 1 or self.checkpoint_every_updates < 1:
            raise InvalidInput("flush_every_updates and checkpoint_every_updates must be >= 1")

    @classmethod
    def from_mapping(cls, values: dict[str, Any]) -> Settings:
        """Settings from keyword values; unknown names are an ``InvalidInput``."""
        known = {spec.name for spec in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise InvalidInput(
                f"unknown setting {', '.join(unknown)}; known: {', '.join(sorted(known))}"
            )
        return cls(**values)


class SettingsFields(TypedDict, total=False):
    """``Settings``' fields as keyword arguments (``Memory.open(path, **fields)``),
    so that type checkers and editors know each name and type."""

    flush_every_updates: int
    flush_interval_seconds: float
    checkpoint_every_updates: int
    checkpoint_interval_seconds: float
    max_items: int
    lock_timeout_seconds: float
    session_state_max_chars: int
    session_max_turns: int
    session_max_bytes: int
    session_keep_turns: int
    working_max_chars: int
    embedder: str | Embedder
    session_summary_tokens: int
    forgotten_retention_days: float
    summarizer: str | SummarizerLike
    summary_model: str | None
    embed_model: str | None
    embed_tokenizer: str | None
    context_vectors: float | None


_URL = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://")
_POSTGRES = frozenset({"postgres", "postgresql"})


def workspace_location(location: str | os.PathLike[str]) -> Path | str:
    """Where a workspace is: a folder on this machine (a ``Path``), or the URL
    of a PostgreSQL database (a ``str``). Any other URL is ``InvalidInput`` (it
    would otherwise become a folder named like ``https:``)."""
    text = os.fspath(location)
    found = _URL.match(text)
    if found is None:
        return Path(text).expanduser()
    scheme = found.group("scheme").lower()
    if scheme in _POSTGRES:
        return text
    raise InvalidInput(
        f"{_shown(text)!r} is a {scheme}:// URL: a workspace is a folder or a postgresql:// URL"
    )


def local_folder(location: str | os.PathLike[str]) -> Path:
    """``location`` where only a folder on this machine will do (``export
    --to``...): a database URL is ``InvalidInput`` in one line."""
    found = workspace_location(location)
    if isinstance(found, str):
        raise InvalidInput(f"{_shown(found)!r} is a database URL; a folder is needed here")
    return found


def is_database(location: str | os.PathLike[str] | None) -> bool:
    """Whether ``location`` names a database rather than a folder."""
    return location is not None and isinstance(workspace_location(location), str)


def _shown(url: str) -> str:
    """``url`` without its password, for messages."""
    return re.sub(r"(://[^/:@]*):[^/@]*@", r"\1:***@", url)


def resolve_root(workspace: str | os.PathLike[str] | None, env: Mapping[str, str]) -> Path | str:
    """``--workspace`` if given, else ``$MEMSTRATA_DATABASE_URL``, else
    ``$MEMSTRATA_HOME`` (in ``env``, the entry point's environment), else
    ``~/.memstrata/workspace``: a folder, or a database URL."""
    if workspace is not None and str(workspace):
        return workspace_location(workspace)
    for name in (ENV_DATABASE_URL, ENV_HOME):
        if env.get(name):
            return workspace_location(env[name])
    return DEFAULT_HOME.expanduser()


def settings_from_env(env: Mapping[str, str]) -> dict[str, Any]:
    """The settings that the variables of ``ENV_SETTINGS`` in ``env`` give
    (``env`` is the entry point's environment; a blank variable is unset)."""
    given = {name: env.get(var, "").strip() for var, name in ENV_SETTINGS.items()}
    return {name: value for name, value in given.items() if value}


def workspace_settings(workspace: Path, env: Mapping[str, str]) -> dict[str, Any]:
    """The settings of the workspace at ``workspace``: its ``memstrata.toml``
    with the environment's (``settings_from_env``) over it."""
    return {**load_settings(workspace), **settings_from_env(env)}


def load_settings(workspace: Path) -> dict[str, Any]:
    """The ``[memory]`` table of ``workspace/memstrata.toml`` (empty if absent)."""
    path = workspace / CONFIG_FILE
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(f"{path}: not valid TOML: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{path}: not valid UTF-8 at byte {exc.start}") from None
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot read: {exc.strerror}") from exc
    section = data.get("memory", {})
    if not isinstance(section, dict):
        raise InvalidInput(f"{path}: [memory] must be a table")
    try:
        Settings.from_mapping(section)  # validate now, with the file named in the error
    except InvalidInput as exc:
        raise InvalidInput(f"{path}: {exc}") from exc
    return dict(section)
