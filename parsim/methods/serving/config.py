"""How a server under load is run: the scheduler, its limits, the KV cache, replicas, the SLOs.

Three schedulers, as the serving systems name them:

- ``static``: a batch starts when ``max_batch`` requests wait or the oldest has waited
  ``batch_timeout_s``; its prompts are padded to the longest and prefilled together, then every slot
  decodes until the batch's longest output ends (FasterTransformer, early TGI). A request's tokens
  stream as they come, but its slot frees only when the whole batch ends.
- ``continuous``: iteration-level scheduling (Orca, vLLM): requests join and leave the batch at every
  step. When waiting requests fit, a step prefills them (and only them: prefills first, vLLM's
  default); otherwise every running request decodes one token.
  With ``multi_step`` K > 1 (vLLM's ``--num-scheduler-steps``), a decode iteration runs K steps
  before the scheduler looks again: a request that arrives meanwhile waits for the window's end,
  one that ends inside it frees its slot (and is seen to end) only there.
- ``chunked``: a token budget per step (``chunk``, Sarathi-Serve, vLLM's chunked prefill): the
  running decodes first, one token each, then the budget left goes to prompt tokens, in arrival
  order, a prompt split over steps where it does not fit.

The KV cache is paged (vLLM's PagedAttention): ``kv_blocks`` blocks of ``block`` tokens per
replica. A request is admitted only when the blocks of its prompt fit (``static``: of its whole
padded length); a decode that needs a new block when none is free preempts the most recently
admitted running request, whose blocks are freed and whose prompt and tokens so far are
recomputed later (vLLM's recompute preemption) — counted, never lost. A request longer than the
whole cache is refused at arrival and reported.

Automatic prefix caching (vLLM's, on by default from the V1 engine, 0.8): a KV block is kept by
the hash of its tokens after its request ends, so a prompt whose leading blocks were computed
before (a shared system prompt, a conversation's earlier turns, a benchmark's rerun of the same
prompts on a warm server) starts with those tokens cached and computes only the rest.
``cached_prefix`` is the share of each prompt found so (``prefix_hits``: whole blocks, never the
last token); a preempted request recomputes everything (``_preempt``).

An overlap scheduler (SGLang 0.4's, ``overlap``) schedules step k + 1 while step k runs: what it
sees of the queue is what had arrived when step k began, so a request that arrives during step k
joins no earlier than step k + 2 (at once when the replica is idle). Continuous and chunked only.

Admission (``admission``, the engine's policy): ``prompt`` as above (vLLM); ``reserve`` as SGLang's
scheduler, which admits a request only when every running request's remaining output fits ahead of
it and retracts requests to the back of the queue when a decode still runs out of room
(``methods.serving.reserve``). Continuous and chunked only, one step per scheduling.

``replicas`` copies of the model each run their own scheduler behind one router: ``round_robin``
(request i to replica i mod R) or ``least_loaded`` (the replica with the fewest requests waiting or
running at the arrival).

``disaggregated=(P, D)`` serves instead on P prefill and D decode instances of ``kv_blocks`` each
(``methods.serving.disagg``): only with the ``continuous`` scheduler and one replica.
"""

from __future__ import annotations

import math
from typing import Protocol

import attrs
import numpy as np
import numpy.typing as npt

from parsim.base.errors import ParsimError, field_error

SCHEDULERS = ("static", "continuous", "chunked")
ROUTERS = ("round_robin", "least_loaded")
ADMISSIONS = ("prompt", "reserve")


class StepTime(Protocol):
    """Seconds one iteration of a replica takes.

    Args:
        prefill_tokens: prompt tokens processed in the step (of every request prefilling in it).
        decode_batch: requests decoding one token each in the step.
        decode_context_tokens: tokens already cached for those requests, summed (their attention
            reads them all).
    """

    def __call__(self, prefill_tokens: int, decode_batch: int, decode_context_tokens: int) -> float: ...


INTEGERS = {
    "kv_blocks": 10**9,
    "max_batch": 65_536,
    "chunk": 10**6,
    "max_prefill_tokens": 10**7,
    "block": 4096,
    "replicas": 1024,
    "multi_step": 64,
}
"""Each integer field's largest value (all are >= 1)."""


