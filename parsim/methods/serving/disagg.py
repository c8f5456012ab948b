"""Disaggregated serving (DistServe, Splitwise): prefill instances hand each KV cache to decode ones.

``disaggregated=P:D`` splits the server into P prefill instances and D decode instances, each of
``gpus`` tensor-parallel GPUs with its own paged KV cache of ``kv_blocks`` blocks (so P + D
instances in all, where ``replicas`` would be copies doing both). A request's life:

1. The router sends it to a prefill instance (round robin, or the least loaded); that instance
   runs prefill-only iterations, admitting waiting prompts front first while their blocks fit, up
   to ``max_batch`` and ``max_prefill_tokens`` per step (``continuous``'s admission). The step
   that ends its prompt produces its first token: **TTFT ends there**, as DistServe defines it
   (the token is streamed from the prefill instance; the transfer is not waited for).
2. Its KV cache — ``prompt`` tokens of ``kv_bytes_per_token`` each, the model's rule
   (``workloads.llms.kv_cache_bytes``) — leaves the prefill instance, whose blocks free at once
   (the copy is taken out), and crosses the node's GPU-to-GPU link: each of the ``gpus`` GPUs sends
   its shard (bytes / gpus) to its peer on the decode side at the same time, each priced as one
   uncontended copy (``model.transfer.transfer_s``: latency + bytes / bandwidth). Transfers do not
   share the link with each other (the closed-form rule's assumption, as ``model.transfer``).
3. It joins a decode instance (round robin, or the least loaded), which admits it when the blocks
   of its whole prompt + output fit (reserved at once: a decode instance never preempts, so
   ``preemptions`` stay 0) and up to ``max_batch`` decode together; every iteration decodes one
   token of every running request (continuous batching), priced by the same ``StepTime``.

A request with a single output token ends with its prefill (no transfer). Nothing vanishes: the
same check as ``simulate`` holds, each request finished or refused at arrival (longer than one
instance's cache). Samples rows carry the instance index: prefill instances 0..P-1, decode
instances P..P+D-1.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any

import numpy as np
import simpy

from parsim.methods.serving.config import ServerConfig, StepTime
from parsim.methods.serving.simulate import SAMPLE_FIELDS, Outcome
from parsim.workloads.requests import Floats, RequestStream

TransferTime = Callable[[int], float]
"""Seconds the KV cache of a prompt of that many tokens takes from a prefill to a decode instance."""


class _Instance:
    """One prefill or decode instance: its queue, running requests and free KV blocks."""

    def __init__(self, env: simpy.Environment, index: int, blocks: int) -> None:
        self.env, self.index = env, index
        self.waiting: collections.deque[int] = collections.deque()
        self.running: list[int] = []
        self.free = blocks
        self.wake: simpy.Event | None = None

    def load(self) -> int:
        return len(self.waiting) + len(self.running)

    def arrive(self, request: int) -> None:
        self.waiting.append(request)
        if self.wake is not None and not self.wake.triggered:
            self.wake.succeed()

    def sleep(self) -> simpy.Event:
        self.wake = self.env.event()
        return self.wake


class _Disaggregated:
    def __init__(
        self, stream: RequestStream, config: ServerConfig, step_time: StepTime, transfer: TransferTime
    ) -> None:
        assert config.disaggregated is not None
        n, (p, d) = len(stream), config.disaggregated
        self.stream, self.config, self.step_time, self.transfer = stream, config, step_time, transfer
        self.env = simpy.Environment()
        self.prompt = stream.prompt_tokens.astype(np.int64)
        self.output = stream.output_tokens.astype(np.int64)
        self.first_token = np.full(n, np.nan)
        self.finish = np.full(n, np.nan)
        self.admitted = np.full(n, np.nan)
        self.transfer_s = np.full(n, np.nan)
        self.refused = -(-(self.prompt + self.output) // config.block) > config.kv_blocks
        self.prefills = [_Instance(self.env, i, config.kv_blocks) for i in range(p)]
        self.decodes = [_Instance(self.env, p + i, config.kv_blocks) for i in range(d)]
        self.sample_rows: list[tuple[float, int, int, int, int]] = []
        self.step_rows: list[tuple[int, float, int]] = []
        self.handed = 0  # requests sent to decode instances so far (their round robin)

    def sample(self, instance: _Instance) -> None:
        used = self.config.kv_blocks - instance.free
        row = (self.env.now, len(instance.waiting), len(instance.running), used, instance.index)
        self.sample_rows.append(row)

    def route(self, instances: list[_Instance], count: int) -> _Instance:
        if self.config.router == "round_robin":
            return instances[count % len(instances)]
        return min(instances, key=_Instance.load)

    def arrivals(self) -> Any:
        env, arrival = self.env, self.stream.arrival_s
        for i in range(len(arrival)):
            if arrival[i] > env.now:
                yield env.timeout(arrival[i] - env.now)
            if self.refused[i]:
                continue
            target = self.route(self.prefills, i)
            target.arrive(i)
            self.sample(target)

    def prefill(self, instance: _Instance) -> Any:
        """Prefill-only iterations: admit whole prompts while blocks and the token budget last."""
        config, env = self.config, self.env
        while True:
            if not instance.waiting:
                yield instance.sleep()
                continue
            batch: list[int] = []
            tokens = 0
            while instance.waiting and len(batch) < config.max_batch:
                i = instance.waiting[0]
                need, prompt = config.blocks(int(self.prompt[i])), int(self.prompt[i])
                if need > instance.free or (batch and tokens + prompt > config.max_prefill_tokens):
                    break
                instance.waiting.popleft()
                instance.free -= need
                self.admitted[i] = env.now
                batch.append(i)
                tokens += prompt
            if not batch:  # cannot happen: an empty instance fits any prompt that was not refused
                raise RuntimeError("disaggregated serving: a prompt fits no prefill instance")
            instance.running = batch
            self.sample(instance)
            seconds = self.step_time(tokens, 0, 0)
            self.step_rows.append((len(batch), seconds, 1))
            yield env.timeout(seconds)
            for i in batch:
                self.first_token[i] = env.now
                instance.free += config.blocks(int(self.prompt[i]))
                if self.output[i] <= 1:
                    self.finish[i] = env.now
                else:
                    env.process(self.hand_over(i))
            instance.running = []

    def hand_over(self, request: int) -> Any:
        """The KV cache's copy to a decode instance, then the request waits there."""
        seconds = self.transfer(int(self.prompt[request]))
        self.transfer_s[request] = seconds
        yield self.env.timeout(seconds)
        target = self.route(self.decodes, self.handed)
        self.handed += 1
        target.arrive(request)
        self.sample(target)

    def decode(self, instance: _Instance) -> Any:
        """Continuous batching of decodes: admit while the whole requests' blocks fit."""
        config, env = self.config, self.env
        generated: dict[int, int] = {}
        while True:
            while instance.waiting and len(instance.running) < config.max_batch:
                i = instance.waiting[0]
                need = config.blocks(int(self.prompt[i] + self.output[i]))
                if need > instance.free:
                    break
                instance.waiting.popleft()
                instance.free -= need
                instance.running.append(i)
                generated[i] = 1  # the first token came from the prefill instance
            if not instance.running:
                yield instance.sleep()
                continue
            self.sample(instance)
            batch = len(instance.running)
            context = sum(int(self.prompt[i]) + generated[i] - 1 for i in instance.running)
            seconds = self.step_time(0, batch, context)
            self.step_rows.append((batch, seconds, 1))
            yield env.timeout(seconds)
            staying: list[int] = []
            for i in instance.running:
                generated[i] += 1
                if generated[i] >= self.output[i]:
                    self.finish[i] = env.now
                    instance.free += config.blocks(int(self.prompt[i] + self.output[i]))
                    del generated[i]
                else:
                    staying.append(i)
            instance.running = staying


