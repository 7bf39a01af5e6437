"""What a loop step's logic is handed besides the state: ``Step``.

The node runner (``loopgraphs.nodes.driver``) resolves the run's settings once when a
step starts and hands them to the step's logic with the step's runtime and config, so no
logic looks them up again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from langchain_core.runnables import RunnableConfig

from loopgraphs.nodes.generate import node_caller
from loopgraphs.nodes.model_call import ModelCaller
from loopgraphs.nodes.settings import LoopSettings
from loopgraphs.state import LoopRuntime


@dataclass(frozen=True)
class Step:
    """One run of a loop step.

    Attributes:
        run: The run's settings: the factory's, with the run's context applied
            (``LoopSettings.for_run``).
        runtime: The step's LangGraph runtime (the run's context, store, stream writer).
        config: The step's config.
    """

    run: LoopSettings
    runtime: LoopRuntime
    config: RunnableConfig

    def ask(self, state: Mapping[str, object]) -> ModelCaller:
        """The step's model calls: the run's model, system prompt (as ``state`` makes
        it), middleware, and the state and runtime each request carries."""
        return node_caller(self.run, state, self.runtime)
