"""Evaluation data: the bundled suites or one's own questions, as tasks.

``load_tasks`` reads every kind of data an evaluation takes into lists of ``Task``:

* bundled suite names: ``"arithmetic"``, ``"multihop,verify"``, ``["verify"]`` or ``"all"``
  (the three suites; ``"multihop-classic"`` and ``"verify-classic"`` are asked by name);
* rows: a list of ``{"question": ..., "expected": ...}`` dicts, where ``expected`` is one
  answer or a list of acceptable answers and the other keys are kept as the task's
  ``metadata``;
* a JSONL file (one such dict per line) or a CSV file with those columns (an ``expected``
  cell holding a JSON list, ``["Paris", "Paris, France"]``, is a list of answers);
* a pandas DataFrame with those columns.

Own data forms one suite named ``"data"``, whose tasks are ``data-001``, ``data-002``, ...
"""

from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard

from loopgraphs.eval.suites import DEFAULT_SEED, SUITE_NAMES, SUITES, make_suite
from loopgraphs.eval.task import Task

if TYPE_CHECKING:
    from typing import TypeAlias

    import pandas as pd

    DataSource: TypeAlias = (
        str | os.PathLike[str] | Sequence[str] | Sequence[Mapping[str, object]] | pd.DataFrame
    )

OWN_DATA = "data"
"""The suite name of one's own data."""

FILE_TYPES: tuple[str, ...] = (".jsonl", ".csv")
"""The data files ``load_tasks`` reads."""

FIELDS: tuple[str, ...] = ("question", "expected")
"""The keys every row must have; the others are the task's metadata."""


def choose_names(
    value: str | Sequence[str] | None,
    known: Sequence[str],
    kind: str,
    every: Sequence[str] | None = None,
) -> list[str]:
    """Names picked from ``known``: a list, a comma-separated string, or ``"all"``/None.

    Args:
        value: The selection.
        known: The names that exist, in order.
        kind: What they name (``"loop"``, ``"suite"``), for the error.
        every: The names ``"all"`` stands for (None: every known name).

    Returns:
        The names, without repeats; ``every`` (or every known name) for ``"all"`` or None.

    Raises:
        ValueError: An unknown name, or an empty selection.
    """
    if value is None or value == "all" or (not isinstance(value, str) and list(value) == ["all"]):
        return list(known if every is None else every)
    names = [n.strip() for n in value.split(",")] if isinstance(value, str) else list(value)
    names = [n for n in names if n]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise ValueError(
            f"unknown {kind} {', '.join(unknown) or '(none)'}; choose from {', '.join(known)}"
        )
    return list(dict.fromkeys(names))


def _is_path(data: object) -> TypeGuard[str | os.PathLike[str]]:
    """A path object, or a string with a file suffix or a folder in it (not suite names)."""
    if isinstance(data, os.PathLike):
        return True
    return isinstance(data, str) and (bool(Path(data).suffix) or "/" in data or os.sep in data)


def _is_names(data: object) -> TypeGuard[str | Sequence[str]]:
    """A string of suite names, or a non-empty list of them."""
    return isinstance(data, str) or (
        isinstance(data, Sequence) and bool(data) and all(isinstance(item, str) for item in data)
    )


def _is_dataframe(data: object) -> TypeGuard[pd.DataFrame]:
    return type(data).__name__ == "DataFrame" and hasattr(data, "to_dict")


def _missing(value: object) -> bool:
    """None, a blank string, or NaN (an empty DataFrame cell)."""
    if isinstance(value, float):
        return math.isnan(value)
    return value is None or (isinstance(value, str) and not value.strip())


