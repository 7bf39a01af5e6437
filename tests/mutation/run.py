"""Mutation testing of the modules that hold the loops' guarantees, with mutmut.

``python -m tests.mutation.run`` (what ``make mutate`` runs) mutates each group of
modules against that group's own fast tests and prints the kill rate per module and
overall, then the surviving mutants (``--group NAME`` runs one group, ``--report`` only
reads the results of an earlier run, ``--survivors`` tests again only the mutants that
survived the last run, after new tests were written for them).

The repository root is the package itself (``package-dir = {"loopgraphs" = "."}``), so
mutmut cannot work in place: its module names come from file paths, and the tests import
``loopgraphs.nodes.tool_guard``, not ``nodes.tool_guard``. Each group therefore runs in
``build/mutation/<group>/``, which holds a copy of the package as ``loopgraphs/``, the
tests and a ``setup.cfg`` naming what to mutate; mutmut puts its ``mutants/`` copy there
first on ``sys.path``, ahead of the editable install.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORK = ROOT / "build" / "mutation"
SURVIVED = ("survived", "suspicious")
# What of the repository is not part of the package copy.
NOT_COPIED = (
    ".venv",
    ".git",
    "build",
    "tests",
    "examples",
    "docs",
    "mutants",
    "*.egg-info",
    "__pycache__",
    ".*_cache",
    ".hypothesis",
)


# Tests whose outcome depends on timing; a mutation run needs a stable baseline.
FLAKY = (
    # Two calls run side by side and log in whichever order they finish.
    "tests/compat/test_approval.py::test_edit_every_call",
    "tests/compat/test_tool_call_limit.py::test_limit_reached_but_not_exceeded",
    # Time bounds: mutmut's trampolines around every function slow the parsers down.
    "tests/unit/nodes/parsing/test_fuzz_parsers.py::test_parser_runs_in_linear_time",
)


# The exact results mutation testing found unpinned, kept beside the modules and behaviour
# they pin (each builds what it checks itself, so a mutant's run reaches it).
MUTATION_FOUND = (
    "tests/unit/toolkits/test_files.py",
    "tests/unit/nodes/test_tool_guard.py",
    "tests/unit/nodes/test_review.py",
    "tests/unit/test_state_usage.py",
    "tests/unit/nodes/test_driver_guard.py",
    "tests/unit/nodes/parsing/test_react_grammar.py",
    "tests/unit/nodes/parsing/test_text.py",
)
# The promises of the loops that only showed when the code was mutated.
MUTATION_FOUND_LOOPS = (
    "tests/behaviour/test_approval_edits.py",
    "tests/behaviour/test_tool_errors.py",
    "tests/behaviour/test_usage_totals.py",
    "tests/behaviour/test_tool_budget.py",
    "tests/behaviour/test_json_mode.py",
)


# The tests of LangChain middleware in every loop, which every seam module answers to.
MIDDLEWARE_TESTS = (
    "tests/behaviour/test_host_contract.py",
    *MUTATION_FOUND_LOOPS,
    *MUTATION_FOUND,
    "tests/compat/test_middleware_hooks.py",
    "tests/compat/test_middleware_wrappers.py",
    "tests/compat/test_middleware_prebuilt.py",
    "tests/compat/test_middleware_every_loop.py",
    "tests/compat/test_middleware_prebuilt_loops.py",
)


@dataclass(frozen=True)
class Group:
    """Modules mutated together, the tests run against them, and (optionally) the only
    functions of them whose mutants count."""

    name: str
    modules: tuple[str, ...]
    tests: tuple[str, ...]
    functions: tuple[str, ...] = ()

    def mutant_filters(self) -> list[str]:
        """mutmut's mutant name patterns for ``functions`` (empty: every mutant)."""
        return [f"loopgraphs.{f}__mutmut_*" for f in self.functions]


