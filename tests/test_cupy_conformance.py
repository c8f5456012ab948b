"""Conformance with the installed CuPy: every CuPy name and keyword parsim uses exists, as used.

The GPU path only runs where there is a GPU, so a renamed function, a misspelt keyword or a changed
default would otherwise surface on a user's machine, mid-measurement. CuPy imports without a
GPU, though, and its signatures can be read: this module parses parsim's GPU code with ``ast``,
collects every attribute chain rooted at the CuPy module (``cupy.cuda.Stream``,
``cupyx.profiler.benchmark``, ``cupy.get_default_memory_pool().free_bytes``...) and every call
through one, and checks that each chain resolves on the installed modules and each call's
positional and keyword arguments bind to the callee's signature (``inspect.signature``, or for
Cython functions the signature CuPy writes on the first line of the docstring). It then pins the
behaviour the code relies on: ``ndarray.get`` blocks unless told not to, ``benchmark`` reports
seconds where CUDA events report milliseconds.

What counts as "the CuPy module" (a heuristic fitted to parsim's conventions, see ``Scanner``):
the names ``cupy`` and ``cupyx``; names imported from them; ``self.xp`` in ``CupyBackend``; ``xp``
in measuring code that runs on both backends (not the CPU-only modules); whatever is assigned
from ``import_cupy()``; and, within a function, variables assigned from any of these (a stream,
an array, a memory pool), typed by what CuPy documents the call returns. Copies on array
expressions the scan cannot type (``arrays["out"].get(stream=...)``) are recognised by their
keywords, which only ``ndarray.get``/``ndarray.set`` take.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy
import pytest

cupy = pytest.importorskip("cupy", reason="CuPy is not installed (pip install 'parsim[gpu]')")
import cupyx  # noqa: E402  (after the skip: it comes with CuPy)
import cupyx.profiler  # noqa: E402

PARSIM = Path(__file__).resolve().parents[1] / "parsim"
CPU_ONLY = {"cpu.py", "calibrate.py"}  # measuring modules where ``xp`` is always NumPy
MODULES = {"cupy": cupy, "cupyx": cupyx, "numpy": numpy}
UNCHECKED = object()  # a keyword's value that is not a literal


def scanned_files() -> list[Path]:
    """The measuring modules, and every other parsim module that mentions CuPy."""
    measure = sorted((PARSIM / "measure").glob("*.py"))
    others = [
        path
        for path in sorted(PARSIM.rglob("*.py"))
        if path.parent.name != "measure" and re.search(r"\bcupyx?\b", path.read_text())
    ]
    return measure + others


# --- signatures ----------------------------------------------------------------------------------


def _split_top_level(text: str) -> list[str]:
    """Split a parameter list at the commas outside brackets and quotes."""
    parts, depth, quote, current = [], 0, None, ""
    for char in text:
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        current += char
    return [part.strip() for part in [*parts, current] if part.strip()]


def doc_signature(obj) -> inspect.Signature | None:
    """The signature on the first line of ``obj``'s docstring, as Cython's ``embedsignature`` and
    CuPy's ufuncs write it: ``_ndarray_base.get(self, stream=None, order='C', out=None, blocking=True)``,
    ``add(x1, x2, /, out=None, \\*, casting='same_kind', dtype=None)``, ``getDeviceProperties(int device)``.
    Defaults are the literal values where they are literals, else their text."""
    lines = (getattr(obj, "__doc__", None) or "").strip().splitlines()
    match = re.match(r"^[\w.]+\((.*)\)\s*(->.*)?$", lines[0].strip()) if lines else None
    if match is None:
        return None
    parameters, kind = [], inspect.Parameter.POSITIONAL_OR_KEYWORD
    for token in _split_top_level(match.group(1).replace("\\", "")):
        if token == "/":
            parameters = [p.replace(kind=inspect.Parameter.POSITIONAL_ONLY) for p in parameters]
            continue
        if token == "*":
            kind = inspect.Parameter.KEYWORD_ONLY
            continue
        name, _, default_text = (part.strip() for part in token.partition("="))
        name = name.split(":")[0].split()[-1]  # drop annotations and Cython types ("int device")
        if name.startswith("**"):
            parameters.append(inspect.Parameter(name[2:], inspect.Parameter.VAR_KEYWORD))
            continue
        if name.startswith("*"):
            parameters.append(inspect.Parameter(name[1:], inspect.Parameter.VAR_POSITIONAL))
            kind = inspect.Parameter.KEYWORD_ONLY
            continue
        default = inspect.Parameter.empty
        if default_text:
            try:
                default = ast.literal_eval(default_text)
            except (ValueError, SyntaxError):
                default = default_text
        parameters.append(inspect.Parameter(name, kind, default=default))
    return inspect.Signature(parameters)


def signature(obj, bound: bool) -> inspect.Signature | None:
    """``obj``'s signature, without ``self`` when it is called through an instance (``bound``)."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        sig = doc_signature(obj)
        if sig is None and inspect.isclass(obj):  # "CUDA stream." : the constructor has it
            sig, bound = doc_signature(obj.__init__), True
    if sig is not None and bound and next(iter(sig.parameters), None) == "self":
        sig = sig.replace(parameters=list(sig.parameters.values())[1:])
    return sig


