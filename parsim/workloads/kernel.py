"""A kernel: one launch of data-parallel work, as a name, a place and four small records by concern.

The model reads a kernel's facts in groups, and each group is a frozen record of its own:

- ``Work``: what the roofline weighs — FLOPs, bytes, work items, element type, whether matrix
  units can run it, transcendental evaluations, the elementary operation whose measured rate a
  processor may have;
- ``Access``: how its bytes reach the cores — traffic that always comes from main memory, the
  loads a thread waits for one by one, the bytes touched between two uses of its data;
- ``LibraryHints``: what the kernel library chooses from — the GEMM's output shape, the
  convolution, the arithmetic (TF32, int8), foldable ops, layouts, the fused-attention kind;
- ``Issue``: what the host pays to issue it — the interpreter's operations per item, a
  framework's primitive op, a share of a multi-tensor launch.

The name, stream, device, layer, phase and part stay on the kernel itself, as on every op (``Transfer``,
``AllReduce``): they place it in the program and the timeline, and no timing depends on them, so
``cost_key`` (the timing caches' key) is the four records. A kernel checks its records when it is
built, each record with one cheap expression and only once (a training step builds thousands, of
a few shapes: a record already checked is shared, not checked again); only a failure runs the
rules one by one to name the field, prefixed by the kernel's name.

The records are named tuples rather than attrs classes because every timing cache lookup hashes
and compares them: a tuple does that in C, where attrs' generated ``__hash__``/``__eq__`` cost a
Python call per record (a 3D-parallel lesson ran ~40 % slower that way). Compare a record with
records of its own kind only (a tuple equals any tuple of the same values). The records, their
rules and the table of checked ones live in ``kernel_records``; this module places them in a kernel.
"""

from __future__ import annotations

from typing import Any

import attrs

from parsim.base.checks import explain, non_negative_int, text
from parsim.base.errors import ParsimError, field_error
from parsim.workloads.conv import ConvShape
from parsim.workloads.kernel_records import (
    _PART_OF,
    _POSITION,
    _RULES,
    _SHARED_IDS,
    NO_LIBRARY_HINTS,
    PARTS,
    PLAIN_ACCESS,
    PLAIN_ISSUE,
    Access,
    Issue,
    LibraryHints,
    Work,
    _Field,
    _good_access,
    _good_issue,
    _good_library,
    _good_work,
    _record,
    _shared,
)

HOST = -1
"""``device`` of an op the host CPU runs itself."""


def device_index(instance: Any, attribute: Any, value: Any) -> None:
    """A GPU index, or ``HOST`` (-1) for work the host CPU does itself."""
    non_negative_int(instance, attribute, value + 1 if isinstance(value, int) else value)


_PLACE_RULES = {
    "name": text,
    "stream": non_negative_int,
    "device": device_index,
    "layer": text,
    "phase": text,
    "part": text,
}


def _share_records(kernel: Kernel) -> bool:
    """Check each record of ``kernel`` that is not already a checked one, and give ``kernel`` the
    checked record equal to each of its own, where one exists; False where a record is invalid.

    A training step repeats a few kernel shapes over its layers, micro-batches and GPUs; sharing
    their records keeps tens of thousands of equal tuples from living on, which the garbage
    collector would otherwise walk again and again (a 3D-parallel lesson ran ~25 % slower), and a
    record already checked (the same object: a default, or one a kernel was built from) is not
    checked again. Each record is checked before it is looked up, so a shared record is always a
    valid one and a value merely equal to a checked one (2.0 for the integer 2) is still refused.
    Raises TypeError where a record's field has a wrong type or does not hash.

    Spelt out record by record, each shared one set through its slot (a cold training step builds
    ~700 records: a loop over the four, by name, cost a tenth of its build).
    """
    works, accesses, libraries, issues = _SHARED_IDS
    record: Any = kernel.work
    if id(record) not in works:
        if not _good_work(record):
            return False
        shared = _shared(0, record)
        if shared is not record:
            _SET_WORK(kernel, shared)
    record = kernel.access
    if id(record) not in accesses:
        if not _good_access(record):
            return False
        shared = _shared(1, record)
        if shared is not record:
            _SET_ACCESS(kernel, shared)
    record = kernel.library
    if id(record) not in libraries:
        if not _good_library(record):
            return False
        shared = _shared(2, record)
        if shared is not record:
            _SET_LIBRARY(kernel, shared)
    record = kernel.issue
    if id(record) not in issues:
        if not _good_issue(record):
            return False
        shared = _shared(3, record)
        if shared is not record:
            _SET_ISSUE(kernel, shared)
    return True


