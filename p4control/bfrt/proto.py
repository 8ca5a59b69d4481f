"""Python bindings of the BfRuntime protocol: ``pb`` (messages) and ``pb_grpc`` (service).

If the Tofino SDE's client package ``bfrt_grpc`` is importable, its ``bfruntime_pb2`` is used
(the message names are the same, and one process cannot register ``bfrt_proto.*`` twice).
Otherwise the bindings are generated from ``bfruntime.proto`` next to this file with
grpcio-tools' ``protoc`` on first use, into ``_generated/<hash of the .proto>/`` here (or, when
the package directory is read-only, under ``$XDG_CACHE_HOME/p4control-bfrt/``), so a fresh checkout
needs no build step and an edited .proto is regenerated.
"""
from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path
from types import ModuleType

from p4control.protobuf_env import BACKEND as _PROTOBUF_BACKEND  # noqa: F401  (selects the protobuf backend first)

PROTO = Path(__file__).with_name("bfruntime.proto")
_MODULE_PB = "p4control_bfrt_generated.bfruntime_pb2"
_MODULE_GRPC = "p4control_bfrt_generated.bfruntime_pb2_grpc"


def _proto_hash() -> str:
    return hashlib.sha256(PROTO.read_bytes()).hexdigest()[:16]


def _cache_roots() -> list[Path]:
    roots = [Path(__file__).with_name("_generated")]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    roots.append(Path(base) / "p4control-bfrt")
    return roots


def _include_dirs() -> list[str]:
    import grpc_tools
    from google.rpc import status_pb2

    # protoc needs google/rpc/status.proto (googleapis-common-protos ships it next to its
    # _pb2) and the well-known types (bundled with grpc_tools)
    googleapis = Path(status_pb2.__file__).parents[2]
    return [str(PROTO.parent), str(Path(grpc_tools.__file__).parent / "_proto"), str(googleapis)]


def _generate(dest: Path) -> None:
    from grpc_tools import protoc

    dest.parent.mkdir(parents=True, exist_ok=True)
    with open(dest.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)          # another process may be generating too
        if (dest / "bfruntime_pb2_grpc.py").exists():
            return
        tmp = Path(tempfile.mkdtemp(prefix="gen-", dir=dest.parent))
        try:
            args = ["protoc", *(f"-I{d}" for d in _include_dirs()), f"--python_out={tmp}",
                    f"--grpc_python_out={tmp}", PROTO.name]
            if protoc.main(args) != 0:
                raise RuntimeError(f"protoc failed on {PROTO} (arguments {args})")
            # the generated service module imports its messages as a top-level module
            svc = tmp / "bfruntime_pb2_grpc.py"
            svc.write_text(svc.read_text().replace("import bfruntime_pb2 as",
                                                   f"import {_MODULE_PB} as"))
            os.chmod(tmp, 0o755)                 # mkdtemp's 0700 would lock other users out
            for old in dest.parent.iterdir():    # stale generations of an older .proto
                if old.is_dir() and old.name != dest.name and not old.name.startswith("gen-"):
                    shutil.rmtree(old, ignore_errors=True)
            os.replace(tmp, dest)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _generated() -> tuple[ModuleType, ModuleType]:
    if _MODULE_GRPC in sys.modules:
        return sys.modules[_MODULE_PB], sys.modules[_MODULE_GRPC]
    digest = _proto_hash()
    errors = []
    for root in _cache_roots():
        dest = root / digest
        try:
            if not (dest / "bfruntime_pb2_grpc.py").exists():
                _generate(dest)
            break
        except OSError as e:                      # read-only install: try the next place
            errors.append(f"{root}: {e}")
    else:
        raise RuntimeError("cannot generate the BfRuntime bindings: " + "; ".join(errors))
    if "p4control_bfrt_generated" not in sys.modules:
        pkg = ModuleType("p4control_bfrt_generated")
        pkg.__path__ = [str(dest)]
        sys.modules["p4control_bfrt_generated"] = pkg
    return _load(_MODULE_PB, dest / "bfruntime_pb2.py"), _load(_MODULE_GRPC, dest / "bfruntime_pb2_grpc.py")


def _bindings() -> tuple[ModuleType, ModuleType, str]:
    if os.environ.get("P4SIM_BFRT_OWN_PROTO") != "1":
        try:
            from bfrt_grpc import bfruntime_pb2 as sde_pb            # type: ignore[import-not-found]
            from bfrt_grpc import bfruntime_pb2_grpc as sde_grpc     # type: ignore[import-not-found]
            return sde_pb, sde_grpc, "bfrt_grpc (Tofino SDE)"
        except ImportError:
            pass
    own_pb, own_grpc = _generated()
    return own_pb, own_grpc, f"generated from {PROTO.name}"


pb, pb_grpc, SOURCE = _bindings()

__all__ = ["pb", "pb_grpc", "SOURCE", "PROTO"]