def _resolve_dotted(name: str):
    """``cupy.cuda.MemoryPool`` -> the class, importing submodules as needed (None if it does not resolve)."""
    parts = name.split(".")
    obj = MODULES.get(parts[0])
    for i, part in enumerate(parts[1:], start=2):
        if obj is None:
            return None
        try:
            obj = getattr(obj, part)
        except AttributeError:
            try:
                obj = importlib.import_module(".".join(parts[:i]))
            except ImportError:
                return None
    return obj


def return_type(obj) -> tuple[str, type] | None:
    """What calling ``obj`` returns, as (label, class), from what CuPy documents: a ``-> _ndarray_base``
    on the signature line, or the type leading a Google-style ``Returns:`` section; ufuncs return arrays."""
    if isinstance(obj, (cupy.ufunc, type(cupy.matmul))):
        return "cupy.ndarray", cupy.ndarray
    doc = getattr(obj, "__doc__", None) or ""
    first = doc.strip().splitlines()[0] if doc.strip() else ""
    if re.search(r"->\s*(cupy\._core\.core\.)?_ndarray_base\s*$", first):
        return "cupy.ndarray", cupy.ndarray
    match = re.search(r"Returns:\s*\n\s*(?::class:)?`*~?([\w.]+)", doc)
    if match:
        cls = _resolve_dotted(match.group(1))
        if inspect.isclass(cls):
            label = "cupy.ndarray" if issubclass(cls, cupy.ndarray) else match.group(1)
            return label, cls
    return None


# --- the scan ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Value:
    """What an expression is: the CuPy object it names, or an instance of the class ``obj``."""

    label: str
    obj: object
    instance: bool = False  # attributes are looked up on the class
    bound: bool = False  # a method reached through an instance: ``self`` is implicit


@dataclass
class Chain:
    label: str
    where: str
    error: str | None = None


@dataclass
class Call:
    label: str
    where: str
    obj: object
    bound: bool
    positional: int
    keywords: dict = field(default_factory=dict)  # name -> literal value (or UNCHECKED)
    open: bool = False  # *args or **kwargs at the call site: only the keyword names can be checked

    @property
    def id(self) -> str:
        args = ["_"] * self.positional + [f"{name}=" for name in self.keywords] + (["*"] if self.open else [])
        return f"{self.label}({', '.join(args)})"


