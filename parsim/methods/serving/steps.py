"""What one serving iteration costs, from parsim's own model of ``llm_serve`` — no profiling.

``llm_serve`` predicts a program of a prefill and one decode step (``workloads.serving``); with
``output=2`` its decode step attends over exactly ``prompt`` cached tokens. So one prediction at
``(batch=B, prompt=c)`` prices a decode step of B requests at c cached tokens each, and one at
``(batch=1, prompt=N)`` a prefill of N tokens. An iteration of a serving simulation is priced from
a few such predictions, cached:

- prefill of N tokens: predicted at grid points (1, 2, 3, 4, 6, 8, 12, ... : powers of two and
  1.5 times them) and interpolated linearly between them, so a prompt on the grid (512) is priced
  exactly as ``llm_serve`` prices it; beyond the model's context (several prompts in one step)
  it scales with N from the longest single prefill (prompts of one step are priced as one
  sequence: their attention is a small part of a prefill);
- decode of B requests over C cached tokens: every kernel but attention is the same whatever the
  context and attention's bytes grow linearly with it, so the step is affine in the mean context
  c = C / B: a(B) + s(B) c, a and s from two predictions per grid batch (contexts ``LOW`` and
  ``HIGH``), linear in B between grid batches;
- a step mixing prompt tokens with decodes (chunked prefill): the decodes' rows join the prefill's
  GEMMs, which read the weights once, so the step is the prefill of N + B tokens plus the decodes'
  attention over their context, s(B) c.

A decode-only step of a serving engine is then shaped by the engine's loop
(``ModelSteps.engine_decode_s``): eager launches above its CUDA-graph batch, and an overlap
scheduler's host work run under the kernels.

A low load therefore reproduces ``llm_serve``: one request's first token comes after one prefill of
its prompt, and its decode steps average a + s (prompt + (output - 2) / 2), ``llm_serve``'s mean step.

Each prediction is ``llm_serve``'s traced latency run alone (``program.trace_lowered``): a step's
price is when its phases end, so the throughput run of a full prediction (three more instances back
to back), its breakdown and layer rows would be thrown away. A size on a grid point is priced from
that point's predictions only.

The predictions are of the step's program alone: whether its KV cache fits is the simulation's
paged-block accounting (``kv_blocks``), not the program's footprint check.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from typing import Any

import attrs

from parsim import stack
from parsim.base.errors import ParsimError
from parsim.hardware import registry
from parsim.hardware.specs import SystemSpec
from parsim.methods.program import trace_lowered
from parsim.model import footprint
from parsim.model.transfer import transfer_s
from parsim.results.serving_figures import trace_phase_ends
from parsim.workloads.llms import kv_cache_bytes, llm
from parsim.workloads.registry import make_workload, validate_params
from parsim.workloads.serving import NAME as SERVE
from parsim.workloads.serving import kv_type, memory_needs

LOW, HIGH = 16, 1024
"""The two contexts (cached tokens per request) each grid batch's decode step is predicted at."""
STEP_NAME = "llm_step"
"""The name a priced step's program runs under (no workload's hooks or footprint check apply)."""
GIL_SWITCH_S = 0.005
"""CPython's switch interval (``sys.getswitchinterval()``, 5 ms by default): how long a thread that
wants the interpreter lock waits before the one holding it is asked to drop it."""


