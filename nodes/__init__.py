"""Reusable nodes: generate, parse, call_tool, structured output, evaluate, reflect, score."""