class Scanner(ast.NodeVisitor):
    """Collects the CuPy attribute chains and calls of one module (see the module docstring)."""

    def __init__(self, path: Path, chains: list[Chain], calls: list[Call]):
        self.path, self.chains, self.calls = path, chains, calls
        self.xp_is_cupy = path.parent.name == "measure" and path.name not in CPU_ONLY
        self.scopes: list[dict[str, Value | None]] = [{}]
        self.classes: list[str] = []
        self.values: dict[int, Value | None] = {}  # by id(node): each node is evaluated once
        self.parents: dict[int, ast.AST] = {}

    def where(self, node: ast.AST) -> str:
        path = self.path.relative_to(PARSIM.parent) if self.path.is_relative_to(PARSIM.parent) else self.path
        return f"{path}:{node.lineno}"

    def scan(self) -> None:
        tree = ast.parse(self.path.read_text(), str(self.path))
        for parent in ast.walk(tree):
            for child in ast.iter_child_nodes(parent):
                self.parents[id(child)] = parent
        self.visit(tree)

    # names and scopes

    def lookup(self, name: str) -> Value | None:
        if name in ("cupy", "cupyx") or (name == "xp" and self.xp_is_cupy):
            return Value("cupy" if name == "xp" else name, MODULES["cupy" if name == "xp" else name])
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def bind(self, target: ast.AST, value: Value | None) -> None:
        if isinstance(target, ast.Name):
            self.scopes[-1][target.id] = value
        else:  # tuple unpacking, subscripts, attributes: whatever names they bind are not tracked
            for node in ast.walk(target):
                if isinstance(node, ast.Name):
                    self.scopes[-1][node.id] = None

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.classes.append(node.name)
        self.generic_visit(node)
        self.classes.pop()

    def _visit_function(self, node) -> None:
        for decorator in getattr(node, "decorator_list", []):
            self.visit(decorator)
        args = node.args
        for default in [*args.defaults, *args.kw_defaults]:
            if default is not None:
                self.visit(default)
        params = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
        self.scopes.append({param.arg: None for param in params if param is not None})
        for statement in node.body if isinstance(node.body, list) else [node.body]:
            self.visit(statement)
        self.scopes.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _visit_function

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            root = alias.name.split(".")[0]
            # "import cupyx.profiler" binds cupyx; "import cupyx.profiler as p" binds the submodule
            if root in ("cupy", "cupyx"):
                self.import_(node, alias.name if alias.asname else root, alias.asname or root)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module and node.module.split(".")[0] in ("cupy", "cupyx") and node.level == 0:
            for alias in node.names:
                self.import_(node, f"{node.module}.{alias.name}", alias.asname or alias.name)

    def import_(self, node: ast.AST, dotted: str, name: str) -> None:
        obj = _resolve_dotted(dotted)
        self.chains.append(
            Chain(dotted, self.where(node), None if obj is not None else f"cannot import {dotted}")
        )
        self.scopes[-1][name] = Value(dotted, obj) if obj is not None else None

    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        for target in node.targets:
            self.visit(target)
            self.bind(target, self.evaluate(node.value) if len(node.targets) == 1 else None)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
        self.bind(node.target, self.evaluate(node.value) if node.value is not None else None)

    def visit_For(self, node: ast.For) -> None:
        self.visit(node.iter)
        self.bind(node.target, None)
        for statement in [*node.body, *node.orelse]:
            self.visit(statement)

    def visit_withitem(self, node: ast.withitem) -> None:
        self.visit(node.context_expr)
        if node.optional_vars is not None:
            self.bind(node.optional_vars, None)

    # expressions

    def visit_Name(self, node: ast.Name) -> None:
        self.evaluate(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self.evaluate(node)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        self.evaluate(node)
        self.generic_visit(node)

    def evaluate(self, node: ast.AST) -> Value | None:
        if id(node) not in self.values:
            self.values[id(node)] = self._evaluate(node)
        return self.values[id(node)]

    def _evaluate(self, node: ast.AST) -> Value | None:
        if isinstance(node, ast.Name):
            return self.lookup(node.id)
        if isinstance(node, ast.Attribute):
            if (
                isinstance(node.value, ast.Name)
                and node.value.id == "self"
                and node.attr == "xp"
                and self.classes[-1:] == ["CupyBackend"]
            ):
                return Value("cupy", cupy)
            return self._attribute(node)
        if isinstance(node, ast.Call):
            return self._call(node)
        return None

    def _attribute(self, node: ast.Attribute) -> Value | None:
        base = self.evaluate(node.value)
        if base is None:
            return None
        label = f"{base.label}.{node.attr}"
        parent = self.parents.get(id(node))
        leaf = not (isinstance(parent, ast.Attribute) and parent.value is node)
        if not hasattr(base.obj, node.attr):  # for an instance, on its class
            self.chains.append(Chain(label, self.where(node), f"{base.label} has no {node.attr!r}"))
            return None
        obj = getattr(base.obj, node.attr)
        if base.instance and inspect.isdatadescriptor(obj):
            value = None  # a property: what it holds is not known here, so the chain ends with it
        else:
            value = Value(label, obj, bound=base.instance and callable(obj))
        if leaf or value is None:
            self.chains.append(Chain(label, self.where(node)))
        return value

    def _call(self, node: ast.Call) -> Value | None:
        if isinstance(node.func, ast.Name) and node.func.id == "import_cupy":
            return Value("cupy", cupy)
        callee = self.evaluate(node.func)
        if callee is None:
            callee = self._copy_method(node)
        if callee is None:
            return None
        if callee.instance:  # calling an object: its class's __call__
            # dir(), not hasattr: every class has its metaclass's __call__, which creates instances
            callable_ = "__call__" in dir(callee.obj)
            obj, bound, label = callee.obj.__call__ if callable_ else None, True, f"{callee.label}.__call__"
            if obj is None:
                self.chains.append(Chain(label, self.where(node), f"a {callee.label} is not callable"))
                return None
        else:
            obj, bound, label = callee.obj, callee.bound, callee.label
        keywords = {
            kw.arg: (kw.value.value if isinstance(kw.value, ast.Constant) else UNCHECKED)
            for kw in node.keywords
            if kw.arg is not None
        }
        is_open = any(isinstance(arg, ast.Starred) for arg in node.args) or any(
            kw.arg is None for kw in node.keywords
        )
        positional = sum(not isinstance(arg, ast.Starred) for arg in node.args)
        self.calls.append(Call(label, self.where(node), obj, bound, positional, keywords, is_open))
        if inspect.isclass(obj):
            return Value(callee.label, obj, instance=True)
        returned = return_type(obj)
        return Value(returned[0], returned[1], instance=True) if returned else None

    def _copy_method(self, node: ast.Call) -> Value | None:
        """``<array>.get(stream=...)``/``<array>.set(host, stream=...)`` on an expression the scan cannot
        type: those keywords make it CuPy's copy (``dict.get`` takes none)."""
        if not isinstance(node.func, ast.Attribute):
            return None
        names = {kw.arg for kw in node.keywords}
        if (node.func.attr == "get" and names & {"stream", "blocking", "out"}) or (
            node.func.attr == "set" and "stream" in names
        ):
            label = f"cupy.ndarray.{node.func.attr}"
            self.chains.append(Chain(label, self.where(node)))
            return Value(label, getattr(cupy.ndarray, node.func.attr), bound=True)
        return None


def scan() -> tuple[list[Chain], list[Call], list[Path]]:
    chains: list[Chain] = []
    calls: list[Call] = []
    files = scanned_files()
    for path in files:
        Scanner(path, chains, calls).scan()
    return chains, calls, files


CHAINS, CALLS, FILES = scan()


def _unique(items, key):
    """One test per distinct chain or call form; the failure message lists every place it occurs."""
    groups: dict = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    return [pytest.param(group, id=name) for name, group in sorted(groups.items())]


# --- the checks ----------------------------------------------------------------------------------


def test_the_scan_finds_the_cupy_code():
    # a scan that silently matches nothing would pass every test below
    labels = {chain.label for chain in CHAINS}
    assert len(labels) >= 8, f"only {sorted(labels)} in {[str(f) for f in FILES]}"
    contributing = {chain.where.split(":")[0] for chain in CHAINS}
    assert {"parsim/measure/gpu.py", "parsim/measure/backends.py"} <= contributing, contributing
    # the copies are what the GPU path is about: they must be among the checked calls
    assert {"cupy.ndarray.get", "cupy.ndarray.set"} <= {call.label for call in CALLS}


@pytest.mark.parametrize("chains", _unique(CHAINS, lambda chain: chain.label))
def test_chain_resolves_on_the_installed_cupy(chains):
    errors = [f"{chain.where}: {chain.error}" for chain in chains if chain.error]
    assert not errors, f"{chains[0].label} does not resolve on CuPy {cupy.__version__}:\n" + "\n".join(errors)


def call_problem(call: Call) -> str | None:
    """Why ``call``'s arguments do not fit the callee's signature (None when they fit)."""
    sig = signature(call.obj, call.bound)
    if sig is None:
        # nothing to check against; a call that passes keywords must be checkable
        return f"no signature for {call.label} to check the keywords against" if call.keywords else None
    if call.open:
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values())
        for name in call.keywords:
            param = sig.parameters.get(name)
            if not (takes_any or (param is not None and param.kind is not inspect.Parameter.POSITIONAL_ONLY)):
                return f"{call.label}{sig} takes no keyword {name!r}"
        return None
    try:
        sig.bind(*range(call.positional), **dict.fromkeys(call.keywords))
    except TypeError as exc:
        return f"does not fit {call.label}{sig}: {exc}"
    return None


