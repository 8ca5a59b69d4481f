"""P4_16 source → syntax tree.

Steps: run the system C preprocessor (as p4c does) keeping line markers so every token maps
back to its file and line; cut annotation bodies out of the text (they are free-form token
lists); pre-scan for declared type names; lex and parse with an LALR(1) Lark grammar whose
post-lexer does p4c's type-name lexer feedback; transform the parse tree into ``ast`` nodes.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Iterator

from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from ..errors import CompileError
from . import ast
from .build_decls import _DeclBuilder
from .build_exprs import _ExprBuilder
# Re-exported: the preprocessing passes were part of this module; their old import path works.
from .preprocess import (INCLUDE_DIR, SourceText, cut_annotation_bodies, preprocess,  # noqa: F401
                         scan_type_names)

_GRAMMAR = Path(__file__).resolve().parent / "p4.lark"


# ---------------------------------------------------------------------- lexer feedback
_TYPE_START = {"KW_BIT", "KW_INT", "KW_VARBIT", "KW_BOOL", "KW_ERROR", "KW_STRING", "KW_VOID",
               "KW_TUPLE", "TYPE_IDENTIFIER", "DONTCARE"}


class _PostLex:
    """Retypes tokens using type-name knowledge; see p4.lark's header comment."""

    always_accept = ("IDENTIFIER",)

    def __init__(self) -> None:
        self.type_names: set[str] = set()

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        type_names = self.type_names
        depth_stack: list[int] = []      # bracket depth of open type-argument lists
        depth = 0
        pending: Token | None = None
        prev_type: str | None = None

        def fix(tok: Token) -> Token:
            if tok.type == "IDENTIFIER" and tok.value in type_names:
                tok.type = "TYPE_IDENTIFIER"
            return tok

        it = iter(stream)
        for tok in it:
            tok = fix(tok)
            if pending is not None:
                # pending is a '<' waiting to see what follows it
                if tok.type in _TYPE_START or (tok.type == "IDENTIFIER" and False):
                    pending.type = "LT_TYPE"
                    depth_stack.append(depth)
                elif prev_before_lt in ("KW_BIT", "KW_INT", "KW_VARBIT"):
                    depth_stack.append(depth)
                yield pending
                pending = None
            if tok.type == "LT":
                prev_before_lt = prev_type
                pending = tok
                prev_type = tok.type
                continue
            if tok.type in ("LPAREN", "LSQB", "LBRACE"):
                depth += 1
            elif tok.type in ("RPAREN", "RSQB", "RBRACE"):
                depth -= 1
            elif tok.type == "GT":
                if depth_stack and depth_stack[-1] == depth:
                    depth_stack.pop()
                else:
                    # outside type brackets: '>' '>' with nothing between is a right shift
                    nxt = next(it, None)
                    if nxt is not None and nxt.type == "GT" and nxt.start_pos == tok.end_pos:
                        tok = Token.new_borrow_pos("SHR", ">>", tok)
                        tok.end_pos = nxt.end_pos
                        prev_type = "SHR"
                        yield tok
                        continue
                    prev_type = tok.type
                    yield tok
                    if nxt is None:
                        continue
                    tok = fix(nxt)
                    if tok.type == "LT":
                        prev_before_lt = prev_type
                        pending = tok
                        prev_type = tok.type
                        continue
                    if tok.type in ("LPAREN", "LSQB", "LBRACE"):
                        depth += 1
                    elif tok.type in ("RPAREN", "RSQB", "RBRACE"):
                        depth -= 1
                    elif tok.type == "GT" and depth_stack and depth_stack[-1] == depth:
                        depth_stack.pop()
            prev_type = tok.type
            yield tok
        if pending is not None:
            yield pending


@lru_cache(maxsize=1)
def _lark() -> tuple[Lark, _PostLex]:
    post = _PostLex()
    parser = Lark(_GRAMMAR.read_text(), parser="lalr", lexer="basic", postlex=post,
                  propagate_positions=True, maybe_placeholders=True, cache=True)
    return parser, post


# ---------------------------------------------------------------------- tree → AST
_EXPECT_NAMES = {
    "SEMICOLON": "';'", "LPAREN": "'('", "RPAREN": "')'", "LBRACE": "'{'", "RBRACE": "'}'",
    "LSQB": "'['", "RSQB": "']'", "COMMA": "','", "EQUAL": "'='", "COLON": "':'", "DOT": "'.'",
    "IDENTIFIER": "identifier", "TYPE_IDENTIFIER": "type name", "INTEGER": "integer",
    "LT": "'<'", "GT": "'>'", "LT_TYPE": "'<'",
}


