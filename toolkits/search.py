"""Full-text search tool over a small corpus, backed by SQLite FTS5.

Each tool owns an in-memory database built once when the tool is made. User queries are
never passed to FTS5 as written: word tokens are extracted, quoted and joined with ``OR``,
so any input string (including FTS5 operators, quotes or emoji) is safe to search for.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Sequence

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field

from loopgraphs.text import STOP_WORDS
from loopgraphs.toolkits.examples import EXAMPLES_KEY, ToolExample
from loopgraphs.toolkits.knowledge import documents

MAX_QUERY_CHARS = 1000
MAX_QUERY_TERMS = 32
TITLE_WEIGHT = 10.0

SEARCH_DESCRIPTION = (
    "Search the knowledge base for facts about people, places and organisations. "
    "Input: a short query such as a name."
)

_EXAMPLE_ORGANISATION = (
    "Harrowby Looms: Harrowby Looms is an organisation. Harrowby Looms was founded in the "
    "year 1890. Harrowby Looms was founded by Ada Quinlan."
)
_EXAMPLE_PERSON = (
    "Ada Quinlan: Ada Quinlan is a person. Ada Quinlan was born in the year 1861. Ada "
    "Quinlan was born in Tessford."
)
KNOWLEDGE_BASE_EXAMPLES = (
    ToolExample(
        "Who founded Harrowby Looms?",
        {"query": "Harrowby Looms"},
        f"{_EXAMPLE_ORGANISATION}\n\nAlso found: Ada Quinlan.",
        "Ada Quinlan",
    ),
    ToolExample(
        "In which town was the founder of Harrowby Looms born?",
        {"query": "founder of Harrowby Looms"},
        f"{_EXAMPLE_ORGANISATION}\n\n{_EXAMPLE_PERSON}",
        "Tessford",
    ),
)
"""The bundled search tool's worked examples; their entities are not in the knowledge base."""

_WORD = re.compile(r"\w+")


class SearchInput(BaseModel):
    """Arguments of a search tool."""

    query: str = Field(description="What to look for, e.g. a name or a few keywords.")


def build_match_expression(query: str) -> str:
    """Turn arbitrary user text into a safe FTS5 ``MATCH`` expression.

    Word tokens are lower-cased, deduplicated, stripped of stop-words (unless nothing else is
    left), quoted and joined with ``OR`` so documents matching some of the words still rank.

    Args:
        query: Any text; only the first ``MAX_QUERY_CHARS`` characters are used.

    Returns:
        The expression, or an empty string when the query contains no word at all.
    """
    tokens = list(dict.fromkeys(t.lower() for t in _WORD.findall(query[:MAX_QUERY_CHARS])))
    content = [t for t in tokens if t not in STOP_WORDS]
    terms = (content or tokens)[:MAX_QUERY_TERMS]
    return " OR ".join(f'"{term}"' for term in terms)


def _normalise_corpus(
    corpus: Sequence[tuple[str, str]] | Sequence[str] | None,
) -> list[tuple[str, str]]:
    if corpus is None:
        return documents()
    if isinstance(corpus, str):
        raise TypeError("corpus must be a sequence of documents, not a single string")
    result: list[tuple[str, str]] = []
    for index, item in enumerate(corpus):
        if isinstance(item, str):
            result.append((f"doc {index + 1}", item))
        elif (
            isinstance(item, tuple)
            and len(item) == 2
            and isinstance(item[0], str)
            and isinstance(item[1], str)
        ):
            result.append((item[0], item[1]))
        else:
            raise TypeError(
                f"corpus[{index}] must be a string or a (title, text) tuple of strings, "
                f"got {type(item).__name__}"
            )
    if not result:
        raise ValueError("corpus must contain at least one document")
    return result


class _Index:
    """An in-memory FTS5 index that may be queried from several threads."""

    def __init__(self, docs: Sequence[tuple[str, str]]) -> None:
        self._lock = threading.Lock()
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute(
            "CREATE VIRTUAL TABLE docs USING fts5(title, body, tokenize='unicode61 "
            "remove_diacritics 2')"
        )
        self._db.executemany("INSERT INTO docs (title, body) VALUES (?, ?)", docs)
        self._db.commit()

    def search(self, expression: str, k: int) -> list[tuple[str, str]]:
        with self._lock:
            rows = self._db.execute(
                "SELECT title, body FROM docs WHERE docs MATCH ? "
                "ORDER BY bm25(docs, ?, 1.0) LIMIT ?",
                (expression, TITLE_WEIGHT, k),
            ).fetchall()
        return [(str(title), str(body)) for title, body in rows]


def _same_title(title: str, query: str) -> bool:
    return title.casefold() == query.strip().strip("\"'.?!").strip().casefold()


def make_search_tool(
    corpus: Sequence[tuple[str, str]] | Sequence[str] | None = None,
    *,
    k: int = 3,
    name: str = "search",
    description: str = SEARCH_DESCRIPTION,
    examples: Sequence[ToolExample] | None = None,
    exact_lookup: bool = True,
) -> BaseTool:
    """Make a full-text search tool over a corpus.

    Args:
        corpus: ``(title, text)`` pairs, or plain strings (titled ``"doc 1"``, ``"doc 2"``...).
            ``None`` searches the bundled knowledge base documents.
        k: How many documents a search returns at most.
        name: The tool name.
        description: The tool description shown to the model.
        examples: Worked examples shown to models without native tool calling (see
            ``loopgraphs.toolkits.examples``); ``None`` gives the bundled knowledge base's
            example when ``corpus`` is ``None`` and none otherwise.
        exact_lookup: When the query is exactly a document's title (ignoring case and
            surrounding spaces and punctuation), return that document alone and only the
            titles of the other hits: a small model reads the one document it asked for
            instead of picking a fact out of its neighbours.

    Returns:
        A tool taking ``query: str`` and returning the best ``k`` documents, ranked by BM25,
        as ``"title: text"`` blocks separated by blank lines (or, for an exact lookup, the
        named document and an ``Also found:`` line), or a message when nothing matches. It
        never raises for any query string.

    Raises:
        ValueError: If ``k`` is below 1 or the corpus is empty.
        TypeError: If a corpus item is neither a string nor a pair of strings.
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    index = _Index(_normalise_corpus(corpus))

    def search(query: str) -> str:
        shown = query if len(query) <= 60 else f"{query[:57]}..."
        expression = build_match_expression(query)
        if not expression:
            return f"No results for {shown!r}: the query contains no searchable words."
        try:
            hits = index.search(expression, k)
        except sqlite3.Error as exc:
            return f"Error: search failed for {shown!r}: {exc}"
        if not hits:
            return f"No results for {shown!r}."
        named = [hit for hit in hits if _same_title(hit[0], query)] if exact_lookup else []
        if named:
            title, text = named[0]
            others = [other for other, _ in hits if other != title]
            also = f"\n\nAlso found: {', '.join(others)}." if others else ""
            return f"{title}: {text}{also}"
        return "\n\n".join(f"{title}: {text}" for title, text in hits)

    if examples is None:
        examples = KNOWLEDGE_BASE_EXAMPLES if corpus is None else ()
    return StructuredTool.from_function(
        func=search,
        name=name,
        description=description,
        args_schema=SearchInput,
        metadata={EXAMPLES_KEY: list(examples)},
    )
