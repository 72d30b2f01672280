"""AG-UI for agents: run events as AG-UI 1.0 events, and ``RunAgentInput`` as run input."""

from .events import AguiEvent, AguiInterrupt, agui_interrupt
from .input import AguiInput, ResumeAnswer, interrupt_responses, parse_run_input
from .run import run_agui

__all__ = [
    "AguiEvent",
    "AguiInput",
    "AguiInterrupt",
    "ResumeAnswer",
    "agui_interrupt",
    "interrupt_responses",
    "parse_run_input",
    "run_agui",
]