def _good_place(kernel: Kernel) -> bool:
    """The place fields valid, and the one rule between two records (on every kernel, shared or not)."""
    work = kernel.work
    return (
        kernel.access.cold_bytes <= work.bytes_read + work.bytes_written
        and type(kernel.stream) is int
        and kernel.stream >= 0
        and type(kernel.device) is int
        and kernel.device >= HOST
        and type(kernel.name) is str
        and type(kernel.layer) is str
        and type(kernel.phase) is str
        and type(kernel.part) is str
    )


def _explain(kernel: Kernel) -> None:
    """Raise the first rule ``kernel`` breaks, naming the kernel and the field."""
    what = f"kernel {kernel.name!r}"
    explain(kernel, _PLACE_RULES, what)
    for part, cls in PARTS.items():
        record = getattr(kernel, part)
        if type(record) is not cls:
            raise ParsimError(f"{what}: {field_error(part, f'a {cls.__name__}', record)}")
        for field, validate in _RULES[cls].items():
            try:
                validate(record, _Field(field), getattr(record, field))
            except ParsimError as exc:
                raise ParsimError(f"{what}: {exc}") from None
    if kernel.access.cold_bytes > kernel.work.bytes_read + kernel.work.bytes_written:
        bound = field_error("cold_bytes", "<= bytes_read + bytes_written", kernel.access.cold_bytes)
        raise ParsimError(f"{what}: {bound}")
    raise ParsimError(f"{what}: invalid")  # the checks and the rules disagree: a bug in this module


def _fields(kernel: Kernel, name: str, device: int, layer: str) -> tuple[Any, ...]:
    """``kernel``'s fields in order, its name, device and layer replaced."""
    return (
        name,
        kernel.work,
        kernel.stream,
        device,
        layer,
        kernel.access,
        kernel.library,
        kernel.issue,
        kernel.phase,
        kernel.part,
    )


_new = object.__new__


def _checked_copy(kernel: Kernel, name: str, device: int, layer: str) -> Kernel:
    """A copy of the valid ``kernel`` with a valid name, device and layer: its slots set as the
    attrs constructor sets them, without checking again what its checks passed (a training step
    relabels ~500 kernels per GPU, a data-parallel one places them on every GPU: the constructor
    cost three times as much as the copy). Each slot is set through its own descriptor, spelt
    out (``_SLOT_SETTERS``: a loop over the fields took twice as long)."""
    new = _new(Kernel)
    set_name, set_work, set_stream, set_device, set_layer, set_access = _SLOT_SETTERS[:6]
    set_library, set_issue, set_phase, set_part, set_hash = _SLOT_SETTERS[6:]
    set_name(new, name)
    set_work(new, kernel.work)
    set_stream(new, kernel.stream)
    set_device(new, device)
    set_layer(new, layer)
    set_access(new, kernel.access)
    set_library(new, kernel.library)
    set_issue(new, kernel.issue)
    set_phase(new, kernel.phase)
    set_part(new, kernel.part)
    set_hash(new, None)
    return new


