"""The old name of ``loopgraphs.nodes.tool_guard`` (the guard around ``ToolNode``)."""

from loopgraphs.deprecation import moved
from loopgraphs.nodes import tool_guard

moved(__name__, tool_guard)
