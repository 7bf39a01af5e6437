"""Ready-made tools for the agent loops and helpers to turn functions into tools."""

from loopgraphs.toolkits.calculator import calculator
from loopgraphs.toolkits.examples import ToolExample
from loopgraphs.toolkits.files import make_file_tools
from loopgraphs.toolkits.knowledge import Entity, documents, load_knowledge_base, triples
from loopgraphs.toolkits.registry import BUILTIN_TOOLKITS, ToolRegistry, get_tools, to_tools
from loopgraphs.toolkits.search import make_search_tool

__all__ = [
    "BUILTIN_TOOLKITS",
    "Entity",
    "ToolExample",
    "ToolRegistry",
    "calculator",
    "documents",
    "get_tools",
    "load_knowledge_base",
    "make_file_tools",
    "make_search_tool",
    "to_tools",
    "triples",
]
