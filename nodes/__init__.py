"""Reusable nodes: generate, parsing, call_tool, structured output, evaluate, reflect, score."""