@attrs.frozen
class ServerConfig:
    """One serving configuration (see the module docstring); ``kv_blocks`` is per replica.

    ``max_prefill_tokens`` bounds the prompt tokens of one ``continuous`` prefill step (vLLM's
    ``max_num_batched_tokens``); a longer prompt still runs, alone.
    """

    kv_blocks: int
    scheduler: str = "continuous"
    max_batch: int = 256
    batch_timeout_s: float = 0.1
    chunk: int = 512
    max_prefill_tokens: int = 8192
    block: int = 16
    replicas: int = 1
    router: str = "round_robin"
    slo_ttft_s: float | None = None
    slo_tpot_s: float | None = None
    disaggregated: tuple[int, int] | None = None
    multi_step: int = 1
    cached_prefix: float = 0.0
    overlap: bool = False
    admission: str = "prompt"

    def __attrs_post_init__(self) -> None:
        for name, most in INTEGERS.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
                raise field_error(name, f"an integer in 1..{most:,}", value)
        for name in ("batch_timeout_s", "slo_ttft_s", "slo_tpot_s"):
            value = getattr(self, name)
            if value is None and name != "batch_timeout_s":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
                raise field_error(name, ">= 0 seconds", value)
        if isinstance(self.cached_prefix, bool) or not (
            isinstance(self.cached_prefix, (int, float)) and 0 <= self.cached_prefix <= 1
        ):
            raise field_error("cached_prefix", "a share of the prompt in 0..1", self.cached_prefix)
        if self.scheduler not in SCHEDULERS:
            raise field_error("scheduler", f"one of {', '.join(SCHEDULERS)}", self.scheduler)
        if self.admission not in ADMISSIONS:
            raise field_error("admission", f"one of {', '.join(ADMISSIONS)}", self.admission)
        if self.router not in ROUTERS:
            raise field_error("router", f"one of {', '.join(ROUTERS)}", self.router)
        if self.scheduler == "chunked" and self.chunk <= 1:
            raise ParsimError(f"'chunk' must be > 1 token for scheduler=chunked: {self.chunk}")
        if self.multi_step > 1 and (self.scheduler != "continuous" or self.disaggregated is not None):
            raise ParsimError(
                f"'multi_step' (decode steps per scheduling, vLLM's --num-scheduler-steps) needs "
                f"scheduler=continuous on replicas, not disaggregated: multi_step={self.multi_step}, "
                f"scheduler={self.scheduler}"
            )
        if self.cached_prefix > 0 and (self.scheduler == "static" or self.disaggregated is not None):
            raise ParsimError(
                f"'cached_prefix' (prefix caching) needs scheduler=continuous or chunked on replicas, "
                f"not static or disaggregated: cached_prefix={self.cached_prefix}, scheduler={self.scheduler}"
            )
        if not isinstance(self.overlap, bool):
            raise field_error("overlap", "True or False", self.overlap)
        one_step = self.scheduler != "static" and self.multi_step == 1 and self.disaggregated is None
        if self.overlap and not one_step:
            raise ParsimError(
                f"'overlap' (an overlap scheduler) needs scheduler=continuous or chunked on replicas, one "
                f"step per scheduling: scheduler={self.scheduler}, multi_step={self.multi_step}"
            )
        if self.admission == "reserve" and not one_step:
            raise ParsimError(
                f"'admission=reserve' (SGLang's look-ahead admission) needs scheduler=continuous or "
                f"chunked on replicas, one step per scheduling: scheduler={self.scheduler}, "
                f"multi_step={self.multi_step}"
            )
        if self.disaggregated is not None:
            check_disaggregated(self.disaggregated, self.scheduler, self.replicas)

    @property
    def instances(self) -> int:
        """Model instances, each with its own KV cache: the replicas, or P + D disaggregated."""
        return self.replicas if self.disaggregated is None else sum(self.disaggregated)

    def prefix_hits(self, prompt: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """Tokens of each prompt the prefix cache already holds on arrival: the whole blocks of its
        ``cached_prefix`` share (only a full block has a hash), and never the last token, which the
        engine computes to sample the first output (vLLM V1 recomputes the last block of a prompt
        that hits entirely)."""
        if self.cached_prefix == 0:
            return np.zeros_like(prompt)
        share = np.floor(self.cached_prefix * prompt / self.block).astype(np.int64) * self.block
        return np.minimum(share, (prompt - 1) // self.block * self.block)

    def blocks(self, tokens: int) -> int:
        """Blocks that hold ``tokens`` cached tokens."""
        return -(-tokens // self.block)


def check_disaggregated(split: tuple[int, int], scheduler: str, replicas: int) -> None:
    """Refuse a P:D split out of bounds, or with a scheduler or replicas it does not combine with."""
    most = INTEGERS["replicas"]
    for side, count in zip(("prefill", "decode"), split, strict=True):
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= most:
            raise field_error(f"disaggregated ({side} instances)", f"an integer in 1..{most:,}", count)
    if scheduler != "continuous":
        raise ParsimError(
            f"'disaggregated' needs scheduler=continuous (prefill instances run prefill-only "
            f"iterations, decode instances decode-only ones): {scheduler}"
        )
    if replicas != 1:
        raise ParsimError(f"'disaggregated' replaces 'replicas' (P:D instances): replicas={replicas}")
