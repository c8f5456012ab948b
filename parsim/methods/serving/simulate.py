"""Requests under load, simulated: arrivals, a router, and each replica's scheduler as a SimPy process.

The engine's second level (DESIGN, "Requests under load"): where ``methods.engine`` composes the
kernels of one step, this composes steps into a server's life. One process replays the arrivals
and routes each request to a replica; one process per replica runs its scheduler
(``config.SCHEDULERS``): it picks the requests of the next iteration, asks the injected
``StepTime`` how long that iteration takes, waits that long, and advances every request in it.

Events scale with iterations, not with tokens x requests: an iteration is one SimPy timeout
whatever its batch, a whole static batch is one, and the per-request bookkeeping of an iteration
(tokens generated, tokens cached, KV blocks held) is a handful of NumPy operations on index arrays.
Decode-only steps that nothing can interrupt (no request ends, no request arrives, their blocks
fit) run as one timeout, each still priced at its own context: a decode-heavy load costs events
per change of the batch, not per token. An idle replica sleeps on an event the router triggers.

Nothing vanishes: each request ends finished (its first-token and finish times recorded) or
refused at arrival because its prompt and output exceed the whole KV cache of a replica;
``simulate`` checks that the two add up to the requests that arrived.
"""

from __future__ import annotations

import collections
from typing import Any

import attrs
import numpy as np
import numpy.typing as npt
import simpy

from parsim.methods.serving import reserve, static
from parsim.methods.serving.config import ServerConfig, StepTime
from parsim.workloads.requests import Floats, Ints, RequestStream

SAMPLE_FIELDS = ("time_s", "waiting", "running", "kv_blocks", "replica")


@attrs.frozen(eq=False)
class Outcome:
    """What happened to every request (NaN times: refused), and the replicas' state over time.

    ``samples`` rows are ``SAMPLE_FIELDS``: taken at each arrival and at the start of each
    iteration (after admission), per replica. ``steps`` rows are (requests in each step, seconds,
    steps) per event: a static batch or a run of decode steps is one row.
    """

    stream: RequestStream
    config: ServerConfig
    first_token_s: Floats
    finish_s: Floats
    admitted_s: Floats
    preemptions: Ints
    refused: npt.NDArray[np.bool_]
    samples: Floats
    steps: Floats
    gaps: Floats | None = None
    """Inter-token gaps as (seconds, count) rows: every gap between two tokens a request streamed
    (continuous and chunked schedulers; None for the others)."""


class _Replica:
    """One copy of the model: its queue, running requests (admission order) and free KV blocks."""

    def __init__(self, sim: _Simulation, index: int) -> None:
        self.sim, self.index = sim, index
        self.waiting: collections.deque[int] = collections.deque()
        self.running = np.empty(0, dtype=np.int64)
        self.free = sim.config.kv_blocks
        self.wake: simpy.Event | None = None
        self.pending: collections.deque[int] = collections.deque()  # arrived, unseen (overlap)
        self.last_start: float | None = None  # the step in flight's start (overlap); None: idle
        self.reservation = reserve.Reservation()  # admission="reserve" (SGLang's) state

    def load(self) -> int:
        return len(self.waiting) + len(self.pending) + self.running.size

    def arrive(self, request: int) -> None:
        (self.pending if self.sim.config.overlap else self.waiting).append(request)
        self.sim.sample(self)
        if self.wake is not None and not self.wake.triggered:
            self.wake.succeed()

    def reveal(self, arrival: Floats, now: float) -> None:
        """Overlap scheduling: the requests the pass that chose this step saw — those that arrived
        before the previous step began (every one when nothing was in flight)."""
        idle = self.last_start is None or (self.running.size == 0 and not self.waiting)
        cutoff = now if idle else self.last_start
        while self.pending and arrival[self.pending[0]] <= cutoff:
            self.waiting.append(self.pending.popleft())

    def sleep(self) -> simpy.Event:
        self.wake = self.sim.env.event()
        return self.wake


