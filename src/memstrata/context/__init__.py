"""The live context: token counting and the conversation window (Qanot's thresholds).

``tokens`` counts (the seeds' estimate, or exact offline BPE counts with the
``tokens`` extra); ``window`` keeps the messages an agent sends its model and
snips, buffers, compacts and recovers at 40 / 50 / 60 % of the limit.
"""

from __future__ import annotations

from .tokens import (
    ENCODINGS,
    ESTIMATE,
    EstimateCounter,
    ExactCounter,
    TokenCounter,
    counter,
    exact_counter,
)
from .window import (
    COMPACTION_TEMPLATE,
    ContextWindow,
    Message,
    WindowEvent,
    WindowSettings,
    asks_where_we_were,
    compaction_marker,
    truncate_tool_result,
)

__all__ = [
    "COMPACTION_TEMPLATE",
    "ENCODINGS",
    "ESTIMATE",
    "ContextWindow",
    "EstimateCounter",
    "ExactCounter",
    "Message",
    "TokenCounter",
    "WindowEvent",
    "WindowSettings",
    "asks_where_we_were",
    "compaction_marker",
    "counter",
    "exact_counter",
    "truncate_tool_result",
]
