"""LATS's prompts: the lessons of failed trajectories given to later expansions and the
value of an unfinished trajectory (the candidate actions are ReAct turns, the verdict and
the reflection the kit's ``evaluate`` and ``reflect``; see ``loopgraphs.prompts.react``
and ``loopgraphs.prompts.kit``)."""

LATS_LESSONS = """Lessons from earlier attempts at this question that failed:
{lessons}
Apply them now.

Question:
"""

LATS_VALUE_USER = """Question:
{{question}}

<attempt>
{{answer}}
</attempt>
{lessons}
The attempt is not finished. Rate how likely its steps so far lead to a correct answer: a
step that found what the question needs scores high, an error or an off-topic step low."""

LATS_VALUE_LESSONS = """
Lessons from earlier attempts that failed (an attempt repeating their mistakes scores low):
{lessons}
"""
