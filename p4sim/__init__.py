"""p4sim: a P4_16 software switch that executes P4 programs (v1model and TNA) in Python."""
from .errors import CompileError, P4SimError
from .program import Program, load_program
from .runtime.switch import Switch

__all__ = ["CompileError", "P4SimError", "Program", "Switch", "load_program"]
