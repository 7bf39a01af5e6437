"""A safe arithmetic calculator tool.

Expressions are parsed with :mod:`ast` and evaluated by walking the tree; only numbers, a
fixed set of operators, a few math functions and two constants are allowed. Nothing is ever
passed to ``eval`` or ``exec``, and work that could take long (huge powers, huge integers)
is refused before it is done.

The tool also reads the loose forms small models write when the meaning is plain: an
expression with its own guessed result (``6*7 = 42``: the guess is ignored and the reply
says so), wrapped in backticks or quotes, phrased as a question (``what is 6*7?``), or with
thousands separators (``1,000 * 3``).
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field

from loopgraphs.toolkits.examples import EXAMPLES_KEY, ToolExample

MAX_EXPRESSION_CHARS = 500
MAX_NESTING = 50
MAX_EXPONENT = 1000
MAX_RESULT_DIGITS = 4000

Number = int | float

_BINARY_OPERATORS: dict[type[ast.operator], Callable[[Number, Number], Number]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}


def _round(value: Number, ndigits: Number | None = None) -> Number:
    # round(5, -10**18) would compute 10**(10**18): bound the digits like any result.
    if isinstance(ndigits, int) and abs(ndigits) > MAX_RESULT_DIGITS:
        raise CalculatorError(f"round() digits must be within ±{MAX_RESULT_DIGITS}")
    return round(value) if ndigits is None else round(value, ndigits)  # type: ignore[arg-type]


_FUNCTIONS: dict[str, Callable[..., Number]] = {
    "sqrt": math.sqrt,
    "abs": abs,
    "round": _round,
    "min": min,
    "max": max,
    "floor": math.floor,
    "ceil": math.ceil,
    "log": math.log,
    "exp": math.exp,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
}

_CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e}

_TIMES_SIGN = re.compile(r"(?<=[\d.)])(\s*)[xX](?=\s*[\w.(])")
_HEX_PREFIX = re.compile(r"(?:^|[^\w.])0$")

_WRAPPERS = (("```", "```"), ("`", "`"), ('"', '"'), ("'", "'"), ("“", "”"), ("‘", "’"))
_FENCE_LANGUAGE = re.compile(r"^(?:python|py|math|text)\s*\n", re.IGNORECASE)
_QUESTION = re.compile(
    r"^(?:what\s+is|what's|whats|how\s+much\s+is|calculate|compute|evaluate|solve)\b\s*:?\s*",
    re.IGNORECASE,
)
_END_PUNCTUATION = re.compile(r"[\s?!.]+$")
_ASSIGNMENT = re.compile(r"(?<![<>=!])=(?!=)")
_GROUPED_NUMBER = re.compile(r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?![\d,])")

_DESCRIPTION = (
    "Evaluate an arithmetic expression and return the result. Supports + - * / // % ** "
    "(x or × also multiply, ÷ divides, ^ is power), parentheses, unary minus, decimals, the "
    "functions sqrt, abs, round, min, max, floor, ceil, log, exp, sin, cos, tan and the "
    "constants pi and e. Example: (3 + 4) * 2 ^ 3. Text after = is ignored."
)


class CalculatorError(ValueError):
    """An expression the calculator refuses or cannot evaluate."""


class CalculatorInput(BaseModel):
    """Arguments of the calculator tool."""

    expression: str = Field(description="The arithmetic expression, e.g. '(3 + 4) * 2'.")


def _times(match: re.Match[str]) -> str:
    # "0x1F" is a hexadecimal literal, not 0 times 1F.
    before = match.string[: match.start()]
    if not match.group(1) and _HEX_PREFIX.search(before):
        return match.group(0)
    return f"{match.group(1)}*"


def _normalise(expression: str) -> str:
    text = expression.replace("×", "*").replace("÷", "/").replace("−", "-")
    text = _TIMES_SIGN.sub(_times, text)
    return text.replace("^", "**")


def _check_parenthesis_depth(text: str) -> None:
    depth = 0
    for char in text:
        if char in "([{":
            depth += 1
            if depth > MAX_NESTING:
                raise CalculatorError(f"expression is nested deeper than {MAX_NESTING} levels")
        elif char in ")]}":
            depth -= 1


def _checked(value: Number) -> Number:
    if isinstance(value, float) and not math.isfinite(value):
        raise CalculatorError("result is not a finite number")
    if isinstance(value, int) and value.bit_length() > MAX_RESULT_DIGITS * math.log2(10):
        raise CalculatorError(f"result has more than {MAX_RESULT_DIGITS} digits")
    return value


def _power(base: Number, exponent: Number) -> Number:
    if isinstance(base, int) and isinstance(exponent, int) and abs(base) > 1:
        if abs(exponent) > MAX_EXPONENT:
            raise CalculatorError(f"exponent {exponent} is too large (limit {MAX_EXPONENT})")
        if exponent * math.log10(abs(base)) > MAX_RESULT_DIGITS:
            raise CalculatorError(f"result would have more than {MAX_RESULT_DIGITS} digits")
    result = base**exponent
    if isinstance(result, complex):
        raise CalculatorError("result is not a real number")
    return result


def _evaluate(node: ast.AST, depth: int) -> Number:
    if depth > MAX_NESTING:
        raise CalculatorError(f"expression is nested deeper than {MAX_NESTING} levels")
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise CalculatorError(f"only numbers are allowed, got {value!r}")
        return _checked(value)
    if isinstance(node, ast.BinOp):
        # Operands chained at one level (1 + 2 + 3) do not count as nesting.
        left = _evaluate(node.left, depth if isinstance(node.left, ast.BinOp) else depth + 1)
        right = _evaluate(node.right, depth + 1)
        if isinstance(node.op, ast.Pow):
            return _checked(_power(left, right))
        binary = _BINARY_OPERATORS.get(type(node.op))
        if binary is None:
            raise CalculatorError(f"operator {type(node.op).__name__} is not allowed")
        return _checked(binary(left, right))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        operand = _evaluate(node.operand, depth + 1)
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.Name):
        if node.id not in _CONSTANTS:
            raise CalculatorError(f"name '{node.id}' is not allowed")
        return _CONSTANTS[node.id]
    if isinstance(node, ast.Call):
        return _call(node, depth)
    raise CalculatorError(f"{type(node).__name__} is not allowed in arithmetic expressions")


def _call(node: ast.Call, depth: int) -> Number:
    if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCTIONS:
        allowed = ", ".join(_FUNCTIONS)
        raise CalculatorError(f"only these functions can be called: {allowed}")
    if node.keywords:
        raise CalculatorError("keyword arguments are not allowed")
    args = [_evaluate(arg, depth + 1) for arg in node.args]
    return _checked(_FUNCTIONS[node.func.id](*args))


def evaluate(expression: str) -> Number:
    """Evaluate an arithmetic expression safely.

    Args:
        expression: The expression; ``x``/``×`` are read as multiplication and ``^`` as power.

    Returns:
        The value, as ``int`` when the computation stays in integers.

    Raises:
        CalculatorError: If the expression is refused or cannot be evaluated.
    """
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise CalculatorError(
            f"expression is {len(expression)} characters long (limit {MAX_EXPRESSION_CHARS})"
        )
    text = _normalise(expression).strip()
    if not text:
        raise CalculatorError("expression is empty")
    _check_parenthesis_depth(text)
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise CalculatorError(f"invalid syntax: {exc.msg}") from None
    except ValueError as exc:
        raise CalculatorError(f"invalid syntax: {exc}") from None
    try:
        return _evaluate(tree.body, 0)
    except CalculatorError:
        raise
    except ZeroDivisionError:
        raise CalculatorError("division by zero") from None
    except OverflowError:
        raise CalculatorError("result is too large") from None
    except (TypeError, ValueError) as exc:
        raise CalculatorError(str(exc)) from None


def _unwrap(text: str) -> str:
    """Strip whitespace and any backticks, code fences or quotes around the whole text."""
    text = text.strip()
    changed = True
    while changed:
        changed = False
        for opening, closing in _WRAPPERS:
            inner = len(text) - len(opening) - len(closing)
            if inner > 0 and text.startswith(opening) and text.endswith(closing):
                text = text[len(opening) : len(text) - len(closing)]
                text = _FENCE_LANGUAGE.sub("", text, count=1).strip()
                changed = True
                break
    return text


def _inside_calls(text: str) -> list[bool]:
    """For each character, whether it lies between the parentheses of a call like ``max(``."""
    inside: list[bool] = []
    opened: list[bool] = []  # per open parenthesis: does it start a call?
    open_calls = 0
    previous = ""
    for char in text:
        if char == "(":
            opened.append(previous.isalnum() or previous == "_")
            open_calls += opened[-1]
        elif char == ")" and opened:
            open_calls -= opened.pop()
        inside.append(open_calls > 0)
        if not char.isspace():
            previous = char
    return inside


def _without_grouping(text: str) -> str:
    """Drop thousands separators (``1,000``) where a comma cannot separate arguments."""
    inside = _inside_calls(text)
    return _GROUPED_NUMBER.sub(
        lambda match: match.group(0) if inside[match.start()] else match.group(0).replace(",", ""),
        text,
    )


def _loose_reading(expression: str) -> tuple[str, str | None] | None:
    """Read the loose forms small models write; None when there is nothing to reread.

    Returns:
        The expression to evaluate and the guessed result after ``=`` that was dropped
        (None when there was none).
    """
    text = _unwrap(expression)
    text = _QUESTION.sub("", text, count=1)
    text = _unwrap(_END_PUNCTUATION.sub("", text))
    text = text.lstrip("= ")
    ignored = None
    assignment = _ASSIGNMENT.search(text)
    if assignment is not None:
        guess = text[assignment.end() :].strip()
        ignored = f"= {guess}" if guess else None
        text = _unwrap(text[: assignment.start()])
    text = _without_grouping(text)
    if text == expression.strip() or not text:
        return None
    return text, ignored


def calculate(expression: str) -> tuple[Number, str | None]:
    """Evaluate an expression, also accepting the loose forms small models write.

    The expression is first evaluated as written. Only if that fails is it read again
    without surrounding backticks, code fences or quotes, without a leading question
    (``what is``, ``calculate``, ...) and trailing ``?``, without a guessed result after
    ``=`` (``6*7 = 42`` evaluates ``6*7``), and without thousands separators outside
    function calls (``1,000 * 3``, but ``max(1,000)`` keeps its two arguments). Every limit
    of :func:`evaluate` applies to both readings.

    Args:
        expression: The text the model gave.

    Returns:
        The value, and the text after ``=`` that was ignored (``None`` when there was
        none).

    Raises:
        CalculatorError: If neither reading can be evaluated. The error is the one of the
            expression as written, unless that text was not even valid syntax.
    """
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise CalculatorError(
            f"expression is {len(expression)} characters long (limit {MAX_EXPRESSION_CHARS})"
        )
    try:
        return evaluate(expression), None
    except CalculatorError as error:
        reading = _loose_reading(expression)
        if reading is None:
            raise
        try:
            return evaluate(reading[0]), reading[1]
        except CalculatorError as loose_error:
            # Text that was not even valid syntax is better explained by its loose reading.
            raise (loose_error if str(error).startswith("invalid syntax") else error) from None


def format_number(value: Number) -> str:
    """Format a result for display.

    Floats are rounded to 15 significant digits to hide binary noise, and floats with an
    integral value are shown without a decimal point.

    Args:
        value: A finite number.

    Returns:
        The text, e.g. ``"3.5"``, ``"4"`` or ``"0.333333333333333"``.
    """
    if isinstance(value, int):
        return str(value)
    rounded = float(f"{value:.15g}")
    if rounded.is_integer() and abs(rounded) < 1e15:
        return str(int(rounded))
    return repr(rounded)


def _calculate(expression: str) -> str:
    try:
        value, ignored = calculate(expression)
    except CalculatorError as exc:
        return f"Error: {exc}"
    result = format_number(value)
    return f'{result} (ignored "{ignored}")' if ignored else result


calculator: BaseTool = StructuredTool.from_function(
    func=_calculate,
    name="calculator",
    description=_DESCRIPTION,
    args_schema=CalculatorInput,
    metadata={
        EXAMPLES_KEY: [
            ToolExample("What is 12 * 7 + 5?", {"expression": "12 * 7 + 5"}, "89", "89"),
            ToolExample("What is (12 + 3) * 7?", {"expression": "(12 + 3) * 7"}, "105", "105"),
            ToolExample(
                "What is (9 + 6) * 5 - 80?", {"expression": "(9 + 6) * 5 - 80"}, "-5", "-5"
            ),
        ]
    },
)
"""LangChain tool evaluating arithmetic; returns the result, or a message starting with
``Error:`` for any expression it refuses."""
