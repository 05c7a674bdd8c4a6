#!/usr/bin/env python3
"""Fails when two source files of one library or test executable define the same file-local name.

    check_unity.py --src DIR [--src DIR ...]

A unity build (-DNVTE_UNITY_BUILD, cmake/Settings.cmake) compiles a library's .cpp files as a few
batches, each one translation unit that #includes them in turn. What a file keeps to itself in a
normal build then meets the other files of its batch: two `k_max_links` in anonymous namespaces
are a redefinition, and two helpers of one name with other parameters overload each other, so a
call may silently take the other file's. The test executables compile the same way
(nvte_unit_test in tests/CMakeLists.txt). This checker reads the sources of every library
(nvte_library(NAME files...)) and test executable (nvte_unit_test(NAME SOURCES files... LIBS ...))
that DIR/CMakeLists.txt, DIR/*.cmake and DIR/*/CMakeLists.txt name, and names each file-local
name defined in more than one file of one target, whatever the batches are today (they move as
files are added):
- every declaration in an anonymous namespace (functions, variables, types, aliases),
- `static` functions and variables at namespace scope,
- const / constexpr variables at namespace scope (internal linkage unless extern or inline),
- types and aliases defined at namespace scope of a .cpp file (an alias to the same type again is
  allowed, as C++ allows it),
- macros a .cpp file #defines and does not #undef.
A macro invoked at namespace scope (GoogleTest's TEST(Suite, Name) { ... }, TEST_F, TEST_P,
INSTANTIATE_TEST_SUITE_P: all capitals) is not a name the file defines.
Exit 0 when there is none, 1 with one line per clash. It reads the code with a small tokenizer
(comments, strings, raw strings and character literals dropped; braces tracked), not a compiler:
milliseconds, so it runs in every ctest, while CI's fresh build compiles the batches themselves.
"""
import argparse
import os
import re
import sys

PUNCT = re.compile(r"::|->|[{}()\[\];=<>,:~*&]|[^\s\w]")
IDENT = re.compile(r"[A-Za-z_]\w*")
MACRO_CALL = re.compile(r"[A-Z][A-Z0-9_]*")


def strip(text):
    """Returns the text with comments, literals and preprocessor lines blanked (newlines kept),
    and the macros it #defines without #undef, as {name: line}."""
    out = []
    macros = {}
    i, n, line = 0, len(text), 1
    at_line_start = True
    while i < n:
        c = text[i]
        if c == "\n":
            out.append(c)
            line += 1
            i += 1
            at_line_start = True
            continue
        if at_line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if at_line_start and c == "#":
            end = i
            while True:  # a directive runs on over backslash-newlines
                nl = text.find("\n", end)
                if nl == -1:
                    nl = n
                if text[nl - 1:nl] == "\\":
                    end = nl + 1
                    continue
                break
            directive = text[i:nl]
            m = re.match(r"#\s*(define|undef)\s+([A-Za-z_]\w*)", directive)
            if m and m.group(1) == "define":
                macros[m.group(2)] = line
            elif m:
                macros.pop(m.group(2), None)
            newlines = directive.count("\n")
            out.append("\n" * newlines)
            line += newlines
            i = nl
            continue
        at_line_start = False
        if text.startswith("//", i):
            nl = text.find("\n", i)
            i = n if nl == -1 else nl
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end == -1 else end + 2
            newlines = text.count("\n", i, end)
            out.append("\n" * newlines)
            line += newlines
            i = end
            continue
        raw = re.match(r'(?:u8|[uUL])?R"([^(\s]*)\(', text[i:i + 24]) if c in 'uULR' else None
        if raw and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            close = text.find(")" + raw.group(1) + '"', i)
            end = n if close == -1 else close + len(raw.group(1)) + 2
            newlines = text.count("\n", i, end)
            out.append(' "" ' + "\n" * newlines)
            line += newlines
            i = end
            continue
        if c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum() and text[i + 1:i + 2].isalnum():
                out.append(" ")  # a digit separator: 1'000'000
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(' "" ')
            i = j + 1
            continue
        out.append(c)
        i += 1
    return "".join(out), macros


def tokens(text):
    """Yields (token, line) of stripped text."""
    line = 1
    pos = 0
    for m in re.finditer(r"\n|[A-Za-z_]\w*|\d[\w.']*|\"\"|::|->|\S", text):
        tok = m.group(0)
        if tok == "\n":
            line += 1
            continue
        yield tok, line
    del pos


