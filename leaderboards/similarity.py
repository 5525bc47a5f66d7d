"""Near-clone detection for the archive (issue 34): how much two kernels share once names and layout are set aside.

A file becomes a list of normalised tokens: comments, whitespace and line structure dropped; string literals one
token ``S``; every identifier ``V`` except the language's keywords and names right after a ``.`` (``torch.matmul``,
``tl.load``: what the code calls, which a copier keeps); numbers kept. Its fingerprint is the set of hashes of every
run of ``SHINGLE`` consecutive tokens, and two files' similarity is the Jaccard index of their fingerprints (shared
runs over all runs). Renaming variables and reformatting leave it near 1; two honest solutions of one problem share
the problem's vocabulary but few long runs, and land far below ``NEAR``.

Python files go through the standard tokenizer; CUDA and anything it cannot read through a small C-like tokenizer.
The hashes are BLAKE2b (not ``hash()``, which is salted per process), so fingerprints are the same in every process.
"""

from __future__ import annotations

import hashlib
import io
import keyword
import re
import tokenize

SHINGLE = 5
"""Tokens per shingle: long enough that the problem's common vocabulary (``def custom_kernel(data):``) is not a
match by itself, short enough that a few changed lines leave most shingles intact."""
NEAR = 0.8
"""The similarity from which a published kernel is flagged as a near copy of an earlier one by someone else."""

_C_TOKEN = re.compile(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'|[A-Za-z_]\w*|\d[\w.]*|\S", re.DOTALL)
_C_KEYWORDS = frozenset(
    [
        "auto",
        "bool",
        "break",
        "case",
        "char",
        "class",
        "const",
        "constexpr",
        "continue",
        "default",
        "do",
        "double",
        "else",
        "enum",
        "extern",
        "float",
        "for",
        "if",
        "inline",
        "int",
        "long",
        "namespace",
        "return",
        "short",
        "signed",
        "sizeof",
        "static",
        "struct",
        "switch",
        "template",
        "typename",
        "unsigned",
        "using",
        "void",
        "volatile",
        "while",
        "__global__",
        "__device__",
        "__host__",
        "__shared__",
        "__syncthreads",
        "__restrict__",
        "include",
        "define",
    ]
)
_SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}


def _python_tokens(code: str) -> list[str]:
    out: list[str] = []
    previous = ""
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        if tok.type in _SKIPPED:
            continue
        if tok.type == tokenize.STRING:
            text = "S"
        elif tok.type == tokenize.NAME:
            text = tok.string if keyword.iskeyword(tok.string) or previous == "." else "V"
        else:
            text = tok.string
        out.append(text)
        previous = tok.string
    return out


def _c_tokens(code: str) -> list[str]:
    out: list[str] = []
    previous = ""
    for text in _C_TOKEN.findall(code):
        if text.startswith(("//", "/*")):
            continue
        if text[0] in "\"'":
            token = "S"
        elif text[0].isalpha() or text[0] == "_":
            token = text if text in _C_KEYWORDS or previous in (".", "->", ":") else "V"
        else:
            token = text
        out.append(token)
        previous = text
    return out


def normalised_tokens(code: str, file_name: str) -> list[str]:
    """The file's tokens with names, literals and layout normalised (the module's docstring says how)."""
    if file_name.endswith(".py"):
        try:
            return _python_tokens(code)
        except (tokenize.TokenError, SyntaxError, IndentationError):
            pass  # not valid Python: the C-like tokenizer still reads its words and symbols
    return _c_tokens(code)


def fingerprint(code: str, file_name: str) -> frozenset[bytes]:
    """The hashes of every run of ``SHINGLE`` normalised tokens (one run of all of them, for a shorter file)."""
    tokens = normalised_tokens(code, file_name)
    runs = [tokens[i : i + SHINGLE] for i in range(max(1, len(tokens) - SHINGLE + 1))]
    return frozenset(hashlib.blake2b("\x1f".join(run).encode(), digest_size=8).digest() for run in runs if run)


def similarity(a: frozenset[bytes], b: frozenset[bytes]) -> float:
    """The Jaccard index of two fingerprints: 1.0 the same runs, 0.0 none shared (or both empty)."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0