@pytest.mark.parametrize("calls", _unique(CALLS, lambda call: call.id))
def test_call_arguments_are_accepted(calls):
    problem = call_problem(calls[0])
    places = ", ".join(call.where for call in calls)
    assert problem is None, f"{calls[0].id} at {places} on CuPy {cupy.__version__}: {problem}"


BROKEN = """
import cupy
from cupyx.profiler import benchmark


def measure(backend, xp, arrays):
    stream = cupy.cuda.Stream(nonblocking=True)
    stream.synchronise()
    out = xp.empty(3, dtype="float32")
    out.get(stream=stream, blocked=False)
    arrays["out"].set(1, 2, 3, stream=stream)
    cupy.cuda.runtime.memInfo()
    cupy.get_default_memory_pool().free_byte()
    benchmark(measure, n_repeats=3)
    return backend.xp.anything, arrays.get("a"), out.fill(0)
"""


def test_the_scan_catches_mistakes(tmp_path):
    # the negative control: one mistake per line above, each of a kind the checks exist for
    path = tmp_path / "measure" / "broken.py"
    path.parent.mkdir()
    path.write_text(BROKEN)
    chains, calls = [], []
    Scanner(path, chains, calls).scan()
    assert {chain.label for chain in chains if chain.error} == {
        "cupy.cuda.Stream.synchronise",
        "cupy.cuda.runtime.memInfo",
        "cupy.cuda.MemoryPool.free_byte",
    }
    assert {call.id for call in calls if call_problem(call)} == {
        "cupy.cuda.Stream(nonblocking=)",
        "cupy.ndarray.get(stream=, blocked=)",
        "cupy.ndarray.set(_, _, _, stream=)",
        "cupyx.profiler.benchmark(_, n_repeats=)",
    }
    # and what is right passes: the import, xp.empty, fill on the array it returns
    assert {"cupyx.profiler.benchmark", "cupy.empty", "cupy.ndarray.fill"} <= {c.label for c in chains}