KEYWORDS = {"const", "constexpr", "consteval", "constinit", "static", "inline", "extern", "thread_local",
            "volatile", "mutable", "virtual", "explicit", "friend", "typename", "template", "unsigned", "signed",
            "long", "short", "int", "char", "bool", "double", "float", "void", "auto", "noexcept", "override",
            "final", "decltype", "struct", "class", "union", "enum", "using", "typedef", "operator", "return"}


def skip_balanced(toks, i):
    """toks[i] is an opening bracket: returns the index after its match."""
    pairs = {"{": "}", "(": ")", "[": "]"}
    stack = [pairs[toks[i][0]]]
    i += 1
    while i < len(toks) and stack:
        t = toks[i][0]
        if t in pairs:
            stack.append(pairs[t])
        elif stack and t == stack[-1]:
            stack.pop()
        i += 1
    return i


def declarations(toks):
    """Yields (name, line, kind) of the file-local names the token list defines."""
    scopes = []  # 'anon' or 'ns' for each open namespace (or extern "C") brace
    i = 0
    while i < len(toks):
        t, line = toks[i]
        if t == "}":
            if scopes:
                scopes.pop()
            i += 1
            continue
        if t == ";":
            i += 1
            continue
        if t == "namespace":
            j = i + 1
            name = []
            while j < len(toks) and toks[j][0] not in ("{", ";", "="):
                name.append(toks[j][0])
                j += 1
            if j < len(toks) and toks[j][0] == "{":
                scopes.append("anon" if not [x for x in name if x != "inline"] else "ns")
                i = j + 1
                continue
            while j < len(toks) and toks[j][0] != ";":  # namespace alias
                j += 1
            i = j + 1
            continue
        if t == "extern" and i + 2 < len(toks) and toks[i + 1][0] == '""' and toks[i + 2][0] == "{":
            scopes.append("ns")
            i += 3
            continue
        # A declaration at namespace scope: its tokens up to ';' or a body.
        anon = "anon" in scopes
        j = i
        stmt = []
        body = False
        while j < len(toks):
            tok = toks[j][0]
            if tok in ("(", "["):
                end = skip_balanced(toks, j)
                stmt.append((tok, toks[j][1]))
                stmt.append((")", toks[end - 1][1]))
                j = end
                continue
            if tok == "{":
                body = True
                j = skip_balanced(toks, j)
                # `Type name{init};` and `= {...};` go on to their ';'; a function, class or enum
                # body ends the declaration unless a ';' follows at once (a class).
                if j < len(toks) and toks[j][0] == ";":
                    j += 1
                elif stmt and (stmt[-1][0] == "=" or any(s[0] == "=" for s in stmt)):
                    continue
                elif stmt and IDENT.fullmatch(stmt[-1][0]) and not any(s[0] in ("struct", "class", "union", "enum") for s in stmt) \
                        and not any(s[0] == ")" for s in stmt):
                    continue  # brace initialisation of a variable
                break
            if tok == ";":
                j += 1
                break
            stmt.append(toks[j])
            j += 1
        i = j
        words = [s[0] for s in stmt]
        if not words or words[0] in ("using",) and "namespace" in words[:2]:
            continue
        if words[0] in ("template",):
            depth = 0  # drop the template header
            k = 1
            while k < len(words):
                if words[k] == "<":
                    depth += 1
                elif words[k] == ">":
                    depth -= 1
                    if depth == 0:
                        k += 1
                        break
                k += 1
            stmt, words = stmt[k:], words[k:]
            if not words:
                continue
        if words[0] in ("static_assert", "friend"):
            continue
        if words[0] == "using":
            if len(words) >= 3 and words[2] == "=":
                yield words[1], stmt[1][1], "alias of " + "".join(words[3:])
            continue
        if words[0] == "typedef":
            idents = [s for s in stmt if IDENT.fullmatch(s[0]) and s[0] not in KEYWORDS]
            if idents:
                yield idents[-1][0], idents[-1][1], "alias of " + "".join(w for w in words[1:-1])
            continue
        tag = next((k for k, w in enumerate(words[:3]) if w in ("struct", "class", "union", "enum")), None)
        if tag is not None:
            k = tag + 1
            while k < len(words) and words[k] in ("class", "struct", "final", "alignas"):
                k += 1
            if k < len(words) and IDENT.fullmatch(words[k]) and body and (k + 1 == len(words) or words[k + 1] in (":", "final")):
                yield words[k], stmt[k][1], "type"
                continue
            if not body:
                continue  # a forward declaration
        # The declarator: the identifier before the first '(', '=', '{' or '[' of the statement.
        cut = next((k for k, w in enumerate(words) if w in ("(", "=", "[")), len(words))
        if cut == 0:
            continue
        if "operator" in words[:cut]:
            continue
        name = words[cut - 1]
        if not IDENT.fullmatch(name) or name in KEYWORDS:
            continue
        if cut == 1 and MACRO_CALL.fullmatch(name):
            continue  # TEST(Suite, Name) { ... }: a macro's invocation, not a name of the file
        if cut >= 2 and words[cut - 2] == "::":
            continue  # a member or a name of another namespace: defined elsewhere
        is_function = cut < len(words) and words[cut] == "("
        specifiers = set(words[:cut])
        if anon:
            yield name, stmt[cut - 1][1], "function" if is_function else "variable"
        elif "static" in specifiers:
            yield name, stmt[cut - 1][1], "static " + ("function" if is_function else "variable")
        elif not is_function and specifiers & {"const", "constexpr"} and not specifiers & {"extern", "inline"}:
            yield name, stmt[cut - 1][1], "const variable"


