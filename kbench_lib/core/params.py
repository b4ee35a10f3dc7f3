"""Notebook parameters given on papermill's command line.

``papermill NB OUT -p models '{"reference": 0}'`` hands the notebook the *string*
``'{"reference": 0}'`` (``-p`` parses numbers and booleans, nothing else; ``-y`` takes YAML).
:func:`structured` turns such a string into the list or dict the parameter declares, so both forms
work, and says in one line what is wrong with one that is neither.
"""
from __future__ import annotations

import ast
import json


class ParameterError(ValueError):
    """A notebook parameter that is not what it declares: one line."""


def structured(value, kind: type, name: str):
    """``value`` as a ``kind`` (``list`` or ``dict``): itself where it is one already; parsed where
    it is a string (JSON, else a Python literal; for a list, a bare word is a list of that word);
    :class:`ParameterError` otherwise."""
    if isinstance(value, kind):
        return value
    if isinstance(value, (list, tuple)) and kind is list:
        return list(value)
    if not isinstance(value, str):
        raise ParameterError(f"parameter {name}: expected a {kind.__name__}, got {type(value).__name__} {value!r}")
    text = value.strip()
    for parse in (json.loads, ast.literal_eval):
        try:
            parsed = parse(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(parsed, kind) or (kind is list and isinstance(parsed, tuple)):
            return list(parsed) if kind is list else parsed
        break
    if kind is list and text and not any(c in text for c in "[]{}(),:'\""):
        return [text]  # -p levels level1
    example = '\'["level1", "level2"]\'' if kind is list else '\'{"reference": 0}\''
    raise ParameterError(f"parameter {name}: {value!r} is not a {kind.__name__} (give one as JSON, e.g. -p {name} {example})")


__all__ = ["ParameterError", "structured"]
