"""STF (p4c "simple test framework") files: parser and runner for p4sim."""
from p4sim.stf.parser import StfError, StfFile, parse_stf, parse_stf_file

__all__ = ["StfError", "StfFile", "parse_stf", "parse_stf_file", "run_stf", "main"]


def __getattr__(name: str):
    # The runner imports the compiler; load it lazily so the parser works on its own.
    if name in ("run_stf", "main"):
        from p4sim.stf import runner
        return getattr(runner, name)
    raise AttributeError(name)
