"""The node runner: one logic, sync and async drivers, provider quirks."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from langchain_core.runnables import RunnableLambda

from loopgraphs.nodes.errors import failed_calls
from loopgraphs.nodes.model_call import Asker


class LengthFinishReasonError(Exception):
    """Shaped like openai's error for a structured reply cut at max_tokens."""

    def __init__(self) -> None:
        super().__init__("length limit reached")
        usage = SimpleNamespace(
            prompt_tokens=40,
            completion_tokens=8,
            prompt_tokens_details=SimpleNamespace(cached_tokens=30),
        )
        message = SimpleNamespace(content='{"thought": "cut sh')
        self.completion = SimpleNamespace(choices=[SimpleNamespace(message=message)], usage=usage)


def raising(exc: Exception) -> RunnableLambda:
    def fail(_):
        raise exc

    return RunnableLambda(fail)


async def test_truncated_structured_reply_is_returned_not_raised():
    call = Asker(raising(LengthFinishReasonError())).call([])
    for outcome in (call.invoke({}), await call.ainvoke({})):
        assert outcome.reply.content == '{"thought": "cut sh'
        assert outcome.reply.usage_metadata["output_tokens"] == 8
        assert outcome.reply.usage_metadata["input_token_details"]["cache_read"] == 30
        assert outcome.calls == 1
        assert outcome.usage == {"input_tokens": 40, "output_tokens": 8, "cached_tokens": 30}


async def test_other_errors_still_raise_and_count_as_sent():
    call = Asker(raising(KeyError("x"))).call([])
    with pytest.raises(KeyError) as caught:
        call.invoke({})
    assert failed_calls(caught.value) == 1
    with pytest.raises(KeyError) as caught:
        await call.ainvoke({})
    assert failed_calls(caught.value) == 1