GROUPS = (
    Group(
        "tool_guard",
        ("nodes/tool_guard.py",),
        (
            "tests/unit/nodes/test_tool_steps.py",
            "tests/behaviour/test_injection.py",
            "tests/behaviour/test_human_approval.py",
            *MUTATION_FOUND_LOOPS,
            *MUTATION_FOUND,
            "tests/compat/test_guarantees.py",
            "tests/compat/test_tool_call_limit.py",
            "tests/compat/test_tool_execution.py",
        ),
    ),
    Group(
        "approval",
        ("nodes/review.py",),
        (
            "tests/behaviour/test_human_approval.py",
            *MUTATION_FOUND_LOOPS,
            *MUTATION_FOUND,
            "tests/compat/test_approval.py",
        ),
    ),
    Group(
        "accounting",
        ("nodes/driver.py", "nodes/errors.py"),
        (
            "tests/unit/nodes/test_driver.py",
            "tests/services/test_provider_faults.py",
            *MUTATION_FOUND_LOOPS,
            *MUTATION_FOUND,
        ),
        functions=(
            "nodes.driver.x_guard",
            "nodes.errors.x_mark_sent",
            "nodes.errors.x_failed_calls",
            "nodes.errors.x_all_failed",
            "nodes.errors.x_failed_requests",
        ),
    ),
    Group(
        "state",
        ("state.py",),
        (
            "tests/unit/nodes/test_driver.py",
            "tests/unit/test_state.py",
            "tests/behaviour/test_injection.py",
            "tests/services/test_provider_faults.py",
            "tests/behaviour/test_custom_state.py",
            "tests/behaviour/test_plain_updates.py",
            "tests/behaviour/test_host_contract.py",
            *MUTATION_FOUND_LOOPS,
            *MUTATION_FOUND,
            "tests/compat/test_middleware_hooks.py",
        ),
    ),
    Group(
        "model_seam",
        (
            "nodes/model_call.py",
            "nodes/model_send.py",
            "nodes/middleware.py",
            "nodes/chat_relay.py",
        ),
        (
            *MIDDLEWARE_TESTS,
            "tests/behaviour/test_chat_stream.py",
            "tests/unit/nodes/test_model_seam.py",
            "tests/unit/nodes/test_model_call.py",
            "tests/unit/nodes/test_model_send.py",
            "tests/unit/nodes/test_middleware_chain.py",
            "tests/behaviour/test_tool_path.py",
            "tests/unit/nodes/test_driver.py",
            "tests/services/test_provider_faults.py",
            "tests/unit/nodes/test_middleware_errors.py",
            "tests/behaviour/test_cut_replies.py",
            "tests/loops/test_react.py",
            "tests/loops/test_cot.py",
            "tests/behaviour/test_streaming.py",
            "tests/behaviour/test_bad_input.py",
            "tests/unit/toolkits/test_tool_examples.py",
            "tests/compat/test_agent_loop.py",
            "tests/compat/test_structured_response.py",
            "tests/compat/test_create_agent_parity.py",
        ),
    ),
    Group(
        "hooks_routing",
        ("nodes/hooks.py", "nodes/routing.py", "nodes/own_reply.py"),
        (
            *MIDDLEWARE_TESTS,
            "tests/unit/nodes/test_routing.py",
            "tests/unit/nodes/test_hook_nodes.py",
            "tests/loops/test_tot_hooks.py",
            "tests/loops/test_plan_execute_host.py",
            "tests/behaviour/test_custom_state.py",
            "tests/behaviour/test_plain_updates.py",
            "tests/unit/nodes/test_driver.py",
            "tests/clients/test_every_loop_contract.py",
        ),
    ),
    Group(
        "tool_step",
        ("nodes/tool_step.py",),
        (
            "tests/unit/nodes/test_tool_steps.py",
            "tests/unit/nodes/test_tool_step_helpers.py",
            "tests/unit/nodes/test_tool_config_paths.py",
            "tests/behaviour/test_run_wide_budgets.py",
            "tests/unit/test_context.py",
            "tests/loops/test_react.py",
            "tests/behaviour/test_tool_path.py",
            "tests/behaviour/test_human_approval.py",
            "tests/behaviour/test_dangling_calls.py",
            *MUTATION_FOUND,
            "tests/compat/test_tool_execution.py",
            "tests/compat/test_return_direct.py",
            "tests/compat/test_injected_args.py",
            "tests/compat/test_approval.py",
            "tests/compat/test_tool_interrupts_persisted.py",
        ),
    ),
    Group(
        "parsing",
        ("nodes/parsing/react.py", "nodes/parsing/text.py", "text.py"),
        ("tests/unit/nodes/parsing/test_fuzz_parsers.py", *MUTATION_FOUND),
    ),
    Group(
        "sandbox",
        ("toolkits/files.py",),
        ("tests/unit/toolkits/test_sandbox.py", *MUTATION_FOUND),
    ),
)