def grid(most: int) -> list[int]:
    """1, 2, 3, 4, 6, 8, 12, 16, ... (powers of two and 1.5 times them) up to ``most``, and ``most``."""
    points, power = [1], 2
    while power < most:
        points += [p for p in (power, power * 3 // 2) if p < most]
        power *= 2
    return sorted(set(points + [most]))


def _between(points: list[int], x: float) -> tuple[int, int, float]:
    """The grid points around ``x`` and ``x``'s weight on the upper one (extrapolating past the ends);
    ``x`` on a grid point is that point alone, weight 0: its neighbour below would get weight
    0 and cost a prediction for nothing (0 * y + z is z, so the price is the same)."""
    k = min(max(bisect.bisect_left(points, x), 1), len(points) - 1)
    lo, hi = points[k - 1], points[k]
    if x == hi:
        return hi, hi, 0.0
    return lo, hi, (x - lo) / (hi - lo)


class ModelSteps:
    """A ``StepTime`` for one model on one system, priced by ``predict`` (see the module docstring).

    Args:
        params: ``llm_serve`` parameters but the batch, prompt and output (model, dtype, weights,
            kv_dtype, gpus, attention, framework).
        device, host, link: the system, as ``predict`` takes them.
        method: ``engine`` or ``analytic``.
        max_batch: the largest decode batch the grid covers (larger ones extrapolate).
    """

    def __init__(
        self,
        params: dict[str, Any],
        device: str,
        *,
        host: str | None = None,
        link: str | None = None,
        method: str = "engine",
        max_batch: int = 256,
    ) -> None:
        fixed = {k: v for k, v in params.items() if k not in ("batch", "prompt", "output")}
        self.params, self.method = fixed, method
        self.device, self.host, self.link = device, host, link
        # the validated parameters name the model: building a program for it would be wasted
        valid = validate_params(SERVE, {**fixed, "prompt": 1, "output": 2})
        self.context = llm(str(valid["model"])).context
        self.engine = stack.framework(str(valid["framework"]))
        self.clock_Hz = registry.system(device, host, link, int(valid["gpus"])).host.framework_clock_Hz
        self.longest = self.context - 2  # llm_serve's prompt + output=2 stays within the context
        self.prompts = grid(self.longest)
        self.batches = grid(max(2, min(max_batch, 4096)))
        self.high = min(HIGH, self.longest)
        self._phases: dict[tuple[int, int], tuple[float, float]] = {}
        self._lines: dict[int, tuple[float, float]] = {}  # per batch: the interpolated line
        self._prefills: dict[int, float] = {}  # per prompt tokens
        self.predictions = 0

    def phases(self, batch: int, prompt: int) -> tuple[float, float]:
        """``llm_serve``'s prefill and decode step at ``batch`` and ``prompt`` (output 2), in seconds."""
        key = (batch, prompt)
        if key not in self._phases:
            params = {**self.params, "batch": batch, "prompt": prompt, "output": 2}
            program = attrs.evolve(make_workload(SERVE, params), name=STEP_NAME, memory=None, footprint_B=0.0)
            system = registry.system(self.device, self.host, self.link, program.gpus)
            # the latency run alone: a step's price is when its phases end, not a throughput
            ends = trace_phase_ends(trace_lowered(program, system, self.method))
            self._phases[key] = (ends["prefill"], ends["decode"] - ends["prefill"])
            self.predictions += 1
        return self._phases[key]

    def prefill_s(self, tokens: int) -> float:
        """One prefill of ``tokens`` prompt tokens."""
        seconds = self._prefills.get(tokens)
        if seconds is None:
            seconds = self._prefills[tokens] = self._prefill(tokens)
        return seconds

    def _prefill(self, tokens: int) -> float:
        if tokens > self.longest:
            return self.phases(1, self.longest)[0] * tokens / self.longest
        lo, hi, w = _between(self.prompts, tokens)
        return (1 - w) * self.phases(1, lo)[0] + w * self.phases(1, hi)[0] if w else self.phases(1, lo)[0]

    def decode_line(self, batch: int) -> tuple[float, float]:
        """``(a, s)``: a decode step of ``batch`` requests at c cached tokens each takes a + s c."""
        line = self._lines.get(batch)
        if line is None:
            line = self._lines[batch] = self._line(batch)
        return line

    def _line(self, batch: int) -> tuple[float, float]:

        def at(b: int) -> tuple[float, float]:
            low, high = self.phases(b, LOW)[1], self.phases(b, self.high)[1]
            slope = (high - low) / (self.high - LOW)
            return low - slope * LOW, slope

        lo, hi, w = _between(self.batches, batch)
        if w == 0:
            return at(lo)
        (a0, s0), (a1, s1) = at(lo), at(hi)
        return (1 - w) * a0 + w * a1, (1 - w) * s0 + w * s1

    def decode_s(self, batch: int, context_tokens: int) -> float:
        """One decode step of ``batch`` requests over ``context_tokens`` cached tokens in all."""
        a, s = self.decode_line(batch)
        return a + s * context_tokens / batch

    def __call__(self, prefill_tokens: int, decode_batch: int, decode_context_tokens: int) -> float:
        if decode_batch == 0:
            return self.prefill_s(prefill_tokens)
        if prefill_tokens == 0:
            return self.engine_decode_s(self.decode_s(decode_batch, decode_context_tokens), decode_batch)
        _, s = self.decode_line(decode_batch)
        return self.prefill_s(prefill_tokens + decode_batch) + s * decode_context_tokens / decode_batch

    def engine_decode_s(self, priced_s: float, batch: int) -> float:
        """A decode-only step under load from ``llm_serve``'s price of it (``priced_s``: its kernels,
        then the engine's host work on its ``batch`` sequences, one after the other).

        An eager step (more sequences than the engine captured CUDA graphs for) adds the launches
        the GPU waits for (``FrameworkSpec.eager_step_s``). Under an overlap scheduler the host's
        work on one step's sequences runs while the next step's kernels do — SGLang 0.4's
        ``event_loop_overlap`` launches batch k + 1 before ``process_batch_result`` of batch k
        (sgl-project/sglang python/sglang/srt/managers/scheduler.py, Dec 2024) — so step after step
        the loop takes the longer of the two, not their sum; but the thread that launches the
        kernels shares the interpreter lock with the one doing that work, and waits for it up to
        CPython's switch interval (``GIL_SWITCH_S``): that much of the host work stays on the
        step's path (all of it for a few sequences, 5 ms of a large batch's). An eager step's
        launches are Python too, under the same lock, so a host-bound step takes the host's work on
        its sequences plus those launches.
        """
        eager = self.engine.eager_step_s(self.clock_Hz, batch)
        seconds = priced_s + eager
        if not self.engine.overlap_schedule:
            return seconds
        host = self.engine.serve_step_s(self.clock_Hz, batch)
        return max(seconds - host + min(host, GIL_SWITCH_S), host + eager)


def kv_blocks(params: dict[str, Any], system: SystemSpec, block: int, prefill_tokens: int) -> int:
    """KV-cache blocks of ``block`` tokens one replica's GPUs hold beside the weights, the runtime and
    the activations of a prefill of ``prefill_tokens`` tokens (what vLLM reserves by profiling one):
    the room ``model.footprint`` gives, less every part of ``llm_serve``'s needs but its cache. An
    engine that keeps a fixed share of the memory instead (``FrameworkSpec.static_memory``: SGLang)
    holds that share of the room less the weights.

    Raises:
        ParsimError: not even the weights and one prefill fit.
    """
    if system.device is None:
        raise ParsimError("serving under load needs a GPU device")
    model = llm(str(validate_params(SERVE, {**params, "prompt": 1, "output": 1})["model"]))
    prompt = min(prefill_tokens, model.context - 1)
    workload = make_workload(SERVE, {**params, "batch": 1, "prompt": prompt, "output": 1})
    values: dict[str, Any] = dict(workload.params)
    needs = memory_needs(model, values, 1)
    breakdown = footprint.breakdown(needs, system, True)
    share = stack.framework(str(values["framework"])).static_memory_fraction(int(values["gpus"]))
    if share is None:  # the room the weights, the prefill's activations and workspace leave
        room = breakdown.room_B - (needs.total_B - needs.kv_cache_B)
    else:  # the engine's share of the memory free at start (past the runtime), less the weights
        room = share * breakdown.room_B - needs.weights_B
    per_block = kv_cache_bytes(model, 1, block, kv_type(values)) / float(values["gpus"])
    blocks = int(room // per_block)
    if blocks < 1:  # say what takes the memory and the way out: more GPUs per replica
        raise ParsimError(
            f"llm_load: {model.name}'s weights and a {prompt}-token prefill leave no room "
            f"for a KV cache on {system.device.id} ({breakdown.line()}); give each replica more "
            f"GPUs (gpus={2 * int(values['gpus'])}: tensor parallel)"
        )
    return blocks


def replica_system(
    params: dict[str, Any], device: str, host: str | None = None, link: str | None = None
) -> SystemSpec:
    """The system of one replica: ``gpus`` tensor-parallel GPUs of ``device``."""
    return registry.system(device, host, link, int(params.get("gpus", 1)))


def kv_transfer(
    params: dict[str, Any], device: str, host: str | None = None, link: str | None = None
) -> Callable[[int], float]:
    """Seconds the KV cache of a ``tokens``-token prompt takes from a prefill to a decode instance
    (``methods.serving.disagg``): each of the ``gpus`` GPUs copies its shard, bytes / gpus, to its
    peer at once, one uncontended copy (``model.transfer.transfer_s``) over the link two GPUs of the
    node talk over (``SystemSpec.ring_link``: NVLink on an SXM board, else PCIe)."""
    values: dict[str, Any] = dict(make_workload(SERVE, {**params, "prompt": 1, "output": 1}).params)
    model, gpus = llm(str(values["model"])), int(values["gpus"])
    pair = registry.system(device, host, link, 2).ring_link
    kv = kv_type(values)

    def seconds(tokens: int) -> float:
        return float(transfer_s(pair, kv_cache_bytes(model, 1, tokens, kv) / gpus))

    return seconds
