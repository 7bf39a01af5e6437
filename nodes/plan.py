"""The graph steps a loop needs, counted by the kit from the loop's own wiring.

LangGraph runs a graph in supersteps and stops it when ``recursion_limit`` of them are
spent; every loop must finish with its best answer before that. How many supersteps it
still needs depends on where it is: from a step of a cycle, one more round is the cycle
back to that step, and finishing is the path from there to the end. ``GraphPlan`` counts
both on the wiring the loop declared through ``LoopBuild`` (each step's ways on, the end
only where the loop leads to it, not the way out every step has after an error), each
model step weighing one superstep more per middleware hook node around it (and the
``after_model`` hook nodes of the running step itself counted in its finish); so no loop
counts its steps by hand, and a hook node added by middleware is counted too.
"""

from __future__ import annotations

import heapq
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from langgraph.graph import END, START

MAX_PATHS = 20_000
"""Most partial paths one count explores: a loop's graph has a few dozen nodes at most, so
this is never reached by a real loop; past it the count stops with what it found."""


@dataclass(frozen=True)
class StepCounts:
    """How many supersteps a run needs from one node of the loop.

    Attributes:
        round: Supersteps of the longest cycle from the node back to itself (0 when it is
            on no cycle).
        finish: Supersteps of the longest path from the node to the end, the node
            excluded but the hook nodes that follow it (its ``after_model`` hooks)
            included (the end itself is no step).
        shortest_finish: Supersteps of the shortest path from the node to the end,
            counted the same way.
    """

    round: int = 0
    finish: int = 0
    shortest_finish: int = 0

    @property
    def another_round(self) -> int:
        """Supersteps needed after this one to go round once more and then finish."""
        return self.round + self.finish


@dataclass
class GraphPlan:
    """The wiring a loop declared, and the counts made from it on first use.

    Attributes:
        successors: Each step's ways on, as the loop declared them (``END`` included
            where the loop leads to the end).
        weights: Supersteps a node takes (1, plus one per middleware hook node around a
            model step); a node not named weighs 1.
        after: Of a node's supersteps, those that follow its own (the ``after_model``
            hook nodes of a model step); a node not named has none.
    """

    successors: dict[str, list[str]] = field(default_factory=dict)
    weights: dict[str, int] = field(default_factory=dict)
    after: dict[str, int] = field(default_factory=dict)
    _counts: dict[str, StepCounts] | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def lead(self, source: str, targets: Sequence[str]) -> None:
        """Record that ``source`` may lead to each of ``targets``."""
        known = self.successors.setdefault(source, [])
        known.extend(target for target in targets if target not in known)
        for target in targets:
            if target not in (START, END):
                self.successors.setdefault(target, [])
        self._counts = None

    def weigh(self, node: str, supersteps: int, *, after: int = 0) -> None:
        """Record that ``node`` takes ``supersteps`` (its hook nodes included), ``after`` of
        them after its own (its ``after_model`` hook nodes)."""
        self.weights[node] = supersteps
        self.after[node] = after
        self._counts = None

    def shortest_finish(self, node: str, through: str | None = None) -> int:
        """Supersteps the shortest way to the end takes once ``node``'s logic has run: its
        own ``after_model`` hook nodes, then the shortest path from it to the end, or,
        given ``through`` (a step ``node`` leads to), that step's supersteps and the
        shortest path from it."""
        if through is None:
            return self.counts(node).shortest_finish
        from_there = self.counts(through).shortest_finish - self.after.get(through, 0)
        return self.after.get(node, 0) + self.weights.get(through, 1) + from_there

    def counts(self, node: str) -> StepCounts:
        """The counts of ``node`` (all zero for a node the loop did not declare)."""
        counts = self._counts
        if counts is None:
            with self._lock:
                counts = self._counts = count_steps(self.successors, self.weights, self.after)
        return counts.get(node, StepCounts())


def count_steps(
    successors: Mapping[str, Sequence[str]],
    weights: Mapping[str, int] | None = None,
    after: Mapping[str, int] | None = None,
) -> dict[str, StepCounts]:
    """The ``StepCounts`` of every node of a graph given by its successors (and the
    supersteps each node takes, 1 when not given, of which ``after`` follow the node's
    own, none when not given)."""
    weight = dict(weights or {})
    counts: dict[str, StepCounts] = {}
    for node in successors:
        if node in (START, END):
            continue
        own = (after or {}).get(node, 0)
        counts[node] = StepCounts(
            round=_longest_cycle(successors, weight, node),
            finish=own + _longest_to_end(successors, weight, node),
            shortest_finish=own + _shortest_to_end(successors, weight, node),
        )
    return counts


def _cost(weights: Mapping[str, int], path: Sequence[str]) -> int:
    return sum(weights.get(node, 1) for node in path)


def _longest_cycle(
    successors: Mapping[str, Sequence[str]], weights: Mapping[str, int], node: str
) -> int:
    """Supersteps of the longest simple cycle through ``node`` (0: none)."""
    best, explored = 0, 0
    stack: list[tuple[str, tuple[str, ...]]] = [(node, (node,))]
    while stack and explored < MAX_PATHS:
        current, path = stack.pop()
        explored += 1
        for target in successors.get(current, ()):
            if target == node:
                best = max(best, _cost(weights, path))
            elif target not in path and target not in (START, END):
                stack.append((target, (*path, target)))
    return best


def _longest_to_end(
    successors: Mapping[str, Sequence[str]], weights: Mapping[str, int], node: str
) -> int:
    """Supersteps after ``node`` on the longest simple path from it to the end."""
    best, explored = 0, 0
    stack: list[tuple[str, tuple[str, ...]]] = [(node, (node,))]
    while stack and explored < MAX_PATHS:
        current, path = stack.pop()
        explored += 1
        for target in successors.get(current, ()):
            if target == END:
                best = max(best, _cost(weights, path[1:]))
            elif target not in path and target != START:
                stack.append((target, (*path, target)))
    return best


def _shortest_to_end(
    successors: Mapping[str, Sequence[str]], weights: Mapping[str, int], node: str
) -> int:
    """Supersteps after ``node`` on the cheapest path from it to the end (Dijkstra on
    the nodes' weights); 0 when no path reaches the end."""
    best: dict[str, int] = {node: 0}
    frontier = [(0, node)]
    while frontier:
        cost, current = heapq.heappop(frontier)
        if cost > best.get(current, cost):
            continue
        for target in successors.get(current, ()):
            if target == END:
                return cost
            if target == START:
                continue
            through = cost + weights.get(target, 1)
            if through < best.get(target, through + 1):
                best[target] = through
                heapq.heappush(frontier, (through, target))
    return 0


__all__ = ["GraphPlan", "StepCounts", "count_steps"]