def stage(group: Group) -> Path:
    """A fresh folder for the group: the package as ``loopgraphs/``, the tests, the
    project's pytest settings, and mutmut's settings for the group."""
    folder = WORK / group.name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    shutil.copytree(ROOT, folder / "loopgraphs", ignore=shutil.ignore_patterns(*NOT_COPIED))
    shutil.copytree(ROOT / "tests", folder / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(ROOT / "pyproject.toml", folder / "pyproject.toml")
    only = "\n    ".join(f"loopgraphs/{module}" for module in group.modules)
    flaky = [f"--deselect={test}" for test in FLAKY]
    tests = "\n    ".join([*group.tests, *flaky, "-m", "not integration and not slow"])
    (folder / "setup.cfg").write_text(
        "[mutmut]\n"
        "source_paths = loopgraphs\n"
        f"only_mutate =\n    {only}\n"
        f"pytest_add_cli_args_test_selection =\n    {tests}\n"
        "pytest_add_cli_args =\n    -p\n    no:cacheprovider\n    -x\n    -q\n"
        "use_git_change_detection = false\n"
        # A mutant that hangs (a retry loop that never ends) is a kill; waiting 15 times
        # the tests' own time for it, mutmut's default, made runs take hours.
        "timeout_multiplier = 4.0\n"
        "timeout_constant = 5.0\n"
    )
    return folder


def mutate(group: Group, children: int, *, survivors: bool = False) -> bool:
    """Run mutmut for one group in its own folder and keep the results in its
    ``results.json``; False when mutmut failed. With ``survivors``, only the mutants that
    survived the last run are tested again, and the other results are kept."""
    earlier = saved(group) if survivors else {}
    names = [n for found in earlier.values() for n, s in found.items() if s in SURVIVED]
    if survivors and not names:
        return True
    folder = stage(group)
    mutmut = Path(sys.executable).with_name("mutmut")
    command = [str(mutmut), "run", f"--max-children={children}"]
    ok = subprocess.run([*command, *(names or group.mutant_filters())], cwd=folder).returncode == 0
    results = statuses(group)
    for module, found in earlier.items():
        tested = {n: s for n, s in results.get(module, {}).items() if s != "not checked"}
        results[module] = {**found, **tested}
    (folder / "results.json").write_text(json.dumps(results, indent=1, sort_keys=True))
    return ok


def saved(group: Group) -> dict[str, dict[str, str]]:
    """The results of the group's last run, by module (read from mutmut's own files when
    the run did not finish)."""
    path = WORK / group.name / "results.json"
    return json.loads(path.read_text()) if path.exists() else statuses(group)


def statuses(group: Group) -> dict[str, dict[str, str]]:
    """The status of each counted mutant of the group, by module."""
    from mutmut.stats import status_by_exit_code

    found: dict[str, dict[str, str]] = {}
    for module in group.modules:
        meta = WORK / group.name / "mutants" / "loopgraphs" / f"{module}.meta"
        if not meta.exists():
            continue
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        prefixes = tuple(f"loopgraphs.{f}__mutmut_" for f in group.functions)
        found[module] = {
            name: status_by_exit_code[code]
            for name, code in codes.items()
            if not prefixes or name.startswith(prefixes)
        }
    return found


def report(groups: Sequence[Group]) -> int:
    """Print the kill rate per module and overall and list the survivors; the exit code
    is 1 when the overall rate is below 90%."""
    killed_all = counted_all = 0
    survivors: list[str] = []
    for group in groups:
        for module, found in saved(group).items():
            counted = [s for s in found.values() if s not in ("no tests", "skipped", "not checked")]
            killed = sum(1 for s in counted if s in ("killed", "timeout", "caught by type check"))
            untested = len(found) - len(counted)
            rate = 100 * killed / len(counted) if counted else 100.0
            print(
                f"{module:28} {killed:4}/{len(counted):<4} killed  {rate:5.1f}%"
                + (f"  ({untested} not reached by the tests)" if untested else "")
            )
            survivors += [n for n, s in found.items() if s in SURVIVED]
            killed_all += killed
            counted_all += len(counted)
    overall = 100 * killed_all / counted_all if counted_all else 100.0
    print(f"{'overall':28} {killed_all:4}/{counted_all:<4} killed  {overall:5.1f}%")
    for name in survivors:
        print("survived:", name)
    return 0 if overall >= 90 else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--group", choices=[g.name for g in GROUPS], action="append")
    parser.add_argument("--report", action="store_true", help="only report an earlier run")
    parser.add_argument("--survivors", action="store_true", help="test the survivors again")
    parser.add_argument("--children", type=int, default=2, help="mutants tested at once")
    args = parser.parse_args(argv)
    groups = [g for g in GROUPS if not args.group or g.name in args.group]
    failed = [
        g.name
        for g in ([] if args.report else groups)
        if not mutate(g, args.children, survivors=args.survivors)
    ]
    status = report(groups)
    if failed:
        print("mutmut failed for:", ", ".join(failed))
    return 1 if failed else status


if __name__ == "__main__":
    sys.exit(main())