def test_copies_back_do_not_block_the_host():
    # ndarray.get blocks the host by default (pinned below): a copy back that is to overlap with
    # other streams, and every copy on an explicit stream is, must pass blocking=False
    gets = [call for call in CALLS if call.label == "cupy.ndarray.get" and "stream" in call.keywords]
    assert gets, "no ndarray.get(stream=...) found"
    blocking = [call.where for call in gets if call.keywords.get("blocking") is not False]
    assert not blocking, f"ndarray.get on a stream without blocking=False at {blocking}"


# --- the behaviour the code relies on -------------------------------------------------------------


def test_cupy_is_14_or_newer():
    # bfloat16 arrays, and the blocking ndarray.get the code is written against
    assert int(cupy.__version__.split(".")[0]) >= 14, cupy.__version__


def test_get_blocks_by_default():
    blocking = signature(cupy.ndarray.get, bound=True).parameters["blocking"]
    assert blocking.default is True, f"ndarray.get's blocking now defaults to {blocking.default!r}"


def test_benchmark_reports_seconds():
    # CuPy turns the events' milliseconds into seconds; Timing takes gpu_times as seconds as they are
    source = inspect.getsource(inspect.getmodule(cupyx.profiler.benchmark))
    converted = r"get_elapsed_time\([^)]*\)\s*(\*\s*(1e-3|0\.001)|/\s*(1000|1e3))"
    assert re.search(converted, source), "cupyx.profiler.benchmark no longer converts ms to s"


