"""Readers of model replies: message text, JSON, and every loop's grammar.

Every reader is total (any input gives a result, never an exception) and runs in time
linear in its input: a reply is cut to ``MAX_PARSE_CHARS``, read line by line with
anchored patterns whose repeated parts are separated by literals, and broken JSON is
repaired only within one budget per reply.

Modules: ``text`` (message text, answer markers, the question, list items),
``json_text`` (JSON objects and tool inputs), ``react``, ``self_ask``, ``critic``,
``plans`` and ``thoughts`` (the loops' grammars) and ``answers`` (voting keys, verdicts,
reflections).
"""

MAX_PARSE_CHARS = 200_000
# Broken JSON is repaired only while small and shallow: json_repair is pure Python and far
# slower than linear on long or deeply nested input, so one reply may spend at most
# MAX_REPAIR_CHARS characters of repair work, on candidates nested at most MAX_REPAIR_DEPTH.
MAX_REPAIR_CHARS = 20_000
MAX_REPAIR_DEPTH = 32
MAX_JSON_CANDIDATES = 20
