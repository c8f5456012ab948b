"""The static scheduler (``ServerConfig.scheduler="static"``): whole batches, padded, one event each.

A batch starts when ``max_batch`` requests wait or the oldest has waited ``batch_timeout_s``; its
prompts are padded to the longest and prefilled together, then every slot decodes until the batch's
longest output ends (FasterTransformer, early TGI). The whole batch is one SimPy timeout: each
token's time is known when it starts (the prefill, then a decode step per token over the padded
context), so a request's first token and finish are set then, and its slot frees only with the
batch. A batch takes the waiting requests front first while the padded blocks of all fit the cache.
"""

from __future__ import annotations

import collections
from typing import Any, Protocol

import numpy as np
import simpy

from parsim.methods.serving.config import ServerConfig, StepTime
from parsim.workloads.requests import Floats, Ints, RequestStream


class Replica(Protocol):
    """What the static scheduler reads and sets of one replica (``simulate``'s)."""

    waiting: collections.deque[int]
    running: Ints
    free: int

    def sleep(self) -> simpy.Event: ...


class Simulation(Protocol):
    """What the static scheduler reads and sets of the simulation (``simulate``'s)."""

    config: ServerConfig
    env: simpy.Environment
    stream: RequestStream
    step_time: StepTime
    prompt: Ints
    output: Ints
    generated: Ints
    admitted: Floats
    first_token: Floats
    finish: Floats
    step_rows: list[tuple[int, float, int]]

    def sample(self, replica: Any) -> None: ...


def serve(sim: Simulation, replica: Replica) -> Any:
    """The static scheduler of one replica of ``sim``: one timeout per batch, tokens timed inside it."""
    config, env, arrival = sim.config, sim.env, sim.stream.arrival_s
    while True:
        if not replica.waiting:
            yield replica.sleep()
            continue
        deadline = arrival[replica.waiting[0]] + config.batch_timeout_s
        if len(replica.waiting) < config.max_batch and env.now < deadline:
            yield env.any_of([replica.sleep(), env.timeout(deadline - env.now)])
            continue
        batch: list[int] = []
        longest_prompt = longest_output = 0
        while replica.waiting and len(batch) < config.max_batch:
            i = replica.waiting[0]
            p, o = max(longest_prompt, int(sim.prompt[i])), max(longest_output, int(sim.output[i]))
            if (len(batch) + 1) * config.blocks(p + o) > config.kv_blocks:
                break
            batch.append(replica.waiting.popleft())
            longest_prompt, longest_output = p, o
        size, ids = len(batch), np.array(batch, dtype=np.int64)
        replica.running = ids
        replica.free = config.kv_blocks - size * config.blocks(longest_prompt + longest_output)
        sim.admitted[ids] = env.now
        sim.sample(replica)
        # token k (1..longest_output) of every slot is out after the prefill and k - 1 decodes,
        # each over the padded context of the step
        times = [sim.step_time(size * longest_prompt, 0, 0)]
        for step in range(1, longest_output):
            times.append(sim.step_time(0, size, size * (longest_prompt + step - 1)))
        ends = env.now + np.cumsum(times)
        sim.first_token[ids] = ends[0]
        sim.finish[ids] = ends[sim.output[ids] - 1]
        sim.generated[ids] = sim.output[ids]
        sim.step_rows.append((size, float(np.sum(times)), len(times)))
        yield env.timeout(float(ends[-1] - env.now))
        replica.running = replica.running[:0]
        replica.free = config.kv_blocks
