"""Render benchmark results as Markdown."""

from __future__ import annotations

from typing import Any

from tests.benchmarks.floors import FLOORS

INSTRUCTIONS_TARGET = 0.95
"""ReAct's instructions per model call against create_agent's (section 5 counts
LangGraph's own floor beside it)."""


def ratio(s: dict[str, Any] | None, digits: int = 2, unit: str = "×") -> str:
    if not s:
        return "-"
    return f"{s['median']:.{digits}f}{unit} ({s['min']:.{digits}f}–{s['max']:.{digits}f})"


def share(s: dict[str, Any] | None) -> str:
    if not s:
        return "-"
    return f"{100 * s['median']:.1f}% ({100 * s['min']:.1f}–{100 * s['max']:.1f})"


def micro(s: dict[str, Any]) -> str:
    return f"{s['median']:,.0f} ({s['min']:,.0f}–{s['max']:,.0f})"


def seconds(s: dict[str, Any]) -> str:
    return f"{s['median']:.3f} ({s['min']:.3f}–{s['max']:.3f})"


def verdict(met: bool | None) -> str:
    return "-" if met is None else ("yes" if met else "**missed**")


def table(headers: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return [*lines, ""]


def with_middleware(row: dict[str, Any]) -> str:
    """The label of a row measured with pass-through middleware on both sides."""
    count = row.get("middleware") or 0
    return f", {count} pass-through middleware" if count else ""


def summary_rows(results: dict[str, Any]) -> list[list[str]]:
    rows: list[list[str]] = []
    for row in results["overhead"]["react_vs_alternatives"]:
        figure = row["ratio_vs_create_agent"]
        rows.append(
            [
                f"ReAct / create_agent, CPU µs per model call, N={row['tool_calls']}"
                f"{with_middleware(row)} ({row['mode']})",
                ratio(figure),
                "≤ 1.0×",
                verdict(figure["median"] <= 1.0),
            ]
        )
    for row in results["overhead"]["react_vs_alternatives"]:
        rows.append(
            [
                f"ReAct / plain loop, N={row['tool_calls']}{with_middleware(row)} ({row['mode']})",
                ratio(row["ratio_vs_plain"]),
                "-",
                "-",
            ]
        )
    for row in results["concurrency"]:
        target = row.get("target")
        key = target["figure"] if target else "ratio_wall_vs_sequential"
        label = (
            "tool phase / slowest tool"
            if key == "ratio_tool_phase_vs_slowest_tool"
            else "wall / sequential sum"
        )
        rows.append(
            [
                f"{row['scenario']} ({row['mode']}): {label}",
                ratio(row[key]),
                f"≤ {target['max']:.2f}×" if target else "-",
                verdict(row.get("met")),
            ]
        )
    for item in results["economy"]["tot_comparison"]:
        per_branch, batched = item["calls"]
        rows.append(
            [
                "ToT calls, batched/propose vs per_branch/sample "
                f"(b=3, d=3, w={item['beam_width']})",
                f"{batched} vs {per_branch} = {item['ratio_calls_batched_vs_per_branch']:.2f}×",
                "-",
                "-",
            ]
        )
    for row in (results.get("instructions") or {}).get("rows", []):
        rows.append(
            [
                f"ReAct / create_agent, instructions per model call (callgrind), "
                f"N={row['tool_calls']}{with_middleware(row)} ({row['mode']})",
                f"{row['ratio_vs_create_agent']:.3f}×",
                f"≤ {INSTRUCTIONS_TARGET}×",
                verdict(row["ratio_vs_create_agent"] <= INSTRUCTIONS_TARGET),
            ]
        )
    turns = (results.get("chat_turns") or {}).get("react") or {}
    for key, windows in turns.items():
        for label in ("1-5", "28-32", "56-60"):
            if label in windows:
                figure = windows[label]["ratio"]
                rows.append(
                    [
                        f"ReAct / create_agent, CPU per chat turn, turns {label} of a "
                        f"checkpointed thread ({key})",
                        ratio(figure),
                        "≤ 1.0×",
                        verdict(figure["median"] <= 1.0),
                    ]
                )
    timed = results.get("evaluation") or {}
    if "minutes" in timed:
        rows.append(
            [
                f"full evaluation on the embedded model ({timed['runs']} runs, "
                f"--limit {timed['limit']}), minutes",
                f"{timed['minutes']:.1f}",
                f"≤ {timed['target_minutes']:.0f}, accuracy no lower than the published table",
                verdict(timed["met"]),
            ]
        )
    local = results.get("local") or {}
    if "cached_share" in local:
        kinds = ", ".join(local.get("kinds_used", ["run"]))
        rows.append(
            [
                f"local ReAct ({kinds}): prompt tokens from llama.cpp's cache after the first call",
                share(local["cached_share"]),
                "≥ 90%",
                verdict(local["met"]["cached_share"]),
            ]
        )
        if "reused_share" in local:
            rows.append(
                [
                    f"local ReAct ({kinds}): of the tokens the previous call left in the "
                    "cache (its prompt and reply), the share read from it",
                    share(local["reused_share"]),
                    "-",
                    "-",
                ]
            )
        rows.append(
            [
                f"local ReAct ({kinds}): wall time outside model calls",
                share(local["outside_share"]),
                "≤ 2%",
                verdict(local["met"]["outside_share"]),
            ]
        )
    elif local:
        reason = local.get("skipped") or "no run reached the minimum number of model calls"
        rows.append(
            ["local ReAct: cache and time outside the model", f"not measured: {reason}", "-", "-"]
        )
    return rows


def render(results: dict[str, Any]) -> str:
    meta = results["meta"]
    box = meta["machine"]
    config = meta["config"]
    lines = [
        "# loopgraphs benchmarks",
        "",
        f"Run on {meta['date'][:10]} ({meta['date']}), {box['cores']} cores ({box['cpu']}), "
        f"Python {box['python']}, langgraph {box['versions']['langgraph']}, langchain-core "
        f"{box['versions']['langchain-core']}, langchain {box['versions']['langchain']}. "
        f"Load average at start {box['load_average_at_start']}, at end "
        f"{meta.get('load_average_at_end')} (a shared machine: absolute times are noisy, "
        "ratios pair figures measured side by side). "
        f"{'Quick configuration. ' if config['quick'] else ''}"
        f"Took {meta.get('seconds')} s.",
        "",
        *[
            f"Re-run of {', '.join(rerun['sections'])} on {rerun['date']} (load average at "
            f"start {rerun['machine']['load_average_at_start']}, at end "
            f"{rerun.get('load_average_at_end')}; took {rerun.get('seconds')} s)."
            for rerun in meta.get("reruns", [])
        ],
        "",
        "**Sections 1–3 come from a scripted model** (`tests.support.fakes.ScriptedChatModel`: "
        "zero latency, or a fixed injected delay), not from a real provider. Section 4 uses "
        "the real embedded llama.cpp server.",
        "",
        f"Each figure: median (min–max) over {config['repeats']} repeats; a ratio is "
        "computed within each repeat from two figures measured back to back.",
        "",
        "## Summary",
        "",
    ]
    lines += table(["figure", "measured", "target", "met"], summary_rows(results))

    lines += [
        "## 1. Framework overhead per model call (scripted zero-latency model)",
        "",
        "The same conversation (N calls of one zero-latency tool, then an answer) on the "
        "same scripted model. CPU time of the benchmark process per model call, in µs "
        "(the scripted model's own cost included, equal for all three). With middleware, "
        "ReAct and create_agent each get the same three pass-through middleware (model "
        "hooks, a model-call wrapper, a tool-call wrapper); the plain loop has none.",
        "",
    ]
    rows = []
    for row in results["overhead"]["react_vs_alternatives"]:
        us = row["us_per_call"]
        rows.append(
            [
                str(row["tool_calls"]),
                str(row.get("middleware") or 0),
                row["mode"],
                micro(us["loopgraphs"]),
                micro(us["create_agent"]),
                micro(us["plain"]),
                ratio(row["ratio_vs_create_agent"]),
                ratio(row["ratio_vs_plain"]),
            ]
        )
    lines += table(
        [
            "N tools",
            "middleware",
            "mode",
            "loopgraphs ReAct µs",
            "create_agent µs",
            "plain loop µs",
            "ReAct / create_agent",
            "ReAct / plain",
        ],
        rows,
    )
    lines += [
        "Every loop on its scripted scenario (native mode, invoke), against a plain loop "
        "making the same number of model calls:",
        "",
    ]
    rows = [
        [
            row["scenario"],
            str(row["model_calls"]),
            micro(row["us_per_call"]),
            micro(row["plain_us_per_call"]),
            ratio(row["ratio_vs_plain"]),
        ]
        for row in results["overhead"]["loops"]
    ]
    lines += table(["loop", "model calls", "µs per call", "plain loop µs", "ratio"], rows)

    lines += [
        f"## 2. Concurrency (model and tools wait {config['delay_s']} s per call)",
        "",
        "Sequential sum = (model calls + tool calls) × delay. Ideal = the critical path "
        "(calls that must follow one another) over all calls.",
        "",
    ]
    rows = []
    for row in results["concurrency"]:
        rows.append(
            [
                row["scenario"],
                row["mode"],
                str(row["model_calls"]),
                str(row["tool_calls"]),
                seconds(row["wall_s"]),
                f"{row['sequential_s']['median']:.2f}",
                ratio(row["ratio_wall_vs_sequential"]),
                f"{row['ideal_ratio']:.2f}×",
                ratio(row.get("ratio_tool_phase_vs_slowest_tool")),
            ]
        )
    lines += table(
        [
            "scenario",
            "mode",
            "model calls",
            "tool calls",
            "wall s",
            "sequential s",
            "wall / sequential",
            "ideal",
            "tool phase / slowest tool",
        ],
        rows,
    )

    lines += [
        "## 3. Call and token economy (scripted scenarios)",
        "",
        "Tokens are the scripted model's estimate (characters / 4), for comparing prompt "
        "sizes. Budget: the most calls the loop's options allow, whatever the model says.",
        "",
    ]
    rows = []
    for row in results["economy"]["loops"] + results["economy"]["tot"]:
        rows.append(
            [
                row["scenario"],
                str(row["model_calls"]),
                str(row["tool_calls"]),
                str(row["input_tokens"]),
                str(row["output_tokens"]),
                f"{row['budget']} ({row['budget_formula']})" if row["budget"] else "-",
                f"{row['seed_calls']} ({row['seed_formula']})"
                if row["seed_calls"]
                else row["seed_formula"],
            ]
        )
    lines += table(
        [
            "scenario",
            "model calls",
            "tool calls",
            "prompt tokens",
            "output tokens",
            "budget (formula)",
            "seed formula",
        ],
        rows,
    )

    local = results.get("local") or {}
    lines += ["## 4. Local model (embedded llama.cpp, SmolLM2-135M)", ""]
    if not local or "skipped" in local:
        lines += [not_run(local), ""]
    else:
        settings = local["settings"]
        threads = settings.get("llama_threads", "all cores")
        lines += [
            f"{local['model']}; ReAct in {settings['tool_mode']} mode with "
            f"{' and '.join(settings['tools'])}, max_iterations {settings['max_iterations']}, "
            f"max_tokens {settings['max_tokens']}, llama.cpp threads {threads}.",
            "",
            f"Figures count the units (a single run, or a conversation of runs on one "
            f"thread) with at least {settings['min_calls']} model calls: "
            f"{local['runs_used']} of {len(local['runs'])}. Cached = prompt tokens served "
            "from llama.cpp's cache over all calls after the unit's first; reused = the "
            "same tokens over those the previous call left in the cache (its prompt and "
            "reply); outside = share of wall time not inside a model call.",
            "",
        ]
        rows = [
            [
                str(i + 1),
                run.get("kind", "run"),
                str(len(run.get("questions") or [1])),
                f"{run['model_calls']} ({run.get('failed_calls', 0)} failed)",
                str(run["status"]),
                f"{run['wall_s']:.1f}",
                f"{100 * run['cached_share']:.1f}%" if run["cached_share"] is not None else "-",
                f"{100 * run['reused_share']:.1f}%" if run.get("reused_share") is not None else "-",
                f"{100 * run['outside_share']:.2f}%",
            ]
            for i, run in enumerate(local["runs"])
        ]
        lines += table(
            [
                "unit",
                "kind",
                "questions",
                "model calls",
                "last status",
                "wall s",
                "cached (after 1st call)",
                "reused",
                "outside",
            ],
            rows,
        )
    lines += instruction_lines(results.get("instructions"))
    lines += evaluation_lines(results.get("evaluation"))
    lines += chat_turn_lines(results.get("chat_turns"))
    return "\n".join(lines).rstrip() + "\n"


def not_run(section: dict[str, Any] | None) -> str:
    """What a section's page says when it has no figures: not run, or skipped and why."""
    return f"Not run: {section['skipped']}." if section else "Not run."


def instruction_lines(section: dict[str, Any] | None) -> list[str]:
    """Section 5: instructions per model call under callgrind, with LangGraph's floor."""
    lines = ["## 5. Instructions per model call (callgrind, scripted zero-latency model)", ""]
    if not section or "skipped" in section:
        return [*lines, not_run(section), ""]
    first = section["rows"][0]
    lines += [
        "Section 1's conversation, each contender in a process of its own under callgrind: "
        f"{first['batches']} batches of {first['runs_per_batch']} runs after a warm-up, "
        "each batch counted on its own; median (min–max) of the batches, per model call. "
        "Without middleware two more graphs are counted (`tests/benchmarks/floors.py`): "
        "LangGraph alone (a model node and `ToolNode`, `messages` its only key) and the "
        "same graph holding the keys every loopgraphs loop returns, with none of a "
        "loop's logic.",
        "",
    ]
    rows = []
    for row in section["rows"]:
        floors = row.get("floors_vs_create_agent") or {}
        rows.append(
            [
                str(row["tool_calls"]),
                str(row["middleware"]),
                row["mode"],
                micro(row["per_call"]["loopgraphs"]),
                micro(row["per_call"]["create_agent"]),
                f"{row['ratio_vs_create_agent']:.3f}×",
                *(f"{floors[name]:.3f}×" if name in floors else "-" for name in FLOORS),
            ]
        )
    return lines + table(
        [
            "N tools",
            "middleware",
            "mode",
            "loopgraphs ReAct",
            "create_agent",
            "ReAct / create_agent (medians)",
            "LangGraph alone / create_agent",
            "LangGraph with loopgraphs' keys / create_agent",
        ],
        rows,
    )


def percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def evaluation_lines(section: dict[str, Any] | None) -> list[str]:
    """Section 6: the full evaluation's time and accuracy against the published table."""
    lines = ["## 6. The full evaluation on the embedded model", ""]
    if not section or "skipped" in section:
        return [*lines, not_run(section), ""]
    worse = section["worse_than_reference"]
    against = (
        f"the published table of {section['reference_date'][:10]}"
        if section["reference_date"]
        else "no published table at this limit"
    )
    lines += [
        f"{section['runs']} runs ({', '.join(section['loops'])}; every suite, "
        f"--limit {section['limit']}), one at a time on the embedded llama.cpp server: "
        f"{section['minutes']:.1f} minutes ({section['seconds']:.0f} s; the server's start, "
        f"{section['server_start_s']:.1f} s, not counted); target "
        f"≤ {section['target_minutes']:.0f} minutes. Accuracy against {against}: "
        + (f"lower in {', '.join(worse)}." if worse else "no row lower."),
        "",
    ]

    def pair(row: dict[str, Any], key: str, shown: Any) -> str:
        before = row[f"reference_{key}"]
        return shown(row[key]) + ("" if before is None else f" ({shown(before)})")

    rows = [
        [
            row["loop"],
            row["suite"],
            pair(row, "accuracy", percent),
            pair(row, "calls", lambda v: f"{v:.1f}"),
            pair(row, "tokens", lambda v: f"{v:,.0f}"),
            pair(row, "latency_s", lambda v: f"{v:.2f}"),
        ]
        for row in section["rows"]
    ]
    return lines + table(
        ["loop", "suite", "accuracy (published)", "calls", "tokens", "latency s"], rows
    )


def chat_turn_lines(section: dict[str, Any] | None) -> list[str]:
    """Section 7: CPU per chat turn in a long checkpointed thread, against create_agent."""
    lines = ["## 7. Chat turns in a long checkpointed thread (scripted zero-latency model)", ""]
    if not section or "skipped" in section:
        return [*lines, not_run(section), ""]
    lines += [
        "Each contender holds one thread on a checkpointer and answers one question per "
        "turn: a call of one zero-latency tool, then the answer (each loop its own script, "
        "`tests/support/loop_scripts.py`). Both contenders take turn k back to back in a "
        "rotating order; a figure is the process's CPU time over one turn, a window's "
        "figure the median of its turns, and the ratio is taken per thread. The first "
        "thread of each row is 200 turns long (turns 196-200), the others 60.",
        "",
    ]
    rows = []
    for key, windows in section["react"].items():
        for label, figure in windows.items():
            rows.append(
                [
                    key,
                    label,
                    seconds_ms(figure["react_ms"]),
                    seconds_ms(figure["create_agent_ms"]),
                    ratio(figure["ratio"]),
                ]
            )
    lines += table(
        ["checkpointer/mode", "turns", "ReAct ms", "create_agent ms", "ReAct / create_agent"],
        rows,
    )
    written = section.get("checkpoints_per_turn") or {}
    if written:
        lines += [
            "Checkpoints written per turn: "
            + "; ".join(
                f"{key}: " + ", ".join(f"{name} {counts}" for name, counts in per.items())
                for key, per in written.items()
            )
            + ".",
            "",
        ]
    growth = section.get("growth") or {}
    if growth:
        lines += [
            "How a turn grows with its thread (`InMemorySaver`, `invoke`): CPU ms per turn "
            "over turns 1-5 and the last five of a thread, each loop beside create_agent "
            "on a thread of the same length.",
            "",
        ]
        rows = []
        for loop, row in growth.items():
            early, late, ratio_ = row["early_ms"], row["late_ms"], row["late_over_early"]
            rows.append(
                [
                    f"{loop} ({row['turns']} turns)",
                    f"{early[loop]:.1f} → {late[loop]:.1f} ({ratio_[loop]:.2f}×)",
                    f"{early['create_agent']:.1f} → {late['create_agent']:.1f} "
                    f"({ratio_['create_agent']:.2f}×)",
                ]
            )
        lines += table(["loop", "the loop, ms per turn", "create_agent, ms per turn"], rows)
    return lines


def seconds_ms(s: dict[str, Any]) -> str:
    return f"{s['median']:.2f} ({s['min']:.2f}–{s['max']:.2f})"