def _describe_expected(expected: set[str]) -> str:
    names = []
    for e in sorted(expected):
        if e.startswith("KW_"):
            names.append(f"'{e[3:].lower()}'")
        elif e in _EXPECT_NAMES:
            names.append(_EXPECT_NAMES[e])
        elif e.startswith("__ANON") or e.startswith("$"):
            continue
        else:
            names.append(e.lower())
    names = sorted(set(names))
    if len(names) > 8:
        names = names[:8] + ["..."]
    return ", ".join(names)


class _Builder(_DeclBuilder, _ExprBuilder, Transformer):
    """Lark tree → ``ast`` nodes. Positions come from the preprocessed-line map; types and
    declarations are built by ``_DeclBuilder`` (build_decls), statements and expressions by
    ``_ExprBuilder`` (build_exprs)."""

    def __init__(self, src: SourceText, bodies: dict[int, str]) -> None:
        super().__init__(visit_tokens=True)
        self.src = src
        self.bodies = bodies

    # -- helpers
    def _pos(self, meta_or_tok) -> ast.Pos:
        line = getattr(meta_or_tok, "line", None)
        col = getattr(meta_or_tok, "column", None)
        if line is None:
            return ast.NOPOS
        return self.src.origin(line, col)

    def _fail(self, where, msg: str):
        p = self._pos(where)
        raise CompileError(msg, p.file, p.line, p.col)

    # -- tokens
    def ANNOTATION(self, tok: Token) -> ast.Annotation:
        return ast.Annotation(tok.value[1:], self.bodies.get(tok.start_pos, ""), self._pos(tok))

    # -- names
    def name(self, items):
        return items[0]

    nontype_name = name

    def annotations(self, items):
        return list(items)

    def start(self, items):
        return [d for d in items if isinstance(d, ast.Decl)]


_UNSUPPORTED_SYNTAX = [
    (re.compile(r"\bfor\s*\("), "for loops (P4_16 v1.2.4) are not supported by p4sim"),
]


def parse_text(src: SourceText) -> ast.Program:
    text, bodies = cut_annotation_bodies(src.text)
    for pattern, message in _UNSUPPORTED_SYNTAX:
        m = pattern.search(text)
        if m:
            line = text.count("\n", 0, m.start()) + 1
            col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
            p = src.origin(line, col)
            raise CompileError(message, p.file, p.line, p.col)
    parser, post = _lark()
    post.type_names = scan_type_names(text)
    try:
        tree = parser.parse(text)
    except UnexpectedCharacters as e:
        p = src.origin(e.line, e.column)
        raise CompileError(f"syntax error: unexpected character {text[e.pos_in_stream]!r}",
                           p.file, p.line, p.col) from None
    except UnexpectedToken as e:
        tok = e.token
        if tok.type == "$END":
            p = src.origin(len(src.line_map), 0)
            raise CompileError("syntax error: unexpected end of input", p.file, p.line) from None
        p = src.origin(tok.line, tok.column)
        if tok.value == "." and re.match(r"\.\s*apply\s*\(", text[tok.start_pos:]):
            raise CompileError("direct type application (Type.apply(...)) is not supported; "
                               "instantiate the control and apply the instance", p.file, p.line, p.col) from None
        exp = _describe_expected(set(e.expected))
        raise CompileError(f"syntax error: unexpected '{tok.value}'" + (f"; expected {exp}" if exp else ""),
                           p.file, p.line, p.col) from None
    except UnexpectedEOF:
        p = src.origin(len(src.line_map), 0)
        raise CompileError("syntax error: unexpected end of input", p.file, p.line) from None
    except UnexpectedInput as e:  # pragma: no cover - other lark input errors
        p = src.origin(getattr(e, "line", 0), getattr(e, "column", 0))
        raise CompileError(f"syntax error: {e}", p.file, p.line, p.col) from None
    decls = _Builder(src, bodies).transform(tree)
    return ast.Program(decls, _source_files(src))


def _source_files(src: SourceText) -> list[str]:
    """The files read, in order of appearance with the main program last (errors about the
    whole program, such as a missing ``main``, name it). cpp's pseudo-files ``<built-in>`` and
    ``<command-line>`` are left out: no user could open them."""
    files = [f for f in dict.fromkeys(f for f, _ in src.line_map) if not f.startswith("<")]
    if files:
        files.append(files.pop(0))  # cpp's first line marker names the main file
    return files


def parse_file(path: str, include_dirs: list[str] | tuple[str, ...] = (),
               defines: dict[str, str] | None = None) -> ast.Program:
    return parse_text(preprocess(path, include_dirs, defines))
