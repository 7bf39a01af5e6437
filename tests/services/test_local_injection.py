"""The prompt-injection benchmark (tests/benchmarks/bench_injection.py) on the real embedded
llama.cpp model (SmolLM2-135M)."""

from __future__ import annotations

import pytest


@pytest.mark.integration
def test_injection_benchmark_runs_on_the_local_model(local_server) -> None:
    """One case per condition of tests/benchmarks/bench_injection.py on the real model."""
    from loopgraphs.models import local_chat_model
    from tests.benchmarks.bench_injection import MAX_TOKENS, measure

    report = measure(local_chat_model(local_server, max_tokens=MAX_TOKENS), limit=1, workers=1)
    for condition in ("fenced", "unfenced", "clean_fenced"):
        figures = report["summary"][condition]
        assert figures["runs"] == 1 and figures["errors"] == 0, report["details"]
