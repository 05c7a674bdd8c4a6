"""The guards of TE's C++ selector, `nvte_get_fused_attn_backend`, at one release.

The function grants a cuDNN sub-backend when a long condition holds (`flag_arb = true`,
`backend = NVTE_FP8`, ...) and takes it back in later `if` blocks (`backend = NVTE_No_Backend`).
Two kinds of guard come out of it:

- a *requirement*: one top-level `&&` term of a condition that grants a sub-backend ("head
  dimension", "sliding window", "9.10.0/9.10.1: known bugs"), labelled by the comment TE writes
  above it; a workload that fails the term loses the sub-backend;
- a *denial*: an assignment of `NVTE_No_Backend` with the `if` conditions that lead to it.

Identity across releases is the kind, the sub-backend and the term (or path) with comments and
whitespace removed, so a changed bound is a new guard. The parser is a tokenizer, brace and
parenthesis matching and a statement reader for `if`/`else`/blocks: enough for this function,
which has no loops, lambdas or macros that open blocks.
"""

import re
from dataclasses import dataclass, field

FUNCTION = "nvte_get_fused_attn_backend"
# Assignments that grant a sub-backend, and the sub-backend they name.
GRANTS = {
    "flag_arb": "F16_arbitrary_seqlen",
    "flag_m512": "F16_max512_seqlen",
}
SUB_BACKENDS = ("NVTE_FP8", "NVTE_F16_arbitrary_seqlen", "NVTE_F16_max512_seqlen")

_TOKEN = re.compile(
    r"(?P<comment>//[^\n]*|/\*.*?\*/)|(?P<string>\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*')"
    r"|(?P<ws>\s+)|(?P<word>[A-Za-z_][A-Za-z_0-9]*)|(?P<number>\d[\w.]*)"
    r"|(?P<op>&&|\|\||==|!=|<=|>=|::|<<|>>|->|\+\+|--|[-+*/%]=|[^\s])",
    re.S,
)


@dataclass(eq=False)
class Tok:
    kind: str
    text: str
    line: int


@dataclass
class CppGuard:
    kind: str                       # "requirement" or "denial"
    backend: str                    # the sub-backend it keeps out
    condition: str                  # normalized code of the term (requirement) or path (denial)
    label: str                      # TE's comment above the term, or its warning text
    line: int                       # first line of the term or of the denial's innermost condition
    lines: list = field(default_factory=list)
    disjuncts: list = field(default_factory=list)  # a requirement's top-level `||` alternatives

    def key(self) -> str:
        return f"{self.kind} {self.backend} | {self.condition}"


def tokenize(text: str, first_line: int = 1):
    out, line = [], first_line
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        tok = m.group()
        if kind != "ws":
            out.append(Tok(kind, tok, line))
        line += tok.count("\n")
    return out


def function_body(source: str):
    """Tokens of the function's body (inside its braces), with their file line numbers."""
    m = re.search(r"^NVTE_Fused_Attn_Backend\s+" + FUNCTION + r"\s*\(", source, re.M)
    if not m:
        raise LookupError(f"no definition of {FUNCTION}")
    toks = tokenize(source[m.start():], source.count("\n", 0, m.start()) + 1)
    i = next(k for k, t in enumerate(toks) if t.text == "{")
    end = _match(toks, i)
    return toks[i + 1:end], toks[i].line, toks[end].line


def _match(toks, i):
    """Index of the bracket closing toks[i] (comments and strings are single tokens)."""
    pairs = {"(": ")", "{": "}", "[": "]"}
    stack = [pairs[toks[i].text]]
    for k in range(i + 1, len(toks)):
        t = toks[k].text if toks[k].kind == "op" else None
        if t in pairs:
            stack.append(pairs[t])
        elif t is not None and stack and t == stack[-1]:
            stack.pop()
            if not stack:
                return k
    raise ValueError("unbalanced brackets")


def _code(toks):
    return [t for t in toks if t.kind != "comment"]


def normalize(toks) -> str:
    """Canonical text of an expression: comments dropped, redundant parentheses removed at every
    level of its `||` / `&&` tree, so that `(a) || (b)` and `a || b` are the same guard."""
    return _canon(_code(toks), top=True)


