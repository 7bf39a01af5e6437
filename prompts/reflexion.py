"""Reflexion's prompts: the lessons of earlier attempts, given to the next one (the
evaluation and the reflection are the kit's ``evaluate`` and ``reflect``, whose prompts
are in ``loopgraphs.prompts.kit``)."""

REFLECTIONS_BLOCK = """Lessons from your earlier attempts at this question (judged unsatisfactory):
{lessons}
Apply them in this attempt.

Question:
"""
