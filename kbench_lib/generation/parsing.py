"""Finding the candidate in a model's response: the code block that defines ``class ModelNew``.

Reasoning text around the code, ``<think>...</think>`` sections and several code blocks are all
fine: the last fenced block that defines ``ModelNew`` wins (models tend to end with their final
version). A response with no fence at all is taken whole when it parses as Python and defines
``ModelNew``. Anything else has no usable code, and its sample is recorded with the failure
``no_code``.
"""
from __future__ import annotations

import ast
import re

NO_CODE = "no_code"
_THINK_RE = re.compile(r"<(think|thinking|reasoning)>.*?(</\1>|$)", re.DOTALL | re.IGNORECASE)
_FENCE_RE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([\w+-]*)[^\n]*\n(.*?)^[ \t]*\1[ \t]*$", re.DOTALL | re.MULTILINE)
_DEFINES_RE = re.compile(r"^\s*class\s+ModelNew\b", re.MULTILINE)
_PY_TAGS = {"", "python", "py", "python3", "py3"}


def strip_reasoning(text: str) -> str:
    """The response without its think-tag sections (an unclosed one runs to the end)."""
    return _THINK_RE.sub("", text)


def _defines_model_new(code: str) -> bool:
    return bool(_DEFINES_RE.search(code))


def extract_code(text: str | None) -> str | None:
    """The candidate source in ``text``, or None when it has no usable code."""
    if not text:
        return None
    body = strip_reasoning(text)
    blocks = [(tag.lower(), code) for _, tag, code in _FENCE_RE.findall(body)]
    chosen = [code for tag, code in blocks if tag in _PY_TAGS and _defines_model_new(code)]
    if chosen:
        return chosen[-1].strip("\n") + "\n"
    if not blocks and _defines_model_new(body):
        try:
            ast.parse(body)
        except SyntaxError:
            return None
        return body.strip("\n") + "\n"
    return None


def no_code_message(text: str | None, limit: int = 600) -> str:
    """The verdict message of a response without code: what the model said, cut short."""
    if not text:
        return "the model's response was empty"
    shown = text.strip()
    if len(shown) > limit:
        shown = shown[: limit // 2] + " [...] " + shown[-limit // 2:]
    return f"no code block defining class ModelNew in the model's response ({len(text)} characters): {shown}"
