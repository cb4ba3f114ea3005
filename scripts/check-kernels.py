#!/usr/bin/env python3
"""Compiles gpu/src/main/resources/moe/a2a/gpu/kernels.cu with NVRTC, as CudaKernels does on a GPU
(--gpu-architecture=sm_90 --fmad=false --std=c++17, straight to CUBIN), on a machine without one:
NVRTC needs no device. libnvrtc comes from the JavaCPP CUDA 12.6 redistributable jar on Maven
Central, read by HTTP range requests (two entries, about 63 MiB, not the jar's 2 GB) and cached
under target/nvrtc. Prints NVRTC's log; exit 0 when the kernels compile and every kernel
CudaKernels launches is in the CUBIN, 1 otherwise. Standard library only."""
import ctypes
import io
import os
import re
import sys
import urllib.request
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE = os.path.join(ROOT, "gpu/src/main/resources/moe/a2a/gpu/kernels.cu")
LOADER = os.path.join(ROOT, "gpu/src/main/java/moe/a2a/gpu/CudaKernels.java")
CACHE = os.path.join(ROOT, "target/nvrtc")
JAR = ("https://repo1.maven.org/maven2/org/bytedeco/cuda/12.6-9.5-1.5.11/"
       "cuda-12.6-9.5-1.5.11-linux-x86_64-redist.jar")
ENTRIES = ["org/bytedeco/cuda/linux-x86_64/libnvrtc.so.12",
           "org/bytedeco/cuda/linux-x86_64/libnvrtc-builtins.so.12.6"]
ARCH = os.environ.get("MOE_A2A_KERNELS_ARCH", "sm_90")


class RangeFile(io.RawIOBase):
    """The remote jar as a seekable file: zipfile reads its directory and two entries only."""

    def __init__(self, url):
        self.url, self.pos = url, 0
        head = urllib.request.urlopen(urllib.request.Request(url, method="HEAD"))
        self.size = int(head.headers["Content-Length"])

    def seekable(self):
        return True

    def readable(self):
        return True

    def tell(self):
        return self.pos

    def seek(self, offset, whence=0):
        self.pos = [offset, self.pos + offset, self.size + offset][whence]
        return self.pos

    def readinto(self, buffer):
        if self.pos >= self.size or len(buffer) == 0:
            return 0
        end = min(self.size, self.pos + len(buffer)) - 1
        request = urllib.request.Request(self.url, headers={"Range": f"bytes={self.pos}-{end}"})
        data = urllib.request.urlopen(request).read()
        buffer[:len(data)] = data
        self.pos += len(data)
        return len(data)


def nvrtc():
    os.makedirs(CACHE, exist_ok=True)
    missing = [e for e in ENTRIES if not os.path.exists(os.path.join(CACHE, os.path.basename(e)))]
    if missing:
        print(f"check-kernels: fetching libnvrtc from {JAR}", file=sys.stderr)
        jar = zipfile.ZipFile(io.BufferedReader(RangeFile(JAR), buffer_size=1 << 20))
        for entry in missing:
            with open(os.path.join(CACHE, os.path.basename(entry)), "wb") as out:
                out.write(jar.read(entry))
    # the builtins library is found next to libnvrtc
    ctypes.CDLL(os.path.join(CACHE, "libnvrtc-builtins.so.12.6"), mode=ctypes.RTLD_GLOBAL)
    return ctypes.CDLL(os.path.join(CACHE, "libnvrtc.so.12"))


def main():
    lib = nvrtc()
    with open(SOURCE, "rb") as f:
        source = f.read()
    with open(LOADER) as f:
        # every string literal of CudaKernels is a kernel name it launches
        kernels = sorted(set(re.findall(r'"(\w+)"', f.read())))
    program = ctypes.c_void_p()
    if lib.nvrtcCreateProgram(ctypes.byref(program), source, b"kernels.cu", 0, None, None) != 0:
        print("check-kernels: nvrtcCreateProgram failed", file=sys.stderr)
        return 1
    options = [f"--gpu-architecture={ARCH}".encode(), b"--fmad=false", b"--std=c++17"]
    result = lib.nvrtcCompileProgram(program, len(options), (ctypes.c_char_p * len(options))(*options))
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(program, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(program, log)
    if log.value.strip():
        print(log.value.decode())
    if result != 0:
        print(f"check-kernels: kernels.cu does not compile for {ARCH} (nvrtcResult {result})")
        return 1
    lib.nvrtcGetCUBINSize(program, ctypes.byref(size))
    cubin = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetCUBIN(program, cubin)
    absent = [k for k in kernels if k.encode() not in cubin.raw]
    if absent:
        print(f"check-kernels: not in the CUBIN: {', '.join(absent)}")
        return 1
    print(f"check-kernels: kernels.cu compiles for {ARCH} with NVRTC 12.6 "
          f"({size.value} bytes of CUBIN): {', '.join(kernels)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