def test_event_times_are_milliseconds():
    doc = cupy.cuda.get_elapsed_time.__doc__ or ""
    assert re.search(r"Returns:\s*\n\s*float: Elapsed time in milliseconds", doc), doc


def test_standard_normal_draws_in_the_requested_dtype():
    # float32 data is drawn as float32, without a float64 temporary twice its size
    assert "dtype" in signature(cupy.random.standard_normal, bound=False).parameters


def test_streams_are_context_managers():
    # kernels are issued on a chunk's stream with ``with stream:``
    assert hasattr(cupy.cuda.Stream, "__enter__") and hasattr(cupy.cuda.Stream, "__exit__")


def test_bfloat16_comes_from_ml_dtypes():
    import ml_dtypes

    dtype = numpy.dtype(ml_dtypes.bfloat16)
    assert (dtype.name, dtype.itemsize) == ("bfloat16", 2)


def test_the_docstring_signature_parser():
    # the parser the keyword checks stand on, on the forms CuPy writes
    get = doc_signature(cupy.ndarray.get)
    assert list(get.parameters) == ["self", "stream", "order", "out", "blocking"]
    add = doc_signature(cupy.add)
    assert add.parameters["x1"].kind is inspect.Parameter.POSITIONAL_ONLY
    assert add.parameters["casting"].kind is inspect.Parameter.KEYWORD_ONLY
    with pytest.raises(TypeError):
        add.bind(1, 2, bogus=3)
    assert list(doc_signature(cupy.cuda.runtime.getDeviceProperties).parameters) == ["device"]
    assert signature(cupy.cuda.Stream, bound=False).bind(non_blocking=True)
    with pytest.raises(TypeError):
        signature(cupy.ndarray.get, bound=True).bind(blocked=False)


def test_the_float32_compute_type_is_a_setting_read_back():
    # math=tf32/ieee is applied through CuPy's per-dtype cuBLAS compute type (gpu.math_mode): it must
    # be settable and read back as set; CUPY_TF32 only seeds it on first use, so it cannot switch a run
    from cupy._core import _routines_linalg as linalg

    assert (linalg.COMPUTE_TYPE_FP32, linalg.COMPUTE_TYPE_TF32) == (4, 7)
    before = cupy._core.get_compute_type(numpy.float32)
    try:
        cupy._core.set_compute_type(numpy.float32, linalg.COMPUTE_TYPE_FP32)  # no GPU needed for FP32
        assert cupy._core.get_compute_type(numpy.float32) == linalg.COMPUTE_TYPE_FP32
    finally:
        cupy._core.set_compute_type(numpy.float32, before)
    assert list(doc_signature(cupy._core.set_compute_type).parameters) == ["dtype", "compute_type"]
