"""Real LangChain agents with scripted chat models (offline), shared by the LangGraph
adapter's test files."""

from __future__ import annotations

from typing import Any, Literal

from harness import Harness
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.tools import tool as lc_tool
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from agent_runtime.session import SessionStore
from signoff.langgraph import LangGraphAgent


def posted_cards(bot: Harness) -> list[dict[str, Any]]:
    return [p for p in bot.slack.called("chat.postMessage") if p.get("blocks")]


class ScriptedChatModel(GenericFakeChatModel):
    """LangChain's own fake chat model, scripted; tools are bound by the script itself."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self


def gated_chat_agent(
    model: ScriptedChatModel,
    mode: Literal["batched", "per_call"],
    saver: AsyncSqliteSaver,
    sessions: SessionStore,
    deleted: list[list[str]],
) -> LangGraphAgent:
    """A LangChain agent of ``model`` whose ``delete_files`` (noting its paths in
    ``deleted``) waits for a human, in ``mode``."""

    @lc_tool
    def delete_files(paths: list[str]) -> str:
        """Delete files."""
        deleted.append(paths)
        return f"deleted {len(paths)}"

    gate = HumanInTheLoopMiddleware(interrupt_on={"delete_files": True}, interrupt_mode=mode)
    return LangGraphAgent(
        create_agent(model, tools=[delete_files], middleware=[gate], checkpointer=saver),
        input=lambda text: {"messages": [{"role": "user", "content": text}]},
        output=lambda values: str(values["messages"][-1].content),
        session_store=sessions,
    )