class _Simulation:
    def __init__(self, stream: RequestStream, config: ServerConfig, step_time: StepTime, fuse: bool) -> None:
        n = len(stream)
        self.stream, self.config, self.step_time = stream, config, step_time
        self.env = simpy.Environment()
        self.prompt = stream.prompt_tokens.astype(np.int64)
        self.output = stream.output_tokens.astype(np.int64)
        self.generated = np.zeros(n, dtype=np.int64)
        self.cached = config.prefix_hits(self.prompt)  # the prefix cache's hits (config)
        self.held = np.zeros(n, dtype=np.int64)
        self.prefill_left = self.prompt - self.cached
        self.first_token = np.full(n, np.nan)
        self.finish = np.full(n, np.nan)
        self.admitted = np.full(n, np.nan)
        self.preemptions = np.zeros(n, dtype=np.int64)
        whole = -(-(self.prompt + self.output) // config.block)
        self.refused = whole > config.kv_blocks
        self.replicas = [_Replica(self, r) for r in range(config.replicas)]
        self.sample_rows: list[tuple[float, int, int, int, int]] = []
        self.step_rows: list[tuple[int, float, int]] = []
        self.upcoming = 0.0  # the next arrival's time (inf after the last)
        self.fuse = fuse
        self.last_token = np.full(n, np.nan)  # when each request's latest token came out
        self.gap_rows: list[Floats] = []

    def sample(self, replica: _Replica) -> None:
        used = self.config.kv_blocks - replica.free
        self.sample_rows.append(
            (self.env.now, len(replica.waiting), replica.running.size, used, replica.index)
        )

    def arrivals(self) -> Any:
        env, config, arrival = self.env, self.config, self.stream.arrival_s
        for i in range(len(arrival)):
            self.upcoming = float(arrival[i])
            if arrival[i] > env.now:
                yield env.timeout(arrival[i] - env.now)
            if self.refused[i]:
                continue
            if config.router == "round_robin" or config.replicas == 1:
                target = self.replicas[i % config.replicas]
            else:
                target = min(self.replicas, key=_Replica.load)
            target.arrive(i)
        self.upcoming = np.inf

    # -- iteration-level schedulers (continuous, chunked) -------------------------------------

    def _admit(self, replica: _Replica, budget: int, whole: bool) -> list[int]:
        """Waiting requests, front first, whose prompt blocks fit, up to ``max_batch`` running and
        ``budget`` prompt tokens (``whole``: each prompt entirely; the first always may). With
        ``admission="reserve"`` also SGLang's look-ahead and ratio budget (``reserve``), except for
        a request alone on an idle replica (it fits the whole cache, or it was refused)."""
        config, tokens, state = self.config, 0, replica.reservation
        taken: list[int] = []
        ahead = config.admission == "reserve"
        if ahead and not state.open(replica.free * config.block, self._left(replica.running)):
            return taken
        while replica.waiting and replica.running.size + len(taken) < config.max_batch:
            i = replica.waiting[0]
            need = config.blocks(int(self.cached[i] + self.prefill_left[i]))
            if need > replica.free or tokens >= budget:
                state.full = ahead and need > replica.free
                break
            if whole and taken and tokens + self.prefill_left[i] > budget:
                break
            if ahead and (replica.running.size or taken) and not self._fits_ahead(replica, taken, i):
                state.full = True
                break
            replica.waiting.popleft()
            replica.free -= need
            self.held[i] = need
            if np.isnan(self.admitted[i]):
                self.admitted[i] = self.env.now
            taken.append(i)
            tokens += int(self.prefill_left[i])
            if ahead and not state.take(int(self.prefill_left[i]), int(self.output[i])):
                break
        return taken

    def _left(self, requests: np.ndarray) -> np.ndarray:
        """Tokens each of ``requests`` has still to generate."""
        left: np.ndarray = self.output[requests] - self.generated[requests]
        return left

    def _fits_ahead(self, replica: _Replica, taken: list[int], i: int) -> bool:
        """SGLang's look-ahead for request ``i`` beside the running and the ``taken`` requests."""
        members = np.concatenate([replica.running, np.array([*taken, i], dtype=np.int64)])
        room = replica.free * self.config.block - int(self.cached[i] + self.prefill_left[i])
        return reserve.fits(self._left(members), self.prompt[members] + self.generated[members], room)

    def _evict(self, replica: _Replica, victim: int, front: bool) -> None:
        """Take ``victim`` out of the running requests, free its blocks and queue it again (at the
        front or the back) to recompute its prompt and tokens so far."""
        replica.running = replica.running[replica.running != victim]
        replica.free += int(self.held[victim])
        self.held[victim], self.cached[victim] = 0, 0
        self.prefill_left[victim] = self.prompt[victim] + self.generated[victim]
        self.preemptions[victim] += 1
        (replica.waiting.appendleft if front else replica.waiting.append)(victim)

    def _preempt(self, replica: _Replica, decoding: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Free blocks for the decodes' next tokens: preempting the latest admitted as needed (vLLM),
        or with ``admission="reserve"`` SGLang's retraction (``reserve.retraction``)."""
        need = self.cached[decoding] // self.config.block + 1 - self.held[decoding]
        if self.config.admission == "reserve" and int(need.sum()) > replica.free:
            rows = (self.generated[decoding], self.prompt[decoding], self.held[decoding])
            out = reserve.retraction(*rows, need, replica.free, self.config.block)
            for k in out:
                self._evict(replica, int(decoding[k]), front=False)
            keep = np.isin(np.arange(decoding.size), out, invert=True)
            decoding, need = decoding[keep], need[keep]
            replica.reservation.retracted(self.generated[decoding], self.output[decoding])
        while int(need.sum()) > replica.free:
            victim = int(replica.running[-1])
            self._evict(replica, victim, front=True)
            keep = decoding != victim
            decoding, need = decoding[keep], need[keep]
        return decoding, need

    def _grow(self, replica: _Replica, decoding: np.ndarray, need: np.ndarray) -> None:
        """Give the decodes the blocks their next tokens need (``_preempt`` made room)."""
        replica.free -= int(need.sum())
        self.held[decoding] += need

    def _decode_run(self, replica: _Replica, decoding: np.ndarray, first_s: float) -> tuple[int, float]:
        """Decode-only steps that can run as one timeout, and their seconds.

        Nothing can change the batch before the first of its requests finishes or the next arrival
        (to any replica) comes: admission waits on a finish (blocks, ``max_batch``, the chunk
        budget) or on an arrival. So the steps up to the one that ends a request or spans the next
        arrival run as one event, each still priced at its own context — unless their KV blocks do
        not all fit, when one step runs alone (and the next may preempt).
        """
        batch, context = decoding.size, int(self.cached[decoding].sum())
        last = int((self.output[decoding] - self.generated[decoding]).min())
        gap = self.upcoming - self.env.now
        steps, seconds = 1, first_s
        while steps < last and seconds < gap:
            seconds += self.step_time(0, batch, context + steps * batch)
            steps += 1
        if steps > 1:
            more = (self.cached[decoding] + steps - 1) // self.config.block + 1 - self.held[decoding]
            if int(more.sum()) > replica.free:
                return 1, first_s
            self._grow(replica, decoding, more)
        return steps, seconds

    def _gaps(
        self, decoding: np.ndarray, made: np.ndarray, steps: int, seconds: float, first_s: float
    ) -> None:
        """Record the inter-token gaps of an iteration that just ended (now) for the ``decoding``
        requests, ``made`` tokens each: the first since each one's previous token; then, in a fused
        run, the rest of the run's steps evenly, and in a multi-step window the tokens that come out
        together at its end (gaps of 0)."""
        if decoding.size == 0:
            return
        now = self.env.now
        start = now - seconds
        window = self.config.multi_step > 1
        first_out = now if window else start + first_s
        rows = [np.column_stack([first_out - self.last_token[decoding], np.ones(decoding.size)])]
        rest = float((made - 1).sum())
        if rest > 0:
            gap = 0.0 if window else (seconds - first_s) / (steps - 1)
            rows.append(np.array([[gap, rest]]))
        self.gap_rows += rows
        self.last_token[decoding] = now

    def _last_step_s(self, decoding: np.ndarray, steps: int, seconds: float) -> float:
        """The seconds of the last of ``steps`` decode-only steps taking ``seconds`` in all."""
        if steps == 1:
            return seconds
        batch = decoding.size
        return self.step_time(0, batch, int(self.cached[decoding].sum()) + (steps - 1) * batch)

    def _window(self, replica: _Replica, decoding: np.ndarray, first_s: float) -> tuple[int, float]:
        """A multi-step decode window (``config.multi_step`` steps, fewer when every request in it
        ends sooner) and its seconds: the batch stays whole (a request that ends early is masked,
        not removed), each step priced at its own context. One step alone when the window's KV
        blocks do not all fit (the next iteration may preempt)."""
        batch, context = decoding.size, int(self.cached[decoding].sum())
        steps = int(min(self.config.multi_step, (self.output[decoding] - self.generated[decoding]).max()))
        more = (self.cached[decoding] + steps - 1) // self.config.block + 1 - self.held[decoding]
        if steps <= 1 or int(more.sum()) > replica.free:
            return 1, first_s
        self._grow(replica, decoding, more)
        seconds = first_s + sum(self.step_time(0, batch, context + k * batch) for k in range(1, steps))
        return steps, seconds

    def iterate(self, replica: _Replica) -> Any:
        """The continuous or chunked scheduler of one replica, one iteration per timeout."""
        config, env = self.config, self.env
        chunked = config.scheduler == "chunked"
        while True:
            if config.overlap:
                replica.reveal(self.stream.arrival_s, env.now)
            if not replica.waiting and replica.running.size == 0:
                replica.last_start = None
                replica.reservation.idle()
                yield replica.sleep()
                continue
            running = replica.running
            decoding = running[self.prefill_left[running] == 0]
            prefill: list[tuple[int, int]] = []
            if chunked:
                decoding, need = self._preempt(replica, decoding)
                self._grow(replica, decoding, need)  # before admission takes the free blocks
                budget = max(0, config.chunk - decoding.size)
                for i in replica.running[self.prefill_left[replica.running] > 0]:
                    take = min(int(self.prefill_left[i]), budget)
                    if take:
                        prefill.append((int(i), take))
                        budget -= take
                for i in self._admit(replica, budget, whole=False):
                    take = min(int(self.prefill_left[i]), budget)
                    prefill.append((i, take))
                    budget -= take
                    replica.running = np.append(replica.running, i)
            else:
                admitted = self._admit(replica, config.max_prefill_tokens, whole=True)
                if admitted:
                    decoding, need = decoding[:0], decoding[:0]
                    prefill = [(i, int(self.prefill_left[i])) for i in admitted]
                    replica.running = np.append(replica.running, admitted)
                else:
                    decoding, need = self._preempt(replica, decoding)
                    self._grow(replica, decoding, need)
            if not prefill and decoding.size == 0:
                continue  # everything was preempted: admit again
            tokens = sum(take for _, take in prefill)
            steps, seconds = 1, self.step_time(tokens, int(decoding.size), int(self.cached[decoding].sum()))
            first_s = seconds
            if config.multi_step > 1 and not prefill:
                steps, seconds = self._window(replica, decoding, seconds)
            elif self.fuse and not prefill and decoding.size == replica.running.size and not replica.pending:
                steps, seconds = self._decode_run(replica, decoding, seconds)
            if config.overlap:  # the last step's start: what the next scheduling pass saw
                replica.last_start = env.now + seconds - self._last_step_s(decoding, steps, seconds)
            self.sample(replica)
            self.step_rows.append((decoding.size + len(prefill), seconds, steps))
            yield env.timeout(seconds)
            made = np.minimum(steps, self.output[decoding] - self.generated[decoding])
            self.cached[decoding] += made
            self.generated[decoding] += made
            self._gaps(decoding, made, steps, seconds, first_s)
            if decoding.size and not prefill:
                replica.reservation.decoded(steps)
            for i, take in prefill:
                self.cached[i] += take
                self.prefill_left[i] -= take
                if self.prefill_left[i] == 0:
                    self.generated[i] += 1
                    if np.isnan(self.first_token[i]):
                        self.first_token[i] = env.now
                    else:  # a preempted request's next token, after its recompute
                        self.gap_rows.append(np.array([[env.now - self.last_token[i], 1.0]]))
                    self.last_token[i] = env.now
            running = replica.running
            done = self.generated[running] >= self.output[running]
            if done.any():
                ended = running[done]
                self.finish[ended] = env.now
                replica.free += int(self.held[ended].sum())
                self.held[ended] = 0
                replica.running = running[~done]
                replica.reservation.full = False


def simulate(
    stream: RequestStream, config: ServerConfig, step_time: StepTime, *, fuse: bool = True
) -> Outcome:
    """Serve ``stream`` with ``config``, each iteration priced by ``step_time``.

    ``fuse``: run the decode-only steps nothing can interrupt as one event (``_decode_run``); the
    result is the same as stepping them one by one (the tests compare), only faster.

    Raises:
        RuntimeError: a request neither finished nor refused (a scheduler bug, never user input).
    """
    sim = _Simulation(stream, config, step_time, fuse)
    sim.env.process(sim.arrivals())
    for replica in sim.replicas:
        sim.env.process(static.serve(sim, replica) if config.scheduler == "static" else sim.iterate(replica))
    sim.env.run()
    finished = ~np.isnan(sim.finish)
    if int(finished.sum()) + int(sim.refused.sum()) != len(stream) or (finished & sim.refused).any():
        raise RuntimeError("serving simulation: a request neither finished nor was refused")
    samples = np.array(sim.sample_rows, dtype=np.float64).reshape(-1, len(SAMPLE_FIELDS))
    steps = np.array(sim.step_rows, dtype=np.float64).reshape(-1, 3)
    return Outcome(
        stream,
        config,
        sim.first_token,
        sim.finish,
        sim.admitted,
        sim.preemptions,
        sim.refused,
        samples,
        steps,
        gaps=None if config.scheduler == "static" else np.concatenate([np.zeros((0, 2)), *sim.gap_rows]),
    )
