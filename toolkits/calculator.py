"""A safe arithmetic calculator tool.

Expressions are parsed with :mod:`ast` and evaluated by walking the tree; only numbers, a
fixed set of operators, a few math functions and two constants are allowed. Nothing is ever
passed to ``eval`` or ``exec``, and work that could take long (huge powers, huge integers)
is refused before it is done.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field

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

_DESCRIPTION = (
    "Evaluate an arithmetic expression and return the result. Supports + - * / // % ** "
    "(x or × also multiply, ^ is power), parentheses, unary minus, decimals, the functions "
    "sqrt, abs, round, min, max, floor, ceil, log, exp, sin, cos, tan and the constants pi "
    "and e. Example: (3 + 4) * 2 ^ 3"
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
        return format_number(evaluate(expression))
    except CalculatorError as exc:
        return f"Error: {exc}"


calculator: BaseTool = StructuredTool.from_function(
    func=_calculate,
    name="calculator",
    description=_DESCRIPTION,
    args_schema=CalculatorInput,
)
"""LangChain tool evaluating arithmetic; returns the result, or a message starting with
``Error:`` for any expression it refuses."""
