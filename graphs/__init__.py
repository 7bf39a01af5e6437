"""One module per loop, and the registry of loops by name."""

from loopgraphs.graphs.registry import LOOPS, build_loop

__all__ = ["LOOPS", "build_loop"]
