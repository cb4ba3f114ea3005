"""Generates the protobuf and gRPC modules from the repository's api/ while the package builds.

Nothing generated is committed: `build_py` runs protoc (Debian's protobuf-compiler) with the gRPC
Python plugin (protobuf-compiler-grpc's grpc_python_plugin) over moe.proto, tensor.proto,
bench.proto and routing_trace.proto, then moves the modules under moe_a2a/_proto with their
imports rewritten to match. MOE_A2A_PROTO_DIR points elsewhere than ../../api/src/main/proto;
PROTOC and GRPC_PYTHON_PLUGIN name the tools when they are not on the PATH.
"""
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
PROTOS = ["moe/a2a/v1/tensor.proto", "moe/a2a/v1/moe.proto", "moe/a2a/v1/bench.proto",
          "moe/a2a/v1/routing_trace.proto"]


def proto_dir():
    d = Path(os.environ.get("MOE_A2A_PROTO_DIR", HERE.parent.parent / "api" / "src" / "main" / "proto"))
    if not (d / PROTOS[0]).is_file():
        raise SystemExit(f"moe-a2a: no {PROTOS[0]} under {d} (set MOE_A2A_PROTO_DIR to the repository's"
                         " api/src/main/proto)")
    return d


def tool(env, name):
    path = os.environ.get(env) or shutil.which(name)
    if not path:
        raise SystemExit(f"moe-a2a: {name} not found (Debian: apt-get install protobuf-compiler"
                         f" protobuf-compiler-grpc; or set {env})")
    return path


def generate(out):
    """The _pb2 and _pb2_grpc modules of PROTOS, in `out`, importing each other from moe_a2a._proto."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([tool("PROTOC", "protoc"), f"-I{proto_dir()}", f"--python_out={tmp}",
                        f"--grpc_python_out={tmp}",
                        f"--plugin=protoc-gen-grpc_python={tool('GRPC_PYTHON_PLUGIN', 'grpc_python_plugin')}",
                        *PROTOS], check=True)
        out.mkdir(parents=True, exist_ok=True)
        (out / "__init__.py").write_text('"""Generated at build time from proto/; not edited."""\n')
        for src in (Path(tmp) / "moe" / "a2a" / "v1").glob("*.py"):
            text = re.sub(r"^from moe\.a2a\.v1 import", "from moe_a2a._proto import", src.read_text(),
                          flags=re.M)
            (out / src.name).write_text(text)


class BuildPyWithStubs(build_py):
    def run(self):
        super().run()
        generate(Path(self.build_lib) / "moe_a2a" / "_proto")


setup(cmdclass={"build_py": BuildPyWithStubs})