def _canon(code, top=False) -> str:
    code = _strip_parens(code)
    for op in ("||", "&&"):
        parts = flatten(code, op)
        if len(parts) > 1:
            joined = f" {op} ".join(_canon(p) for p in parts)
            return joined if top else f"({joined})"
    if len(code) > 1 and code[0].text == "!" and code[1].text == "(" and _match(code, 1) == len(code) - 1:
        inner = _canon(code[2:-1])
        return "!" + (inner if inner.startswith("(") else f"({inner})")
    return " ".join(t.text for t in code)


def _closes_at_end(words):
    depth = 0
    for k, w in enumerate(words):
        depth += w in "([{" and len(w) == 1
        depth -= w in ")]}" and len(w) == 1
        if depth == 0 and k < len(words) - 1:
            return False
    return True


def split_top(toks, op):
    """Split a token list at depth-0 occurrences of op; each part keeps its comments."""
    parts, cur, depth = [], [], 0
    for t in toks:
        if t.kind == "op" and t.text in "([{" and len(t.text) == 1:
            depth += 1
        elif t.kind == "op" and t.text in ")]}" and len(t.text) == 1:
            depth -= 1
        if depth == 0 and t.kind == "op" and t.text == op:
            parts.append(cur)
            cur = []
        else:
            cur.append(t)
    parts.append(cur)
    return parts


def _strip_parens(toks):
    """toks without parentheses around all of it; comments before the first one are kept."""
    code = _code(toks)
    lead = []
    while code and code[0].text == "(" and _match(code, 0) == len(code) - 1:
        start = next(k for k, t in enumerate(toks) if t is code[0])
        end = next(k for k, t in enumerate(toks) if t is code[-1])
        lead += [t for t in toks[:start] if t.kind == "comment"]
        toks = toks[start + 1:end]
        code = _code(toks)
    return lead + toks


# --- statements -------------------------------------------------------------------------------

@dataclass
class Stmt:
    kind: str                  # "if", "block", "simple"
    cond: list = None          # if: condition tokens (with comments)
    then: object = None
    other: object = None
    body: list = None          # block: statements
    toks: list = None          # simple: tokens
    comments: list = None      # comments right before the statement


def parse_statements(toks):
    out, i = [], 0
    while i < len(toks):
        stmt, i = _statement(toks, i)
        if stmt is not None:
            out.append(stmt)
    return out


def _statement(toks, i):
    comments = []
    while i < len(toks) and toks[i].kind == "comment":
        comments.append(toks[i].text)
        i += 1
    if i >= len(toks):
        return None, i
    t = toks[i]
    if t.text == "if":
        open_paren = i + 1
        close = _match(toks, open_paren)
        cond = toks[open_paren + 1:close]
        then, i = _statement(toks, close + 1)
        other = None
        j = i
        while j < len(toks) and toks[j].kind == "comment":
            j += 1
        if j < len(toks) and toks[j].text == "else":
            other, i = _statement(toks, j + 1)
        return Stmt("if", cond=cond, then=then, other=other, comments=comments), i
    if t.text == "{":
        close = _match(toks, i)
        return Stmt("block", body=parse_statements(toks[i + 1:close]), comments=comments), close + 1
    depth, k = 0, i
    while k < len(toks):
        x = toks[k].text if toks[k].kind == "op" else ""
        if x in ("(", "[", "{"):
            depth += 1
        elif x in (")", "]", "}"):
            depth -= 1
        elif x == ";" and depth == 0:
            break
        k += 1
    return Stmt("simple", toks=toks[i:k + 1], comments=comments), k + 1


def _children(stmt):
    if stmt is None:
        return []
    if stmt.kind == "block":
        return stmt.body
    return [stmt]


def _grant(stmt):
    """The sub-backend a simple statement grants, or None."""
    words = [t.text for t in _code(stmt.toks)]
    if len(words) >= 3 and words[0] in GRANTS and words[1] == "=" and words[2] == "true":
        return GRANTS[words[0]]
    if len(words) >= 3 and words[0] == "backend" and words[1] == "=" and words[-2] in SUB_BACKENDS:
        return words[-2][len("NVTE_"):]
    return None