def libraries(src):
    """Yields (target, [source paths]) of the nvte_library and nvte_unit_test calls in
    DIR/CMakeLists.txt, DIR/*.cmake and DIR/*/CMakeLists.txt (paths relative to that file)."""
    files = [os.path.join(src, "CMakeLists.txt")]
    files += [os.path.join(src, e) for e in sorted(os.listdir(src)) if e.endswith(".cmake")]
    files += [os.path.join(src, e, "CMakeLists.txt") for e in sorted(os.listdir(src))]
    for cmake in files:
        if not os.path.isfile(cmake):
            continue
        with open(cmake, encoding="utf-8") as handle:
            text = re.sub(r"#[^\n]*", "", handle.read())
        here = os.path.dirname(cmake)
        for m in re.finditer(r"nvte_library\(\s*(\w+)([^)]*)\)", text):
            yield m.group(1), [os.path.join(here, f) for f in m.group(2).split() if f.endswith(".cpp")]
        for m in re.finditer(r"nvte_unit_test\(\s*(\w+)\s+SOURCES\b([^)]*?)(?:\bLIBS\b[^)]*)?\)", text):
            yield m.group(1), [os.path.join(here, f) for f in m.group(2).split() if f.endswith(".cpp")]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--src", required=True, action="append", help="a source tree (src, tests); repeatable")
    options = parser.parse_args()
    root = os.path.dirname(os.path.abspath(options.src[0]))
    clashes = 0
    names_seen = 0
    targets = 0
    for library, files in (t for src in options.src for t in libraries(src)):
        targets += 1
        seen = {}  # name -> (file, line, kind) of its first definition
        for path in files:
            with open(path, encoding="utf-8") as handle:
                text, macros = strip(handle.read())
            local = {}
            for name, line, kind in declarations(list(tokens(text))):
                local.setdefault(name, (line, kind))
            for name, line in macros.items():
                local.setdefault(name, (line, "macro"))
            for name, (line, kind) in sorted(local.items(), key=lambda item: item[1][0]):
                names_seen += 1
                where = "%s:%d" % (os.path.relpath(path, root), line)
                if name in seen and seen[name][1] == kind and kind.startswith("alias of "):
                    continue  # the same alias again is allowed: `using Json = nlohmann::json;` twice
                if name in seen:
                    first = seen[name]
                    print("%s: %s %s is also defined at %s (%s): in %s's unity batch that is one translation "
                          "unit; rename one to say what it is" % (where, kind, name, first[0], first[1], library))
                    clashes += 1
                else:
                    seen[name] = (where, kind)
    if clashes:
        print("%d file-local name(s) defined twice in one library or test (-DNVTE_UNITY_BUILD=ON would not compile)" % clashes)
        return 1
    print("no file-local name is defined twice in one library or test (%d names, %d targets)" % (names_seen, targets))
    return 0


if __name__ == "__main__":
    sys.exit(main())
