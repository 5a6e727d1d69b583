"""calculate: arithmetic from a string, evaluated by walking the syntax tree (no eval)."""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

from tools.definition import tool
from tools.errors import ToolError

MAX_EXPRESSION_CHARS = 500
MAX_EXPONENT = 10_000
MAX_INT_DIGITS = 4_000

Number = int | float

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
    "sqrt": math.sqrt,
    "exp": math.exp,
    "log": math.log,
    "log10": math.log10,
    "log2": math.log2,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "asin": math.asin,
    "acos": math.acos,
    "atan": math.atan,
    "floor": math.floor,
    "ceil": math.ceil,
    "factorial": math.factorial,
}
_CONSTANTS: dict[str, Number] = {"pi": math.pi, "e": math.e, "tau": math.tau}


def evaluate(expression: str) -> Number:
    """Evaluate arithmetic safely; raise ToolError with a readable reason otherwise."""
    text = expression.strip().replace("^", "**").replace("×", "*").replace("÷", "/")
    if not text:
        raise ToolError("The expression is empty.")
    if len(text) > MAX_EXPRESSION_CHARS:
        raise ToolError(f"The expression is longer than {MAX_EXPRESSION_CHARS} characters.")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise ToolError(f"Cannot parse {expression!r} as arithmetic.") from None
    try:
        return _eval(tree.body)
    except ZeroDivisionError:
        raise ToolError("Division by zero.") from None
    except OverflowError:
        raise ToolError("The result is too large.") from None
    except (ValueError, TypeError) as exc:
        raise ToolError(f"Math error: {exc}.") from None


def _eval(node: ast.AST) -> Number:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise ToolError(f"Only numbers are allowed, not {node.value!r}.")
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow):
            _check_power(left, right)
        result = _BINARY[type(node.op)](left, right)
        return _check_size(result)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _check_size(_UNARY[type(node.op)](_eval(node.operand)))
    if isinstance(node, ast.Name):
        if node.id in _CONSTANTS:
            return _CONSTANTS[node.id]
        raise ToolError(f"Unknown name {node.id!r}. Known constants: {', '.join(_CONSTANTS)}.")
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        function = _FUNCTIONS.get(node.func.id)
        if function is None:
            raise ToolError(
                f"Unknown function {node.func.id!r}. Known: {', '.join(sorted(_FUNCTIONS))}."
            )
        args = [_eval(arg) for arg in node.args]
        if function is math.factorial and (
            len(args) != 1 or not isinstance(args[0], int) or not 0 <= args[0] <= 1000
        ):
            raise ToolError("factorial takes one whole number from 0 to 1000.")
        return _check_size(function(*args))
    raise ToolError(f"Unsupported syntax: {ast.unparse(node)!r}. Use numbers and + - * / ** %.")


def _check_power(base: Number, exponent: Number) -> None:
    if abs(exponent) > MAX_EXPONENT and abs(base) not in (0, 1):
        raise ToolError(f"Exponents above {MAX_EXPONENT} are not supported.")


def _check_size(value: Any) -> Number:
    if isinstance(value, complex):
        raise ToolError("The result is a complex number, which is not supported.")
    if isinstance(value, int) and value.bit_length() > MAX_INT_DIGITS * 3.33:
        raise ToolError("The result is too large.")
    if isinstance(value, float) and math.isnan(value):
        raise ToolError("The result is not a number.")
    return value  # type: ignore[no-any-return]


@tool
def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression exactly and return the result.

    Supports + - * / // % ** (or ^), parentheses, the constants pi, e and tau, and the
    functions abs, round, min, max, sqrt, exp, log, log10, log2, sin, cos, tan, asin, acos,
    atan, floor, ceil and factorial.

    Args:
        expression: The arithmetic to evaluate, for example "(17.5 * 3 + 2) / 4" or "2^10".
    """
    result = evaluate(expression)
    if isinstance(result, float) and result.is_integer() and abs(result) < 1e15:
        return str(int(result))
    return str(result)
