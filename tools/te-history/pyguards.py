"""The guards of TE's Python selector, `get_attention_backend`, at one release.

A guard is one statement that takes a backend out of the running (`use_fused_attention =
False`, `use_flash_attention_3 = False`, `_disable_all_flash_attention()`, ...) together with
the `if` conditions that lead to it, read with `ast` so that formatting changes (black's
reflows, moved comments) do not make a new guard. Its identity across releases is the backend
and the conjunction of the conditions on its path, normalized by `ast.unparse`: a guard whose
condition changes (a cuDNN bound moved, a clause added) is a new guard in that release.
"""

import ast
import re
from dataclasses import dataclass, field

# The variables whose assignment to False drops a backend, and the backend each names.
BACKEND_VARS = {
    "use_flash_attention": "FlashAttention",
    "use_flash_attention_2": "FlashAttention2",
    "use_flash_attention_3": "FlashAttention3",
    "use_flash_attention_4": "FlashAttention4",
    "use_fused_attention": "FusedAttention",
    "use_unfused_attention": "UnfusedDotProductAttention",
}
# Helpers TE defines inside the function that drop every flash-attn generation.
DISABLE_ALL_FLASH = {"_disable_all_flash_attention"}
LOG_CALLS = {"debug", "warning", "info", "warn"}


@dataclass
class PyGuard:
    backend: str
    path: list                      # the `if` conditions leading to the statement, outermost first
    message: str                    # the nearest log message, as TE formats it (format string)
    line: int                       # the disabling statement's line in the file
    lines: list = field(default_factory=list)  # lines of the conditions and the statement
    own: list = field(default_factory=list)    # the innermost condition, the message and the statement

    def key(self) -> str:
        return self.backend + " | " + " && ".join(self.path)


def _is_false(node) -> bool:
    return isinstance(node, ast.Constant) and node.value in (False, 0) and not isinstance(node.value, str)


def _disabled(stmt):
    """The backend a statement drops, or None."""
    if isinstance(stmt, ast.Assign) and _is_false(stmt.value):
        for target in stmt.targets:
            if isinstance(target, ast.Name) and target.id in BACKEND_VARS:
                return BACKEND_VARS[target.id]
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        func = stmt.value.func
        if isinstance(func, ast.Name) and func.id in DISABLE_ALL_FLASH:
            return "FlashAttention"
    return None


def _log_message(stmt):
    """The format string of a logger/warnings call statement, or None."""
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return None
    func = stmt.value.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if name not in LOG_CALLS or not stmt.value.args:
        return None
    first = stmt.value.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        return first.value
    if isinstance(first, ast.JoinedStr):
        return ast.unparse(first)
    return ast.unparse(first)


def _messages_in(stmt):
    """Every log message in a statement as (first line, last line, text), in source order."""
    out = []
    for node in ast.walk(stmt):
        if isinstance(node, ast.Expr):
            msg = _log_message(node)
            if msg is not None:
                out.append((node.lineno, node.end_lineno, msg))
    return sorted(out)


def _normalize(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _walk(stmts, path, path_lines, out, inner_lines=()):
    for i, stmt in enumerate(stmts):
        backend = _disabled(stmt)
        if backend is not None:
            message = None
            for prev in reversed(stmts[:i]):
                found = _messages_in(prev)
                if found:
                    message = found[-1]
                    break
            if message is None:
                for nxt in stmts[i + 1:]:
                    found = _messages_in(nxt)
                    if found:
                        message = found[0]
                        break
            msg_lines = list(range(message[0], message[1] + 1)) if message else []
            out.append(PyGuard(backend, list(path), _normalize(message[2] if message else ""), stmt.lineno,
                               sorted(set(path_lines + [stmt.lineno])),
                               sorted(set(list(inner_lines) + msg_lines + [stmt.lineno]))))
        if isinstance(stmt, ast.If):
            test = _normalize(ast.unparse(stmt.test))
            test_lines = list(range(stmt.test.lineno, stmt.test.end_lineno + 1))
            _walk(stmt.body, path + [test], path_lines + test_lines, out, test_lines)
            if stmt.orelse:
                _walk(stmt.orelse, path + [f"not ({test})"], path_lines + test_lines, out, test_lines)
        elif isinstance(stmt, (ast.For, ast.While, ast.With, ast.Try)):
            _walk(stmt.body, path, path_lines, out, inner_lines)
            for extra in ("orelse", "finalbody"):
                _walk(getattr(stmt, extra, []) or [], path, path_lines, out, inner_lines)
            for handler in getattr(stmt, "handlers", []) or []:
                _walk(handler.body, path, path_lines, out, inner_lines)
        # Nested function definitions are helpers; their bodies are not guards.


def function_span(source: str, name: str):
    """(first line, last line) of the module-level function `name`, or None."""
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node.lineno, node.end_lineno
    return None


def guards(source: str, name: str = "get_attention_backend"):
    """The guards of the module-level function `name` in a Python source text."""
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            out = []
            _walk(node.body, [], [], out)
            return out
    raise LookupError(f"no function {name}")
