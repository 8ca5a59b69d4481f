"""bmv2 (``simple_switch_grpc``) as the emulation's switch, where it is installed.

The same experiment runs on p4lang's reference software switch: ``p4c-bm2-ss`` compiles
``p4src/v1model/ina.p4`` to bmv2 JSON and P4Info once per program version (cached under
``build/bmv2/``), every switch starts without a program (``--no-p4``), and the installer pushes
the pipeline with SetForwardingPipelineConfig before writing the plan's entries. bmv2 has no
loss or delay injection, so ``--loss`` needs p4sim. Neither tool is in any package registry:
``docker/`` builds an image that has them.
"""
from __future__ import annotations

import hashlib
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from p4sim import p4runtime as _protobuf_env  # noqa: F401  (selects the protobuf backend first)

from google.protobuf import text_format  # noqa: E402
from p4.config.v1 import p4info_pb2  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
BUILD = REPO / "build" / "bmv2"
TOOLS = ("simple_switch_grpc", "p4c-bm2-ss")


def bmv2_unavailable_reason() -> str | None:
    """Why the bmv2 switch cannot run here (None when it can)."""
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        return (f"--switch bmv2 needs {' and '.join(missing)} on PATH (p4lang/behavioral-model, p4lang/p4c; "
                f"docker/ builds an image with both)")
    return None


@dataclass(frozen=True)
class Bmv2Build:
    json: Path
    p4info: Path

    def device_config(self) -> bytes:
        return self.json.read_bytes()

    def p4info_message(self) -> p4info_pb2.P4Info:
        return text_format.Parse(self.p4info.read_text(), p4info_pb2.P4Info())


def compile_for_bmv2(program: Path, defines: dict[str, str] | None = None, out_dir: Path = BUILD) -> Bmv2Build:
    """bmv2 JSON and P4Info of ``program`` from p4c-bm2-ss, reused while the sources and
    defines are unchanged (the hash covers every .p4 file under p4src/)."""
    defines = defines or {}
    digest = hashlib.sha256(repr(sorted(defines.items())).encode())
    for f in sorted((REPO / "p4src").rglob("*.p4")) + [program]:
        digest.update(f.read_bytes())
    stem = f"{program.stem}-{digest.hexdigest()[:12]}"
    build = Bmv2Build(out_dir / f"{stem}.json", out_dir / f"{stem}.p4info.txtpb")
    if build.json.exists() and build.p4info.exists():
        return build
    out_dir.mkdir(parents=True, exist_ok=True)
    cmd = ["p4c-bm2-ss", "--arch", "v1model", "--std", "p4-16", "-o", str(build.json),
           "--p4runtime-files", str(build.p4info)] + [f"-D{k}={v}" for k, v in defines.items()] + [str(program)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"p4c-bm2-ss failed on {program}: {last[0]}")
    return build


def simple_switch_command(device_id: int, ports: dict[int, str], grpc_addr: str, thrift_port: int,
                          cpu_port: int = 255) -> list[str]:
    """``simple_switch_grpc`` for one emulated switch: its Mininet interfaces as numbered ports,
    no program until the controller pushes one, its own Thrift port (several run on one host)."""
    cmd = ["simple_switch_grpc", "--device-id", str(device_id), "--thrift-port", str(thrift_port), "--no-p4"]
    for port, name in sorted(ports.items()):
        cmd += ["-i", f"{port}@{name}"]
    return cmd + ["--", "--grpc-server-addr", grpc_addr, "--cpu-port", str(cpu_port)]


__all__ = ["bmv2_unavailable_reason", "Bmv2Build", "compile_for_bmv2", "simple_switch_command", "TOOLS"]
