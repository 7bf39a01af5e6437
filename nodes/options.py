"""A loop's own keywords, declared once: ``Option`` in the loop's options ``TypedDict``.

A loop declares its keywords (its budgets and switches) in one ``TypedDict`` that extends
the shared options (``LoopOptions``, or ``ToolLoopOptions`` for a loop that calls
tools), each annotated with an ``Option`` that holds its default, what it means and its
bounds::

    class RefineOptions(LoopOptions[ResponseT, ContextT], total=False):
        max_rounds: Annotated[int, Option(2, "Rounds of feedback and revision.", minimum=1)]

Everything else reads that one declaration: the factory's ``**options: Unpack[...]``
(what editors and type checkers see), the checks a keyword gets when the graph is built,
the defaults a step finds in ``step.options``, the signature ``help()`` and notebooks
show, the error that lists a loop's keywords, and the command line's and Studio's
options.
"""

from __future__ import annotations

import inspect
import operator
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import typing_extensions

REQUIRED: Any = inspect.Parameter.empty
"""The default of an option the caller must give."""


@dataclass(frozen=True)
class Option:
    """A loop keyword's default, meaning and bounds (see the module's docstring).

    Attributes:
        default: The value when the caller gives none (``REQUIRED``: the caller must).
        doc: One sentence saying what the keyword does (shown by ``loopgraphs list`` and
            in the factory's signature).
        minimum: Smallest value of a number, or the name of another of the loop's
            keywords whose value is the smallest.
        maximum: Largest value of a number, or the name of another of the loop's
            keywords whose value is the largest (``beam_width`` at most ``n_branches``).
    """

    default: Any = REQUIRED
    doc: str = ""
    minimum: float | str | None = None
    maximum: float | str | None = None


@dataclass(frozen=True)
class OwnOption:
    """One keyword of a loop's own, as its options type declares it."""

    name: str
    hint: Any
    option: Option

    @property
    def default(self) -> Any:
        return self.option.default

    @property
    def required(self) -> bool:
        return self.option.default is REQUIRED

    def check(self, loop: str, value: object) -> object:
        """``value`` when it fits the keyword's type and bounds.

        Raises:
            TypeError, ValueError: naming the keyword, what it takes and what it got.
        """
        checked = _checked(self.hint, value)
        if checked is _MISFIT:
            # A value of a choice's type that is none of the choices is out of range.
            near = any(type(value) is type(choice) for choice in choices_of(self.hint))
            raise (ValueError if near else TypeError)(
                f"{loop}: {self.name} must be {_described(self.hint)}; got {value!r} "
                f"({type(value).__name__})"
            )
        self.check_bounds(loop, value)
        return value

    def check_bounds(
        self, loop: str, value: object, given: Mapping[str, object] | None = None
    ) -> None:
        """Check a number against the keyword's bounds: those that are numbers, and those
        naming another keyword whose value is in ``given`` (the loop's keywords).

        Raises:
            ValueError: naming the keyword, the bound and what it got.
        """
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return
        for bound, sign, beyond in (
            (self.option.minimum, ">=", operator.lt),
            (self.option.maximum, "<=", operator.gt),
        ):
            limit = (given or {}).get(bound) if isinstance(bound, str) else bound
            if isinstance(limit, (int, float)) and beyond(value, limit):
                shown = f"{bound} ({limit})" if isinstance(bound, str) else _number(limit)
                raise ValueError(f"{loop}: {self.name} must be {sign} {shown}; got {value}")


def own_options(options: type[Any], shared: type[Any]) -> tuple[OwnOption, ...]:
    """The keywords ``options`` (a loop's options ``TypedDict``) declares besides those of
    ``shared`` (``LoopOptions`` or ``ToolLoopOptions``), in declaration order.

    Raises:
        TypeError: ``options`` is not a ``TypedDict`` extending ``shared``, or one of its
            keywords has no ``Option`` (naming the keyword and how to declare it).
    """
    if not typing_extensions.is_typeddict(options):
        raise TypeError(
            f"a loop's options must be a TypedDict extending {shared.__name__}; got {options!r}"
        )
    hints = typing.get_type_hints(options, include_extras=True)
    base = set(typing.get_type_hints(shared))
    missing = base - set(hints)
    if missing:
        raise TypeError(
            f"{options.__name__} must extend {shared.__name__} (it lacks "
            f"{', '.join(sorted(missing))}): declare it as "
            f"class {options.__name__}({shared.__name__}, total=False)"
        )
    found: list[OwnOption] = []
    for name, hint in hints.items():
        if name in base:
            continue
        inner, metadata = _unwrapped(hint)
        declared = [m for m in metadata if isinstance(m, Option)]
        if not declared:
            raise TypeError(
                f"{options.__name__}.{name} has no Option: declare it as "
                f"{name}: Annotated[{_type_name(inner)}, Option(default, 'what it does')]"
            )
        found.append(OwnOption(name, inner, declared[-1]))
    names = {own.name for own in found}
    for own in found:
        for bound in (own.option.minimum, own.option.maximum):
            if isinstance(bound, str) and bound not in names:
                raise TypeError(
                    f"{options.__name__}.{own.name} is bounded by {bound!r}, which is not "
                    f"one of its keywords ({', '.join(sorted(names))})"
                )
    return tuple(found)


