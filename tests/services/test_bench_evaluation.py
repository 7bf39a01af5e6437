"""Section 6 of the benchmarks: the evaluation on the embedded model, timed and held
against a published accuracy table (one item per suite of Chain-of-Thought, capped)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langchain_openai import ChatOpenAI

from tests.benchmarks.evaluation import evaluation, reference_rows
from tests.benchmarks.report import evaluation_lines

SUITES = ("arithmetic", "multihop", "verify")


def published(path: Path, *, limit: int, accuracy: float) -> Path:
    summary = [
        {
            "loop": "cot",
            "suite": suite,
            "accuracy": accuracy,
            "mean_llm_calls": 1.0,
            "mean_tokens": 100.0,
            "mean_latency": 1.0,
        }
        for suite in SUITES
    ]
    data: dict[str, Any] = {"meta": {"limit": limit, "date": "2026-01-02"}, "summary": summary}
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_the_evaluation_is_timed_and_rows_below_the_published_accuracy_are_named(
    local_model: ChatOpenAI, tmp_path: Path
) -> None:
    # Published at 100%: the small model answers none of the first items, so every
    # suite's row is lower and the section is not met, however fast it ran.
    reference = published(tmp_path / "results.json", limit=1, accuracy=1.0)
    section = evaluation(local_model, limit=1, loops="cot", reference=reference)
    assert section["runs"] == 3 and section["loops"] == ["cot"]
    assert section["seconds"] > 0 and abs(section["minutes"] * 60 - section["seconds"]) < 1
    assert [(row["loop"], row["suite"]) for row in section["rows"]] == [
        ("cot", suite) for suite in SUITES
    ]
    assert all(row["reference_accuracy"] == 1.0 for row in section["rows"])
    assert section["worse_than_reference"] == [f"cot/{suite}" for suite in SUITES]
    assert section["met"] is False and section["reference_date"] == "2026-01-02"
    text = "\n".join(evaluation_lines(section))
    assert "lower in cot/arithmetic, cot/multihop, cot/verify" in text
    assert "| cot | multihop | 0% (100%) | 1.0 (1.0) |" in text


def test_a_table_made_with_another_limit_is_not_compared(tmp_path: Path) -> None:
    reference = published(tmp_path / "results.json", limit=10, accuracy=0.5)
    assert reference_rows(reference, 10)[0][("cot", "verify")]["accuracy"] == 0.5
    assert reference_rows(reference, 1) == ({}, "")
    assert reference_rows(tmp_path / "missing.json", 10) == ({}, "")


def test_a_skipped_section_says_why() -> None:
    assert evaluation_lines({"skipped": "--no-local"})[-2] == "Not run: --no-local."
    assert evaluation_lines(None)[-2] == "Not run."
