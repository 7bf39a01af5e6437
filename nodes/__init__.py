"""Reusable nodes: generate, parsing, call_tool, structured output, review, the tool loop."""
