"""A small fictional world used as a closed-book knowledge base.

No language model has seen these people, places and organisations, so questions about them
can only be answered by looking the facts up. The data lives in ``data/knowledge_base.json``;
this module exposes it as entities, as (subject, relation, object) triples and as one plain
English document per entity.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

KNOWLEDGE_BASE_PATH = Path(__file__).parent / "data" / "knowledge_base.json"

RELATION_SENTENCES: dict[str, str] = {
    "profession": "The profession of {subject} is {object}.",
    "born_in": "{subject} was born in {object}.",
    "born_year": "{subject} was born in the year {object}.",
    "works_for": "{subject} works for {object}.",
    "spouse": "{subject} is married to {object}.",
    "mentor": "{subject} was mentored by {object}.",
    "country": "{subject} lies in the country of {object}.",
    "population": "{subject} has a population of {object}.",
    "founded_year": "{subject} was founded in the year {object}.",
    "river": "{subject} lies on the river {object}.",
    "mayor": "The mayor of {subject} is {object}.",
    "industry": "{subject} is active in {object}.",
    "founded_by": "{subject} was founded by {object}.",
    "headquartered_in": "{subject} is headquartered in {object}.",
    "ceo": "The chief executive of {subject} is {object}.",
}
"""One sentence template per relation, with ``{subject}`` and ``{object}`` placeholders."""

ENTITY_RELATIONS: dict[str, str] = {
    "born_in": "place",
    "works_for": "organisation",
    "spouse": "person",
    "mentor": "person",
    "mayor": "person",
    "founded_by": "person",
    "headquartered_in": "place",
    "ceo": "person",
}
"""Relations whose value names another entity, mapped to the kind of that entity."""

_KIND_SENTENCES: dict[str, str] = {
    "person": "{subject} is a person.",
    "place": "{subject} is a place.",
    "organisation": "{subject} is an organisation.",
}


@dataclass
class Entity:
    """One person, place or organisation of the fictional world.

    Attributes:
        name: Unique name of the entity.
        kind: ``"person"``, ``"place"`` or ``"organisation"``.
        facts: Relation name to value; values of relations in ``ENTITY_RELATIONS`` are the
            exact names of other entities.
    """

    name: str
    kind: str
    facts: dict[str, str] = field(default_factory=dict)


@lru_cache(maxsize=1)
def _load() -> tuple[Entity, ...]:
    raw = json.loads(KNOWLEDGE_BASE_PATH.read_text(encoding="utf-8"))
    return tuple(
        Entity(name=item["name"], kind=item["kind"], facts=dict(item["facts"])) for item in raw
    )


def load_knowledge_base() -> list[Entity]:
    """Load the bundled knowledge base (the file is read once and cached).

    Returns:
        All entities in file order: people first, then places, then organisations.
    """
    return [Entity(e.name, e.kind, dict(e.facts)) for e in _load()]


def triples() -> list[tuple[str, str, str]]:
    """Every fact of the knowledge base as a triple.

    Returns:
        ``(subject, relation, object)`` tuples in file order.
    """
    return [
        (entity.name, relation, value)
        for entity in _load()
        for relation, value in entity.facts.items()
    ]


def render_fact(subject: str, relation: str, value: str) -> str:
    """Render one fact as an English sentence.

    Args:
        subject: Name of the entity the fact is about.
        relation: A key of ``RELATION_SENTENCES``.
        value: The object of the fact.

    Returns:
        The sentence, e.g. ``"Odalys Fenwrick was born in Quessaby."``.

    Raises:
        KeyError: If the relation has no sentence template.
    """
    return RELATION_SENTENCES[relation].format(subject=subject, object=value)


def documents() -> list[tuple[str, str]]:
    """One plain English document per entity, rendering every one of its facts.

    Returns:
        ``(title, text)`` pairs in file order; the title is the entity name.
    """
    result: list[tuple[str, str]] = []
    for entity in _load():
        sentences = [_KIND_SENTENCES[entity.kind].format(subject=entity.name)]
        sentences.extend(
            render_fact(entity.name, relation, value) for relation, value in entity.facts.items()
        )
        result.append((entity.name, " ".join(sentences)))
    return result