def simulate_disaggregated(
    stream: RequestStream, config: ServerConfig, step_time: StepTime, transfer: TransferTime
) -> tuple[Outcome, Floats]:
    """Serve ``stream`` on ``config.disaggregated`` prefill and decode instances (module docstring).

    Returns:
        The outcome (as ``simulate``'s) and each request's KV transfer seconds (NaN: none made).

    Raises:
        RuntimeError: a request neither finished nor refused (a scheduler bug, never user input).
    """
    sim = _Disaggregated(stream, config, step_time, transfer)
    sim.env.process(sim.arrivals())
    for instance in sim.prefills:
        sim.env.process(sim.prefill(instance))
    for instance in sim.decodes:
        sim.env.process(sim.decode(instance))
    sim.env.run()
    finished = ~np.isnan(sim.finish)
    if int(finished.sum()) + int(sim.refused.sum()) != len(stream) or (finished & sim.refused).any():
        raise RuntimeError("disaggregated serving: a request neither finished nor was refused")
    samples = np.array(sim.sample_rows, dtype=np.float64).reshape(-1, len(SAMPLE_FIELDS))
    steps = np.array(sim.step_rows, dtype=np.float64).reshape(-1, 3)
    preemptions = np.zeros(len(stream), dtype=np.int64)
    outcome = Outcome(
        stream, config, sim.first_token, sim.finish, sim.admitted, preemptions, sim.refused, samples, steps
    )
    return outcome, sim.transfer_s