def _answers(value: object, where: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [str(value)]
    if (
        isinstance(value, (list, tuple))
        and value
        and all(isinstance(item, (str, int, float)) and not _missing(item) for item in value)
    ):
        return [str(item) for item in value]
    raise ValueError(
        f"{where}: 'expected' must be a string or a non-empty list of strings; got {value!r}"
    )


def tasks_from_rows(rows: Iterable[object], source: str = OWN_DATA) -> list[Task]:
    """One task per row of one's own data.

    Args:
        rows: Dicts with ``question`` and ``expected``; other keys become ``metadata``.
        source: What the rows came from (a file name), for the errors.

    Returns:
        The tasks ``data-001``, ``data-002``, ... of the suite ``"data"``.

    Raises:
        ValueError: A row without a question or an expected answer, or no row at all.
        TypeError: A row that is not a dict.
    """
    tasks = []
    for index, row in enumerate(rows, start=1):
        where = f"{source} row {index}"
        if not isinstance(row, Mapping):
            raise TypeError(f"{where} is {type(row).__name__}, not a dict with {FIELDS}")
        missing = [key for key in FIELDS if _missing(row.get(key))]
        if missing:
            keys = " or ".join(repr(key) for key in missing)
            raise ValueError(f"{where} has no {keys}; it has {sorted(map(str, row))}")
        if not isinstance(row["question"], str):
            raise ValueError(f"{where}: 'question' must be a string; got {row['question']!r}")
        answers = _answers(row["expected"], where)
        metadata = {str(k): v for k, v in row.items() if k not in FIELDS}
        tasks.append(
            Task(
                id=f"{OWN_DATA}-{index:03d}",
                suite=OWN_DATA,
                question=row["question"],
                answer=answers[0],
                aliases=tuple(answers[1:]),
                metadata=metadata,
            )
        )
    if not tasks:
        raise ValueError(f"{source} has no rows")
    return tasks


def _csv_expected(cell: str) -> str | list[str]:
    """A CSV cell of ``expected``: a JSON list is a list of answers, anything else one."""
    if cell.strip().startswith("["):
        try:
            parsed = json.loads(cell)
        except json.JSONDecodeError:
            return cell
        if isinstance(parsed, list):
            return parsed
    return cell


def read_rows(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The rows of a JSONL or CSV data file.

    Args:
        path: A ``.jsonl`` file (one JSON object per line; blank lines are skipped) or a
            ``.csv`` file with a header row.

    Returns:
        The rows as dicts.

    Raises:
        ValueError: Another file type, or a JSONL line that is not JSON.
        FileNotFoundError: No such file.
    """
    file = Path(path)
    suffix = file.suffix.lower()
    if suffix not in FILE_TYPES:
        raise ValueError(
            f"unknown data file type {suffix or '(none)'!r} of {file}; use a "
            f"{' or '.join(FILE_TYPES)} file, a list of dicts or a pandas DataFrame"
        )
    if not file.is_file():
        raise FileNotFoundError(f"no data file {file}")
    text = file.read_text(encoding="utf-8-sig")
    if suffix == ".csv":
        rows = [dict(row) for row in csv.DictReader(text.splitlines())]
        for row in rows:
            row.pop(None, None)  # cells beyond the header's columns
            if isinstance(row.get("expected"), str):
                row["expected"] = _csv_expected(row["expected"])
        return rows
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as error:
            raise ValueError(f"{file} line {number} is not JSON: {error}") from error
    return rows


def load_tasks(
    data: DataSource, *, limit: int | None = None, seed: int = DEFAULT_SEED
) -> dict[str, list[Task]]:
    """The tasks of an evaluation, by suite (see the module docstring for ``data``).

    Args:
        data: Bundled suite names, a list of row dicts, a JSONL or CSV path, or a pandas
            DataFrame.
        limit: Items per suite (the first ``limit``); None: every item.
        seed: Seed of the bundled suites.

    Returns:
        The tasks of each suite, in order; own data is the one suite ``"data"``.

    Raises:
        ValueError: An unknown suite name or file type, or a bad row.
        TypeError: Data of another kind, or a row that is not a dict.
        FileNotFoundError: A data file that does not exist.
    """
    if _is_path(data):
        tasks = tasks_from_rows(read_rows(data), Path(data).name)
    elif _is_names(data):
        names = choose_names(data, SUITE_NAMES, "suite", every=SUITES)
        return {name: make_suite(name, seed)[:limit] for name in names}
    elif _is_dataframe(data):
        tasks = tasks_from_rows(data.to_dict(orient="records"), "the DataFrame")
    elif isinstance(data, Sequence):
        tasks = tasks_from_rows(data)
    else:
        raise TypeError(
            f"evaluation data is suite names, a list of dicts, a .jsonl or .csv path or a "
            f"pandas DataFrame; got {type(data).__name__}"
        )
    return {OWN_DATA: tasks[:limit]}