def _denies(stmt):
    words = [t.text for t in _code(stmt.toks)]
    return len(words) >= 3 and words[0] == "backend" and words[1] == "=" and words[-2] == "NVTE_No_Backend"


def _warning(stmts):
    """The text of a `std::cout << "Warning: ..."` among simple statements, joined."""
    for s in stmts:
        if s.kind == "simple" and any(t.text == "cout" for t in s.toks):
            return " ".join(t.text.strip('"') for t in s.toks if t.kind == "string")
    return ""


def _grants_inside(stmt):
    found = set()
    for s in _children(stmt):
        if s.kind == "simple":
            g = _grant(s)
            if g:
                found.add(g)
        elif s.kind == "if":
            found |= _grants_inside(s.then) | _grants_inside(s.other)
        elif s.kind == "block":
            found |= _grants_inside(s)
    return found


def _label(comments):
    text = " ".join(c.lstrip("/").strip() for c in comments if not c.lstrip("/").strip().upper().startswith("TODO"))
    return re.sub(r"\s+", " ", text).strip()


def flatten(toks, op):
    """The operands of an `op` chain, through redundant parentheses: `(a && (b && c))` -> a, b, c."""
    parts = split_top(_strip_parens(toks), op)
    if len(parts) == 1:
        return parts
    out = []
    for part in parts:
        out.extend(flatten(part, op))
    return out


def _term_guards(cond, backend, out):
    for term in flatten(cond, "&&"):
        code = _code(term)
        if not code:
            continue
        comments = [t.text for t in term if t.kind == "comment" and t.line <= code[0].line]
        disjuncts = [normalize(d) for d in flatten(term, "||")]
        out.append(CppGuard("requirement", backend, normalize(term), _label(comments), code[0].line,
                            sorted({t.line for t in code}), disjuncts))


def _walk(stmts, path, out, dtype_path):
    for s in stmts:
        if s.kind == "if":
            grants = _grants_inside(s.then)
            # The conditions of an `if` that grants (directly or in a nested if) are requirements;
            # an `if` whose body only takes the backend back is part of a denial's path.
            if grants:
                for g in sorted(grants):
                    _term_guards(s.cond, g, out)
            # A denial's path keeps the conditions of the `if`s that only take a backend back; a
            # granting `if` is described by its requirements, and enters the path only as the
            # negation when the denial is its own `else`.
            _walk(_children(s.then), path + ([] if grants else [(s.cond, False)]), out, dtype_path)
            if s.other is not None:
                for child in _children(s.other):
                    direct = child.kind == "simple"
                    keep = (not grants) or direct
                    _walk([child], path + ([(s.cond, True)] if keep else []), out, dtype_path)
        elif s.kind == "block":
            _walk(s.body, path, out, dtype_path)
        elif s.kind == "simple" and _denies(s) and path:
            conds = []
            lines = set()
            for cond, negated in path:
                text = normalize(cond)
                conds.append(f"!({text})" if negated else text)
                lines |= {t.line for t in _code(cond)}
            innermost = _code(path[-1][0])
            siblings = stmts
            out.append(CppGuard("denial", _denied_backend(conds), " && ".join(conds), _warning(siblings),
                                innermost[0].line if innermost else s.toks[0].line,
                                sorted(lines | {s.toks[0].line})))


def _denied_backend(conds):
    text = " ".join(conds)
    for name in ("F16_arbitrary_seqlen", "F16_max512_seqlen", "FP8"):
        if "NVTE_" + name in text:
            return name
    return "any"


def guards(source: str):
    """The requirement and denial guards of nvte_get_fused_attn_backend in a source text."""
    body, _, _ = function_body(source)
    out = []
    _walk(parse_statements(body), [], out, None)
    return out


def function_span(source: str):
    _, first, last = function_body(source)
    m = re.search(r"^NVTE_Fused_Attn_Backend\s+" + FUNCTION + r"\s*\(", source, re.M)
    return source.count("\n", 0, m.start()) + 1, last
