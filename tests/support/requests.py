"""What a real model is asked: a callback handler that records the last message of
every request, where a loop's re-ask goes (``config={"callbacks": [log]}``)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage

from loopgraphs.nodes.parsing.text import content_text


class RequestEnds(BaseCallbackHandler):
    """The text of each request's last message, in the order the requests were sent."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        **_: Any,
    ) -> None:
        self.texts.extend(content_text(prompt[-1].content) for prompt in messages if prompt)