@attrs.frozen(cache_hash=True)
class Kernel:
    """One launch of data-parallel work (see the module's docstring for its records).

    Attributes:
        name: label shown in the timeline (``"relu"``, ``"matmul 4096x4096x4096"``).
        work: what the roofline weighs (``Work``).
        stream: stream the host enqueues it on.
        device: GPU index that runs it, or ``HOST`` (-1) for work the host CPU does itself.
        layer: network layer it belongs to (for per-layer breakdowns), or empty.
        access: how its bytes reach the cores (``Access``).
        library: what the kernel library chooses from (``LibraryHints``).
        issue: what the host pays to issue it (``Issue``).
        phase: the part of its workload's instance it belongs to, where the workload's figures
            tell them apart (an LLM request's ``prefill`` and ``decode``, a training step's
            ``recompute``: a forward pass run again, not model FLOPs); empty otherwise. Never
            read from the name: the name is for people.
        part: what the kernel computes within its layer, where a workload's own rules ask (a
            linear layer's GEMMs: ``qkv``, ``out``, ``gate``, ``up``, ``down``; ``attention core``;
            ``cast weights``), empty otherwise; like ``phase``, never read from the name.
    """

    name: str
    work: Work
    stream: int = 0
    device: int = 0
    layer: str = ""
    access: Access = PLAIN_ACCESS
    library: LibraryHints = NO_LIBRARY_HINTS
    issue: Issue = PLAIN_ISSUE
    phase: str = ""
    part: str = ""

    def __attrs_post_init__(self) -> None:
        try:  # checked records (a kernel moved or renamed) pass at once: then only its place
            good = _share_records(self) and _good_place(self)
        except TypeError:
            good = False
        if not good:
            _explain(self)

    @classmethod
    def of(
        cls,
        name: str,
        flops: float,
        bytes_read: float,
        bytes_written: float,
        work_items: int,
        *,
        stream: int = 0,
        device: int = 0,
        layer: str = "",
        phase: str = "",
        part: str = "",
        dtype: str = "float32",
        matrix: bool = False,
        special_ops: float = 0.0,
        op: str = "",
        int_ops: float = 0.0,
        cold_bytes: float = 0.0,
        thread_loads_B: float = 0.0,
        reuse_B: float = 0.0,
        bandwidth_share: float = 1.0,
        core_in_flight_B: float = 0.0,
        gemm_mn: tuple[int, int] | None = None,
        conv: ConvShape | None = None,
        math: str = "",
        foldable: bool = False,
        reorder_B: float = 0.0,
        cpu_library: str = "",
        nchw_B: float = 0.0,
        fused_attention: str = "",
        sign_test: bool = False,
        frequency_domain: bool = False,
        python_ops_per_item: float = 1.0,
        primitive: bool = False,
        multi_tensor: bool = False,
        python_loop: str = "",
        in_library_call: bool = False,
        launches: int = 1,
        host_waits: bool = False,
        graph_node: bool = False,
    ) -> Kernel:
        """A kernel from its facts given flat, each filed into its record: what a builder writes,
        and a workload's size-dependent quantities (``Vectorised.kernel``) as they are. Spelled
        out rather than routed by name, so a misspelt fact fails type checking and the thousands
        of kernels of a training step are built at the cost of the records themselves."""
        # most kernels leave a record at its defaults and share the one default record (a tuple
        # compares in C; a wrong value differs from the defaults, so it is still refused)
        access = (cold_bytes, thread_loads_B, reuse_B, bandwidth_share, core_in_flight_B)
        library = (
            gemm_mn,
            conv,
            math,
            foldable,
            reorder_B,
            cpu_library,
            nchw_B,
            fused_attention,
            sign_test,
            frequency_domain,
        )
        issue = (
            python_ops_per_item,
            primitive,
            multi_tensor,
            python_loop,
            in_library_call,
            launches,
            host_waits,
            graph_node,
        )
        return cls(
            name,
            Work(flops, bytes_read, bytes_written, work_items, dtype, matrix, special_ops, op, int_ops),
            stream,
            device,
            layer,
            PLAIN_ACCESS if access == PLAIN_ACCESS else Access(*access),
            NO_LIBRARY_HINTS if library == NO_LIBRARY_HINTS else LibraryHints(*library),
            PLAIN_ISSUE if issue == PLAIN_ISSUE else Issue(*issue),
            phase,
            part,
        )

    def but(self, **changes: Any) -> Kernel:
        """This kernel with some facts changed, named flat as in ``of`` (or its name and place)."""
        parts: dict[str, dict[str, Any]] = {}
        own = {}
        for fact, value in changes.items():
            if fact in _PART_OF:
                parts.setdefault(_PART_OF[fact], {})[fact] = value
            elif fact in _PLACE_RULES:
                own[fact] = value
            else:
                raise TypeError(f"Kernel.but() got an unexpected keyword argument {fact!r}")
        for part, values in parts.items():  # ``_replace``, without its keyword round trip
            record = getattr(self, part)
            fields = list(record)
            for fact, value in values.items():
                fields[_POSITION[fact]] = value
            own[part] = _record(type(record), fields)
        get = own.get  # the constructor itself, not attrs.evolve: a training step makes thousands
        return Kernel(
            get("name", self.name),
            get("work", self.work),
            get("stream", self.stream),
            get("device", self.device),
            get("layer", self.layer),
            get("access", self.access),
            get("library", self.library),
            get("issue", self.issue),
            get("phase", self.phase),
            get("part", self.part),
        )

    def on_device(self, device: int) -> Kernel:
        """This kernel on GPU ``device`` (its records shared: only the index is checked)."""
        if type(device) is not int or device < HOST:
            return Kernel(*_fields(self, self.name, device, self.layer))  # refused, naming the field
        return _checked_copy(self, self.name, device, self.layer)

    def relabelled(self, name: str, layer: str) -> Kernel:
        """This kernel under another name and layer (its records and place kept: only the two
        labels are checked): a network's layers of one shape share one shape's kernels."""
        if type(name) is not str or type(layer) is not str:
            return Kernel(*_fields(self, name, self.device, layer))  # refused, naming the field
        return _checked_copy(self, name, self.device, layer)

    def cost_key(self) -> tuple[Work, Access, LibraryHints, Issue]:
        """All that the kernel's timing depends on: its four records (not its name or place)."""
        return (self.work, self.access, self.library, self.issue)

    @staticmethod
    def anonymous(cost_key: tuple[Work, Access, LibraryHints, Issue]) -> Kernel:
        """A kernel with these costs and none of the fields that only label it (a timing cache key)."""
        work, access, library, issue = cost_key
        return Kernel("", work, access=access, library=library, issue=issue)

    @property
    def bytes(self) -> float:
        """Bytes moved to and from memory."""
        return self.work.bytes_read + self.work.bytes_written

    @property
    def working_set_B(self) -> float:
        """Bytes a cache must hold to serve the kernel warm: its own warm bytes, or more where the
        program touches more between two uses of them (``reuse_B``: a least-recently-used cache
        keeps data only while what is touched after it fits). Decides which level serves them."""
        return max(self.bytes - self.access.cold_bytes, self.access.reuse_B)

    @property
    def intensity(self) -> float:
        """Arithmetic intensity in FLOP per byte (the roofline's x axis)."""
        return self.work.flops / self.bytes if self.bytes else float("inf")


_FIELD_NAMES = tuple(field.name for field in attrs.fields(Kernel))
"""``Kernel``'s slots, in the order ``_fields`` gives their values."""

_COPIED = ("name", "work", "stream", "device", "layer", "access", "library", "issue", "phase", "part")
if _FIELD_NAMES != _COPIED:  # a new field would be left unset by the copy: say so at import
    raise RuntimeError(f"Kernel's fields {_FIELD_NAMES} are not the ones _checked_copy sets: {_COPIED}")
_SLOT_SETTERS = tuple(Kernel.__dict__[slot].__set__ for slot in (*_COPIED, "_attrs_cached_hash"))
"""The setter of each slot ``_checked_copy`` fills, in its order (a frozen class's slots are set
through their descriptors, as ``object.__setattr__`` does)."""
_SET_WORK, _SET_ACCESS, _SET_LIBRARY, _SET_ISSUE = (Kernel.__dict__[slot].__set__ for slot in PARTS)
"""The setters of the four record slots (``_share_records``)."""
