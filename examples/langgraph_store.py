"""A LangGraph agent whose long-term memory is a memstrata workspace.

    python examples/langgraph_store.py                   # a scripted chat model, no network
    python examples/langgraph_store.py --workspace ./ws  # keep the workspace to look at

The graph has two nodes: ``remember`` puts what the user said under the
user's namespace (a file, semantic/langgraph.memories.<user>.<hash>.md), and
``answer`` searches that namespace (memstrata's hybrid search) and hands the
best memories to the model. Swap the scripted model for any LangChain chat
model (``ChatOpenAI``, ``ChatAnthropic`` ...) to use a real one.
"""

from __future__ import annotations

import argparse
import tempfile
import uuid
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore

from memstrata.integrations.langgraph import MemstrataStore


class State(TypedDict):
    user: str
    message: str
    answer: str


MODEL = FakeListChatModel(
    responses=[
        "Noted.",
        "Noted.",
        "You like Neapolitan pizza, and your cat is called Miso.",
    ]
)


def remember(state: State, *, store: BaseStore) -> dict[str, str]:
    if state["message"].endswith("?"):
        return {}
    store.put(("memories", state["user"]), uuid.uuid4().hex, {"text": state["message"]})
    return {}


def answer(state: State, *, store: BaseStore) -> dict[str, str]:
    found = store.search(("memories", state["user"]), query=state["message"], limit=3)
    known = "\n".join(f"- {item.value['text']}" for item in found)
    print(f"memories for {state['message']!r}:\n{known}")
    reply = MODEL.invoke(f"What you know about the user:\n{known}\n\nUser: {state['message']}")
    return {"answer": str(reply.content)}


def build(store: BaseStore) -> Any:
    graph = StateGraph(State)
    graph.add_node("remember", remember)
    graph.add_node("answer", answer)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "answer")
    graph.add_edge("answer", END)
    return graph.compile(store=store)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", type=Path, help="keep the workspace here")
    args = parser.parse_args()
    workspace = args.workspace or Path(tempfile.mkdtemp(prefix="memstrata-langgraph-")) / "ws"
    with MemstrataStore.open(workspace) as store:
        app = build(store)
        for message in [
            "I love Neapolitan pizza.",
            "My cat is called Miso.",
            "What do you know about my food and my pet?",
        ]:
            result = app.invoke({"user": "ana", "message": message, "answer": ""})
            print(f"user: {message}\nagent: {result['answer']}")
        print(f"namespaces: {store.list_namespaces()}")
    print(f"workspace: {workspace}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
