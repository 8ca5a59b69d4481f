"""STF (p4c "simple test framework") files: parser and runner for p4sim."""
from p4sim.stf.parser import StfError, StfFile, parse_stf, parse_stf_file

__all__ = ["StfError", "StfFile", "parse_stf", "parse_stf_file", "run_stf", "run_stf_on_switch",
           "main"]


def __getattr__(name: str):
    # The runner pulls in the compiler; load it only when asked for.
    if name in ("run_stf", "run_stf_on_switch", "main"):
        import p4sim.stf.runner as runner
        return getattr(runner, name)
    raise AttributeError(name)
