"""The fast paths and caches of issue 28 item 4 give what the slow paths give, and their keys part
inputs that differ (a wrong cache hit would be a wrong prediction)."""

import math

import attrs
import pytest

from parsim.base import caching
from parsim.hardware import registry
from parsim.model import library, rates
from parsim.model.kernel import choose, shape
from parsim.model.library import lower
from parsim.workloads import make_workload
from parsim.workloads.base import Kernel

DEVICES = ["h100-sxm", "v100-pcie", "t4", "a100-80gb", "mi300x", "tpu-v5e", "xeon-e5-2630v3"]


def _slow_gemm_tiling(spec, ex, kernel):
    """``gemm_tiling`` as it was written before its loop was inlined (the reference)."""
    m, n = kernel.library.gemm_mn
    k = kernel.work.flops / (2.0 * m * n)
    slots = ex.cores * ex.tiles_per_core
    lib = library.library_of(spec, kernel.library.cpu_library)
    tiles = lib.gemm_tiles if spec.is_accelerator else ()
    fitting = [tile for tile in tiles if max(tile) <= spec.matmul_tile]
    fitting = [(r, c) for r, c in fitting if r >= library.GEMV_ROWS or m < library.GEMV_ROWS]
    shapes = fitting or [(min(spec.matmul_tile, m), min(spec.matmul_tile, n))]
    if spec.systolic_array is not None:
        shapes = [(min(m, library.systolic.round_up(m / spec.cores, library.systolic.ROWS)), n)]
    best = None
    for rows, columns in shapes:
        outputs = math.ceil(m / rows) * math.ceil(n / columns)
        edge = min(rows, columns)
        split = max(1, min(slots // outputs, int(k // edge))) if outputs < slots else 1
        shared = library.stream_k(spec, ex, kernel)
        waves = outputs * split / slots if shared else math.ceil(outputs * split / slots)
        seconds = waves * library.tile_seconds(kernel, ex, rows, columns, split, spec)
        if best is None or seconds < best[0] * (1 - library.CLEARLY_FASTER):
            best = (seconds, library.Tiling(rows, columns, split, outputs))
    return best[1]


def _gemm_kernels(device):
    system = registry.system(device, None, None, 1, None)
    kernels = []
    for name, params in [
        ("network", {"model": "resnet50", "batch": 8, "train": True}),
        ("matmul", {"m": 35, "n": 8457, "k": 2560}),
        ("matmul", {"m": 7, "n": 4096, "k": 4096}),
        ("matmul", {"m": 4096, "n": 4096, "k": 4096, "dtype": "float16"}),
    ]:
        workload = lower(make_workload(name, params), system)
        kernels += [op for op in workload.ops if isinstance(op, Kernel) and op.library.gemm_mn is not None]
    return system.compute, list(dict.fromkeys(shape(k) for k in kernels))


@pytest.mark.parametrize("device", DEVICES)
def test_gemm_tiling_is_the_reference_s(device):
    spec, kernels = _gemm_kernels(device)
    mode = "simt" if spec.is_accelerator else "mimd+simd"
    for kernel in kernels:
        runs = choose(spec, mode, "roofline", kernel)[1]
        if runs.library.gemm_mn is None:
            continue
        ex = rates.execution(spec, mode, runs)
        assert library.gemm_tiling.__wrapped__(spec, ex, runs) == _slow_gemm_tiling(spec, ex, runs)


def test_tile_shapes_part_specs_libraries_and_thin_products():
    caching.clear_caches()
    spec = registry.processor("h100-sxm")
    small = attrs.evolve(spec, matmul_tile=64)
    wide = library._tile_shapes(spec, "", False)
    assert library._tile_shapes(small, "", False) != wide  # a spec's own tile limit
    assert all(max(tile) <= 64 for tile in library._tile_shapes(small, "", False))
    assert library._tile_shapes(spec, "", True) != wide  # matrix-vector tiles for thin products
    assert library._tile_shapes(registry.processor("xeon-e5-2630v3"), "", False) == ()


@pytest.mark.parametrize("device", DEVICES)
def test_one_kernel_s_stream_and_level_are_the_vectorised_ones(device):
    """The scalar paths of ``Level.stream_s`` and ``memory.level`` against the array paths (the
    formulas as written), element by element, to the bit."""
    import numpy

    from parsim.model import memory

    spec = registry.processor(device)
    rng = numpy.random.default_rng(7)
    count = 400
    sizes = numpy.concatenate([[0.0, 1.0], 10 ** rng.uniform(0, 11, count - 2)])
    cold = numpy.concatenate([[0.0, 1.0], rng.uniform(0, 1, count - 2)])
    cores = rng.integers(1, spec.cores + 1, count).astype(float)
    items = numpy.floor(sizes / 4) + 1
    loads = rng.choice([0.0, 4.0, 8.0, 12.0], count)
    share = rng.choice([1.0, 0.5, 0.9], count)
    in_flight = rng.choice([0.0, 0.0, 4096.0, 65536.0], count)
    for busy in (1, spec.cores):
        levels = memory.level(spec, busy, sizes)  # arrays: the formulas as written
        bandwidth, core, main = (
            numpy.broadcast_to(part, sizes.shape)  # a device without caches keeps one number
            for part in (levels.bandwidth_Bps, levels.core_bandwidth_Bps, levels.main)
        )
        for i, size in enumerate(sizes):
            one = memory.level(spec, busy, float(size))
            assert (one.bandwidth_Bps, one.core_bandwidth_Bps, one.main) == (bandwidth[i], core[i], main[i])
    for served in (memory.level(spec, spec.cores, 1.0), memory.level(spec, spec.cores, 1e12)):
        array = served.stream_s(spec, sizes, cold, cores, items, loads, share, in_flight)
        for i in range(count):
            args = (float(sizes[i]), float(cold[i]), float(cores[i]), float(items[i]))
            one = served.stream_s(spec, *args, float(loads[i]), float(share[i]), float(in_flight[i]))
            assert one == array[i]


def test_a_relabelled_or_moved_kernel_is_the_one_the_constructor_makes():
    from parsim.workloads.kernel import _fields

    workload = make_workload("network", {"model": "resnet18", "batch": 2, "train": True})
    for kernel in [op for op in workload.ops if isinstance(op, Kernel)][:50]:
        for copy, (name, device, layer) in (
            (kernel.relabelled("renamed", "a layer"), ("renamed", kernel.device, "a layer")),
            (kernel.on_device(3), (kernel.name, 3, kernel.layer)),
        ):
            built = Kernel(*_fields(kernel, name, device, layer))
            assert attrs.astuple(copy, recurse=False) == attrs.astuple(built, recurse=False)
            assert copy == built and hash(copy) == hash(built) and copy.work is kernel.work


def test_prediction_but_is_evolve():
    import parsim
    from parsim.workloads.records import Scaling

    full = parsim.predict("network", {"model": "resnet18", "batch": 2, "train": True}, device="t4")
    scaling = Scaling(speedup=1.5, efficiency=0.75, serial_fraction=0.1, single_gpu_latency_s=1.0)
    for changes in (
        {"memory": None},
        {"trace": ()},
        {"notes": [*full.notes, "one more"]},
        {"records": (*full.records, scaling), "notes": ("x",)},
        {"layers": [{"name": "a", "algorithms": {"fwd": "gemm"}}], "params": {"batch": [1, 2]}},
    ):
        fast, slow = full.but(**dict(changes)), attrs.evolve(full, **changes)
        assert all(getattr(fast, f.name) == getattr(slow, f.name) for f in attrs.fields(type(full)))
        assert fast == slow and fast.metrics == slow.metrics and fast.to_dict() == slow.to_dict()
    with pytest.raises(TypeError):
        full.but(metrics={})


def test_model_layers_are_each_model_s_own():
    from parsim.workloads.models import MODELS, model_layers

    caching.clear_caches()
    for name, build in MODELS.items():
        assert model_layers(name) == tuple(build())
        assert all(isinstance(layer.in_shape, tuple) for layer in model_layers(name))  # frozen all through
    assert model_layers("resnet18") != model_layers("resnet50")


def _reference_segments_and_needs(workload, cpu_only, repeats):
    """The engine's chains and waits as ``_simulate`` found them over every instance's ops (before
    it repeated the first instance's)."""
    from parsim.methods.engine.program import HOST
    from parsim.workloads.base import stream_predecessors, thread_of

    n = len(workload.ops)
    ops = list(workload.ops) * repeats
    deps = [tuple(d + r * n for d in od) if r and od else od for r in range(repeats) for od in workload.deps]
    previous = stream_predecessors(ops)
    streams = {}
    for op in ops:
        streams.setdefault(op.device, set()).add(op.stream)
    single = {device for device, used in streams.items() if len(used) == 1}
    awaited = {d for od in deps for d in od}
    threads = {}
    for index, op in enumerate(ops):
        threads.setdefault(thread_of(op), []).append(index)
    segments = {}
    for thread, mine in threads.items():
        chains, current, last = [], [], False
        for index in mine:
            op = ops[index]
            chainable = isinstance(op, Kernel) and (cpu_only or op.device != HOST) and op.device in single
            if (
                chainable
                and last
                and ops[current[-1]].device == op.device
                and current[-1] == index - 1
                and current[-1] not in awaited
                and not deps[index]
                and index % n
            ):
                current.append(index)
            else:
                current = [index]
                chains.append(current)
            last = chainable
        segments[thread] = chains
    needs = {}
    for chains in segments.values():
        for first, *_ in chains:
            before = previous[first]
            needs[first] = [*deps[first], *([before] if before is not None else [])]
    return segments, needs


@pytest.mark.parametrize(
    ("name", "params", "device"),
    [
        ("network", {"model": "resnet18", "batch": 2, "train": True}, "t4"),
        ("data_parallel", {"model": "resnet18", "batch": 16, "gpus": 4, "sync": "host"}, "v100-pcie"),
        ("data_parallel", {"model": "resnet18", "batch": 16, "gpus": 2, "sync": "ring"}, "v100-sxm2"),
        ("offload", {"op": "relu", "n": 1000}, "v100-pcie"),
        ("mlp_train_step", {}, "h100-sxm"),
        ("network", {"model": "mlp", "batch": 4, "train": True}, "xeon-e5-2630v3"),
    ],
)
def test_each_instance_repeats_the_first_ones_chains_and_waits(name, params, device):
    from parsim.methods.engine import program as engine_program
    from parsim.methods.predict import split_over_gpus

    system = registry.system(device, None, None, params.get("gpus", 1), None)
    workload = make_workload(name, params)
    if workload.gpus != system.gpus:
        workload = split_over_gpus(workload, system.gpus, None, "")
    workload = lower(workload, system)
    cpu_only = system.device is None
    for repeats in (1, 2, 3):
        expected = _reference_segments_and_needs(workload, cpu_only, repeats)
        assert engine_program._segments_and_needs(workload, cpu_only, repeats) == expected


def test_spaced_collection_restores_the_thresholds_and_still_collects():
    import gc
    import weakref

    from parsim.base import collector

    found = gc.get_threshold()
    with collector.spaced():
        assert gc.get_threshold()[0] == max(found[0], collector.YOUNG_EVERY) and gc.isenabled()
        with collector.spaced():  # nested: one spacing, restored by the outermost only
            assert gc.get_threshold()[0] == max(found[0], collector.YOUNG_EVERY)
        assert gc.get_threshold()[0] == max(found[0], collector.YOUNG_EVERY)
        probe: list = []

        class Cycle:
            pass

        def garbage():
            first, second = Cycle(), Cycle()
            first.other, second.other = second, first
            return weakref.ref(first)

        weak = garbage()
        for _ in range(3 * collector.YOUNG_EVERY):  # net new objects: the young generation fills
            probe = [probe]
        assert weak() is None  # cyclic garbage is still collected while spaced
    assert gc.get_threshold() == found
    with pytest.raises(RuntimeError), collector.spaced():
        raise RuntimeError
    assert gc.get_threshold() == found


def _rate_kernels() -> list[Kernel]:
    """Kernels of every kind the rates tell apart: GEMMs and convolutions (TF32, float16, int8), a
    thin product, FFT candidates, element-wise ops with a measured op, attention, a sign test."""
    kernels = []
    for name, params in [
        ("network", {"model": "resnet50", "batch": 4, "train": True}),
        ("network", {"model": "resnet18", "batch": 2, "train": True, "dtype": "float16"}),
        ("matmul", {"m": 35, "n": 8457, "k": 2560, "dtype": "float16"}),
        ("vector_add", {"n": 1e6}),
    ]:
        kernels += [op for op in make_workload(name, params).ops if isinstance(op, Kernel)]
    kernels = list(dict.fromkeys(shape(k) for k in kernels))
    extra = []
    for kernel in kernels[:40]:
        extra.append(kernel.but(frequency_domain=True, matrix=False))
        extra.append(kernel.but(fused_attention="flash", math="tf32"))
        extra.append(kernel.but(sign_test=True, op="maximum"))
        extra.append(kernel.but(math="int8", matrix=True))
    return kernels + extra


@pytest.mark.parametrize("device", DEVICES)
def test_fast_execution_is_the_general_one(device):
    """``rates._fast_execution`` (per-mode reads looked up once) gives ``rates._execution``'s rates
    to the bit, in every mode the device has, and the per-mode table keys on the mode and the spec."""
    from parsim.model.modes import MODES

    spec = registry.processor(device)
    modes = [m for m in MODES if m != "simt" or spec.is_gpu]
    for mode in modes:
        for kernel in _rate_kernels():
            general = rates._execution(spec, mode, kernel, None)
            assert rates._execution_of.__wrapped__(spec, mode, kernel) == general
            if not rates._serial_sign_test_rate(spec, kernel):
                assert rates._fast_execution(spec, mode, kernel) == general
    caching.clear_caches()
    other = attrs.evolve(spec, special_per_core_per_cycle=spec.special_per_core_per_cycle * 2)
    assert rates._mode_rates(spec, modes[-1]) != rates._mode_rates(other, modes[-1])
    if len(modes) > 1:
        assert rates._mode_rates(spec, modes[0]) != rates._mode_rates(spec, modes[-1])


def test_workload_hash_keys_on_everything_but_each_op():
    """Equal workloads hash equal (two builds, a pickled copy); workloads that differ only inside
    their ops hash alike but stay two cache entries with their own figures."""
    import pickle

    from parsim.hardware.registry import system
    from parsim.methods.program import timing

    params = {"model": "resnet18", "batch": 2, "train": True}
    built, again = make_workload("network", params), make_workload("network", params)
    caching.clear_caches()
    rebuilt = make_workload("network", params)
    assert built == rebuilt and hash(built) == hash(rebuilt) == hash(again)
    assert hash(pickle.loads(pickle.dumps(built))) == hash(built)
    assert hash(make_workload("network", {**params, "batch": 4})) != hash(built)
    ops = list(built.ops)
    middle = len(ops) // 2
    heavier = ops[middle].but(flops=ops[middle].work.flops * 100 + 1e12)
    changed = attrs.evolve(built, ops=(*ops[:middle], heavier, *ops[middle + 1 :]))
    assert changed != built and hash(changed) == hash(built)  # one bucket, two entries
    where = system("v100-sxm2", None, None, 1, None)
    first, second = (timing(w, where, "simt", "engine", "roofline") for w in (built, changed))
    assert second[1] > first[1]
    assert timing(built, where, "simt", "engine", "roofline") == first


def test_a_prediction_pauses_the_collector_and_leaves_it_as_found():
    """``predict`` runs with the cyclic collector off and turns it back on only where it was on,
    after a refused request too; the figures are the same with the collector on throughout."""
    import gc

    import parsim
    from parsim.base.errors import ParsimError
    from parsim.methods import predict as predicting

    seen: list[bool] = []
    original = predicting._predict_request

    def spy(*args, **kwargs):
        seen.append(gc.isenabled())
        return original(*args, **kwargs)

    params = {"model": "resnet18", "batch": 2, "train": True}
    caching.clear_caches()
    try:
        predicting._predict_request = spy
        paused = parsim.predict("network", params, device="t4")
    finally:
        predicting._predict_request = original
    assert seen == [False] and gc.isenabled()
    with pytest.raises(ParsimError):
        parsim.predict("network", {**params, "batch": 0}, device="t4")
    assert gc.isenabled()
    gc.disable()
    try:
        parsim.predict("matmul", {"m": 64, "n": 64, "k": 64}, device="t4")
        assert not gc.isenabled()
    finally:
        gc.enable()
    caching.clear_caches()  # the same request with the collector on throughout
    request = ("t4", None, None, None, None, "engine", "roofline", None, None, None)
    collected = original("network", {**params, "framework": "eager"}, *request)
    assert gc.isenabled()
    assert collected.to_dict() == paused.to_dict()
    assert [repr(event) for event in collected.trace] == [repr(event) for event in paused.trace]
