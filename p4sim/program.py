"""Loading a P4 program: parse, check, compile to Python."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import CodeType

from .backend.compiler import CompiledProgram, Compiler
from .errors import CompileError
from .frontend.parser import parse_file
from p4control.model import ProgramInfo

ARCHS = ("v1model", "tna")


@dataclass
class Program:
    path: str
    arch: str
    source: str                  # the original P4 source text (P4Runtime device config)
    compiled: CompiledProgram
    code: CodeType               # the generated Python, compiled once, exec'd per Switch

    @property
    def info(self) -> ProgramInfo:
        return self.compiled.info

    @property
    def python_source(self) -> str:
        return self.compiled.source


def load_program(path: str, arch: str = "v1model", include_dirs: list[str] | tuple[str, ...] = (),
                 defines: dict[str, str] | None = None) -> Program:
    """Parse, check and compile ``path``. Raises :class:`CompileError` (file:line:col: message)."""
    if arch not in ARCHS:
        raise CompileError(f"unknown architecture '{arch}' (choose from {', '.join(ARCHS)})", path)
    try:
        source = Path(path).read_text()
    except OSError as e:
        raise CompileError(f"cannot read program: {e.strerror}", path) from None
    except UnicodeDecodeError:
        raise CompileError("program is not UTF-8 text", path) from None
    tree = parse_file(path, include_dirs, defines)
    compiled = Compiler(tree, arch).compile()
    try:
        code = compile(compiled.source, f"<p4sim:{path}>", "exec")
    except SyntaxError as e:  # a code generator bug, never a user error; say so clearly
        raise CompileError(f"internal error: generated code does not compile ({e.msg} at line {e.lineno})",
                           path) from None
    return Program(path, arch, source, compiled, code)