def resolved(
    loop: str, declared: tuple[OwnOption, ...], given: Mapping[str, object]
) -> dict[str, object]:
    """The loop's own keywords as its steps read them: each given value checked, each
    missing one at its default.

    Raises:
        TypeError: a required keyword is missing, or a value is of the wrong type.
        ValueError: a value is out of its bounds.
    """
    values: dict[str, object] = {}
    for own in declared:
        if own.name in given:
            values[own.name] = own.check(loop, given[own.name])
        elif own.required:
            raise TypeError(
                f"{loop}: missing keyword {own.name!r} ({_described(own.hint)}): "
                f"pass {own.name}=... to the factory"
            )
        else:
            values[own.name] = own.default
    for own in declared:  # the bounds that name another keyword, now all are known
        own.check_bounds(loop, values.get(own.name), values)
    return values


def signature_of(
    takes_tools: bool, declared: tuple[OwnOption, ...], shared: type[Any]
) -> inspect.Signature:
    """The factory's signature as ``help()`` and notebooks show it: ``model`` (and
    ``tools``), the loop's own keywords with their defaults, then the shared options."""
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    parameters = [inspect.Parameter("model", kind)]
    if takes_tools:
        parameters.append(inspect.Parameter("tools", kind, default=None))
    keyword = inspect.Parameter.KEYWORD_ONLY
    for own in declared:
        parameters.append(
            inspect.Parameter(own.name, keyword, default=own.default, annotation=own.hint)
        )
    parameters.append(inspect.Parameter("options", inspect.Parameter.VAR_KEYWORD))
    return inspect.Signature(parameters)


_MISFIT = object()
_UNIONS = (typing.Union, types.UnionType)


def _unwrapped(hint: Any) -> tuple[Any, tuple[object, ...]]:
    """A field's type without ``Required``/``NotRequired`` and its ``Annotated`` metadata."""
    origin = typing.get_origin(hint)
    if origin in (typing_extensions.Required, typing_extensions.NotRequired):
        hint = typing.get_args(hint)[0]
    metadata: tuple[object, ...] = getattr(hint, "__metadata__", ())
    if metadata:
        hint = hint.__origin__
    return hint, metadata


def _checked(hint: Any, value: object) -> object:
    """``value`` when it is of type ``hint`` as far as a keyword's types go (bool, int,
    float, str, a ``Literal``, a union of those, ``None``); ``_MISFIT`` otherwise. Other
    types are not checked here."""
    origin = typing.get_origin(hint)
    if hint is Any:
        return value
    if origin is Literal:
        return value if value in typing.get_args(hint) else _MISFIT
    if origin in _UNIONS:
        for arm in typing.get_args(hint):
            if _checked(arm, value) is not _MISFIT:
                return value
        return _MISFIT
    if hint is type(None):
        return value if value is None else _MISFIT
    if hint is bool:
        return value if isinstance(value, bool) else _MISFIT
    if hint is int:
        return value if isinstance(value, int) and not isinstance(value, bool) else _MISFIT
    if hint is float:
        fits = isinstance(value, (int, float)) and not isinstance(value, bool)
        return value if fits else _MISFIT
    if hint is str:
        return value if isinstance(value, str) else _MISFIT
    return value


def _described(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if origin is Literal:
        return "one of " + ", ".join(repr(choice) for choice in typing.get_args(hint))
    if hint is bool:
        return "True or False"
    if hint is int:
        return "an int"
    if hint is float:
        return "a number"
    if hint is str:
        return "a string"
    return _type_name(hint)


def _type_name(hint: Any) -> str:
    return getattr(hint, "__name__", None) or repr(hint).replace("typing.", "")


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def choices_of(hint: Any) -> tuple[object, ...]:
    """The values a ``Literal`` keyword takes (empty for any other type)."""
    return typing.get_args(hint) if typing.get_origin(hint) is Literal else ()
