"""The fused kernels compile: every ``gpu.FUSED`` body, in every dtype, for every GPU generation.

A fused kernel is CUDA C that CuPy hands to NVRTC the first time it runs, so a body that does
not compile (a missing cast for ``__half``, an operator ``__nv_bfloat16`` lacks, a typo) would
otherwise only show on a machine with a GPU, mid-measurement. NVRTC itself needs no GPU: it
ships as a wheel (``nvidia-cuda-nvrtc-cu12``, in the dev extra) and is loaded here through
ctypes. Each body is wrapped the way ``cupy.ElementwiseKernel`` wraps it (one thread per
element, inputs read into ``const T`` locals, the output written back) and compiled to a
cubin for sm_70 (V100) to sm_90 (H100). A deliberately broken body must fail, so a harness
that passes everything would be caught.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import importlib.util
import os
from pathlib import Path

import pytest

from parsim.measure.gpu import FUSED

ARCHS = (70, 75, 80, 86, 89, 90)

# numpy dtype -> (C type that T stands for, header that declares it); CuPy's float16 and bfloat16
# wrap exactly these CUDA types
DTYPES = {
    "float16": ("__half", "cuda_fp16.h"),
    "bfloat16": ("__nv_bfloat16", "cuda_bf16.h"),
    "float32": ("float", None),
    "float64": ("double", None),
}

# concrete ElementwiseKernel type names a parameter may use instead of a type placeholder
C_TYPES = {name: ctype for name, (ctype, _) in DTYPES.items()} | {
    "int32": "int",
    "int64": "long long",
    "bool": "bool",
}


def _nvrtc_candidates():
    """Where libnvrtc may be: the pip wheels first (what the dev extra installs), then the system."""
    spec = importlib.util.find_spec("nvidia")
    for root in spec.submodule_search_locations if spec else ():
        # CUDA 12 wheels: nvidia/cuda_nvrtc/lib; CUDA 13 wheels: nvidia/cu13/lib
        for lib_dir in [Path(root, "cuda_nvrtc", "lib"), *sorted(Path(root).glob("cu[0-9]*/lib"))]:
            # the plain build, as CuPy loads it (the wheel also has an alternative libnvrtc.alt.so)
            yield from sorted(p for p in lib_dir.glob("libnvrtc.so*") if ".alt." not in p.name)
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib  # what CuPy itself uses to find it

        yield Path(load_nvidia_dynamic_lib("nvrtc").abs_path)
    except Exception:  # not installed, or found nothing
        pass
    if found := ctypes.util.find_library("nvrtc"):
        yield Path(found)


def _load_nvrtc():
    for candidate in _nvrtc_candidates():
        try:
            lib = ctypes.CDLL(str(candidate))
        except OSError:
            continue
        # every NVRTC call returns an nvrtcResult (0 is NVRTC_SUCCESS); a program is an opaque pointer
        P = ctypes.c_void_p
        lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        lib.nvrtcGetErrorString.argtypes = [ctypes.c_int]
        for name, argtypes in {
            "nvrtcVersion": [ctypes.POINTER(ctypes.c_int)] * 2,
            "nvrtcCreateProgram": [ctypes.POINTER(P), ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, P, P],
            "nvrtcCompileProgram": [P, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)],
            "nvrtcGetProgramLogSize": [P, ctypes.POINTER(ctypes.c_size_t)],
            "nvrtcGetProgramLog": [P, ctypes.c_char_p],
            "nvrtcGetCUBINSize": [P, ctypes.POINTER(ctypes.c_size_t)],
            "nvrtcDestroyProgram": [ctypes.POINTER(P)],
        }.items():
            getattr(lib, name).argtypes = argtypes
            getattr(lib, name).restype = ctypes.c_int
        return lib, candidate
    return None, None


NVRTC, NVRTC_PATH = _load_nvrtc()
if NVRTC is None:
    pytest.skip(
        "the NVRTC shared library was not found: pip install nvidia-cuda-nvrtc-cu12 (in the dev extra)",
        allow_module_level=True,
    )


def _check(result: int, what: str) -> None:
    assert result == 0, f"{what}: {NVRTC.nvrtcGetErrorString(result).decode()}"


def compile_cuda(source: str, options: list[str]) -> tuple[int, str, int]:
    """Compile ``source`` with NVRTC: (nvrtcResult of the compilation, its log, cubin size in bytes)."""
    program = ctypes.c_void_p()
    _check(
        NVRTC.nvrtcCreateProgram(ctypes.byref(program), source.encode(), b"fused.cu", 0, None, None), "create"
    )
    try:
        argv = (ctypes.c_char_p * len(options))(*(option.encode() for option in options))
        result = NVRTC.nvrtcCompileProgram(program, len(options), argv)
        size = ctypes.c_size_t()
        _check(NVRTC.nvrtcGetProgramLogSize(program, ctypes.byref(size)), "log size")
        log = ctypes.create_string_buffer(size.value)
        _check(NVRTC.nvrtcGetProgramLog(program, log), "log")
        cubin = ctypes.c_size_t(0)
        if result == 0:  # a compilation for a virtual architecture (compute_XX) has no cubin: size 0
            NVRTC.nvrtcGetCUBINSize(program, ctypes.byref(cubin))
        return result, log.value.decode(errors="replace"), cubin.value
    finally:
        NVRTC.nvrtcDestroyProgram(ctypes.byref(program))


def parse_params(params: str) -> list[tuple[str, str]]:
    """``"T x, T y"`` -> ``[("T", "x"), ("T", "y")]`` (ElementwiseKernel's parameter syntax)."""
    parsed = []
    for param in filter(None, (p.strip() for p in params.split(","))):
        *type_words, name = param.split()
        # a raw parameter is indexed by the body itself: the per-element wrapper below cannot model it
        assert type_words and "raw" not in type_words, f"unsupported ElementwiseKernel parameter {param!r}"
        parsed.append((type_words[-1], name))
    return parsed


def elementwise_source(name: str, inputs: str, outputs: str, body: str, dtype: str) -> str:
    """CUDA C for one ElementwiseKernel, with ``T`` bound to ``dtype`` (as CuPy generates it, minus its
    indexer: inputs are const locals read from the arrays, outputs locals written back after the body)."""
    ctype, header = DTYPES[dtype]
    ins, outs = parse_params(inputs), parse_params(outputs)

    def c_type(type_name: str) -> str:
        # a one-letter type is a placeholder: the fused kernels use T for the array dtype
        return type_name if len(type_name) == 1 else C_TYPES[type_name]

    args = [f"const {c_type(t)}* {p}_in" for t, p in ins] + [f"{c_type(t)}* {p}_out" for t, p in outs]
    reads = "".join(f"        const {c_type(t)} {p} = {p}_in[i];\n" for t, p in ins)
    declares = "".join(f"        {c_type(t)} {p};\n" for t, p in outs)
    writes = "".join(f"        {p}_out[i] = {p};\n" for _, p in outs)
    return (
        (f"#include <{header}>\n" if header else "")
        + f"typedef {ctype} T;\n"
        + f'extern "C" __global__ void parsim_{name}({", ".join(args)}, long long n) {{\n'
        + "    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
        + "    if (i < n) {\n"
        + reads
        + declares
        + f"        {body};\n"
        + writes
        + "    }\n}\n"
    )


def _header_dirs():
    """Directories that may hold cuda_fp16.h / cuda_bf16.h, most specific first."""
    spec = importlib.util.find_spec("nvidia")
    for root in spec.submodule_search_locations if spec else ():
        # the CUDA runtime wheel (cupy-cuda12x[ctk]) carries them; the NVRTC wheel only has nvrtc.h
        yield from (Path(root, sub, "include") for sub in ("cuda_runtime", "cuda_nvrtc"))
        yield from sorted(Path(root).glob("cu[0-9]*/include"))
    try:
        from cuda.pathfinder import find_nvidia_header_directory  # where CuPy itself looks

        if found := find_nvidia_header_directory("cudart"):
            yield Path(found)
    except Exception:
        pass
    for variable in ("CUDA_PATH", "CUDA_HOME"):
        if os.environ.get(variable):
            yield Path(os.environ[variable], "include")
    yield Path("/usr/local/cuda/include")


@functools.cache
def header_options(header: str) -> list[str] | None:
    """Options that make ``#include <header>`` compile: none if NVRTC has it built in (CUDA 13 does),
    ``-I<dir>`` for the first directory that has it, or None where it is nowhere to be found."""
    probe = f"#include <{header}>\n"
    if compile_cuda(probe, ["-std=c++17"])[0] == 0:
        return []
    for directory in _header_dirs():
        if (directory / header).is_file() and compile_cuda(probe, ["-std=c++17", f"-I{directory}"])[0] == 0:
            return [f"-I{directory}"]
    return None


def compile_options(dtype: str, arch: int) -> list[str]:
    """sm_XX (not compute_XX) so that NVRTC goes all the way to machine code for that generation."""
    header = DTYPES[dtype][1]
    extra = header_options(header) if header else []
    if extra is None:
        pytest.skip(
            f"{header} is neither built into NVRTC ({NVRTC_PATH}) nor in any CUDA include directory: "
            "pip install nvidia-cuda-runtime-cu12 (cupy-cuda12x[ctk]) to compile the "
            f"{dtype} kernels"
        )
    return [f"--gpu-architecture=sm_{arch}", "-std=c++17", *extra]


def test_nvrtc_is_a_cuda_12_or_newer_compiler():
    major, minor = ctypes.c_int(), ctypes.c_int()
    _check(NVRTC.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "version")
    assert (major.value, minor.value) >= (12, 0), f"{NVRTC_PATH} is NVRTC {major.value}.{minor.value}"


def test_the_fused_kernels_are_there():
    # the parametrization below must not go quiet because FUSED was renamed or emptied
    assert {"saxpy", "sigmoid", "relu"} <= set(FUSED)


@pytest.mark.parametrize("arch", ARCHS, ids=lambda arch: f"sm_{arch}")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(FUSED))
def test_fused_kernel_compiles(name, dtype, arch):
    source = elementwise_source(name, *FUSED[name], dtype)
    result, log, cubin_B = compile_cuda(source, compile_options(dtype, arch))
    assert result == 0, f"parsim_{name} ({dtype}) does not compile for sm_{arch}:\n{log}\n{source}"
    assert cubin_B > 0, f"NVRTC compiled parsim_{name} ({dtype}) for sm_{arch} but produced no cubin"


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_broken_body_fails_to_compile(dtype):
    # the negative control: the same harness, a body that uses an undeclared variable
    source = elementwise_source("broken", "T x", "T z", "z = x + undeclared_in_parsim", dtype)
    result, log, _ = compile_cuda(source, compile_options(dtype, 80))
    assert result != 0, f"a body with an undeclared variable compiled:\n{source}"
    assert "undeclared_in_parsim" in log, f"the NVRTC log does not name the culprit:\n{log}"


def test_the_wrapper_reads_inputs_and_writes_outputs():
    # what the compiled kernels contain: one const local per input, the output written back
    source = elementwise_source("saxpy", *FUSED["saxpy"], "float32")
    assert "typedef float T;" in source and "long long n)" in source
    assert "const T x = x_in[i];" in source and "const T y = y_in[i];" in source
    assert "z_out[i] = z;" in source and "void parsim_saxpy(const T* x_in, const T* y_in, T* z_out" in source
