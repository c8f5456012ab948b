"""SGLang's admission and retraction: a request joins only when the outputs ahead of it fit.

``simulate``'s default admission (``ServerConfig.admission="prompt"``) is vLLM's: a waiting request
is admitted when its prompt's KV blocks fit, and a decode step that finds no free block preempts the
latest admitted request, which is recomputed first. SGLang's scheduler (``admission="reserve"``)
looks ahead instead, as its ``PrefillAdder`` and ``retract_decode`` do [SGL]:

1. **Outputs ahead.** The benchmark clients run with ``ignore_eos`` (sglang.bench_serving's default):
   every request generates exactly its ``max_new_tokens``, which the scheduler knows; with the tree
   cache off (``--disable-radix-cache``, as every published SGLang run here) a request is admitted
   only if, with each running request generating the rest of its output and none admitted after
   it, the cache never overflows (``add_one_req_ignore_eos``): the n requests sorted by tokens left
   t_0 <= t_1 <= ..., the i-th check is ``room + freed_i - t_(i+1) (n - i) > 0`` (the last one
   with its own t), ``freed_i`` the tokens held now by the i that end first, ``room`` the free
   tokens less the newcomer's prompt (``fits``).
2. **A ratio budget** besides: the free tokens less each running request's tokens left (at most
   4,096) times ``new_token_ratio``, less each newly admitted request's prompt and whole output;
   admission stops once it is spent (``Reservation.budget``). The ratio starts at 0.7, falls by
   (0.7 - 0.098) / 600 every decode step down to 0.098, returns to 0.7 when the server idles and,
   after a retraction, becomes the running requests' tokens generated (plus 20 each) over their
   outputs (``global_config``: ``default_init_new_token_ratio``, ``..._min_new_token_ratio_factor``
   0.14, ``..._new_token_ratio_decay_steps`` 600, ``retract_decode_steps`` 20).
3. **Batch full.** Once admission stops for lack of room, it is not tried again until a running
   request ends or is retracted (``batch_is_full``).
4. **Retraction.** A decode step that finds no room for one token per request retracts requests,
   the fewest tokens generated first (the longest prompt among equals), until 20 more steps fit for
   the rest (always at least one): each frees its whole cache and goes to the back of the queue, to
   be prefilled again, prompt and tokens so far (``retract_order``; ``simulate`` moves them).

So under a load the cache cannot hold, SGLang keeps fewer requests running than vLLM would admit,
and queues the rest before their first token instead of preempting them after it.

[SGL] sgl-project/sglang python/sglang/srt/managers/schedule_policy.py (``PrefillAdder``,
``add_one_req_ignore_eos``, ``CLIP_MAX_NEW_TOKENS`` 4096), scheduler.py (``update_running_batch``,
``batch_is_full``, the idle reset of ``new_token_ratio``), schedule_batch.py (``check_decode_mem``,
``retract_decode``), global_config.py, as of v0.4.0-0.4.1 (Dec 2024: the ``PrefillAdder`` with
``new_being_chunked_req`` and ``rem_total_token_offset``), the version datacrunch-research/
h200-benchmarks ran. Later versions (v0.4.9) check each request against its own tokens left with a
token of reserve per request, a little less cautious; not modelled.
"""

from __future__ import annotations

import attrs
import numpy as np

from parsim.workloads.requests import Ints

RATIO_INIT = 0.7
"""``new_token_ratio`` at start and whenever the server idles (``default_init_new_token_ratio``)."""
RATIO_MIN = RATIO_INIT * 0.14
"""Its floor: the initial ratio x ``default_min_new_token_ratio_factor``."""
RATIO_DECAY = (RATIO_INIT - RATIO_MIN) / 600
"""Its fall per decode step: to the floor over ``default_new_token_ratio_decay_steps``."""
RETRACT_STEPS = 20
"""Decode steps of one token per request a retraction makes room for (``retract_decode_steps``)."""
CLIP_TOKENS = 4096
"""The most tokens left the ratio budget counts per request (``CLIP_MAX_NEW_TOKENS``)."""


def fits(left: Ints, held: Ints, room: int) -> bool:
    """SGLang's look-ahead (``add_one_req_ignore_eos``): whether ``room`` free tokens suffice as the
    requests, with ``left`` tokens still to generate and ``held`` tokens held each, decode to their
    ends (those with none left are not counted)."""
    keep = left > 0
    order = np.argsort(left[keep], kind="stable")
    ends, freed_at_end = left[keep][order], held[keep][order]
    n = ends.size
    if n == 0:
        return room > 0
    freed = np.concatenate(([0], np.cumsum(freed_at_end)[:-1]))
    ahead = np.concatenate((ends[1:], ends[-1:]))
    return bool(np.all(room + freed - ahead * (n - np.arange(n)) > 0))


def retract_order(generated: Ints, prompt: Ints) -> Ints:
    """Positions of the decoding requests in the order SGLang retracts them: fewest tokens generated
    first, the longest prompt first among equals (``retract_decode`` sorts by (generated, -prompt)
    descending and pops from the end)."""
    return np.lexsort((-prompt, generated))


def retraction(generated: Ints, prompt: Ints, held: Ints, need: Ints, free: int, block: int) -> Ints:
    """Positions of the decoding requests SGLang retracts when their next tokens (``need`` blocks
    each) do not fit the ``free`` blocks: in ``retract_order``, at least one, until 20 more steps'
    tokens fit for the rest (and their next ones), never the last one; in the order retracted."""
    order = list(retract_order(generated, prompt))
    keep = np.ones(generated.size, dtype=bool)
    out: list[int] = []
    while len(order) > 1 and (
        not out or free * block < RETRACT_STEPS * len(order) or int(need[keep].sum()) > free
    ):
        k = int(order.pop(0))
        keep[k] = False
        free += int(held[k])
        out.append(k)
    return np.array(out, dtype=np.int64)


@attrs.define
class Reservation:
    """One replica's admission state: ``new_token_ratio`` and whether the batch is full."""

    ratio: float = RATIO_INIT
    full: bool = False
    retracting: bool = False
    """The step about to run follows a retraction (which set the ratio instead of its fall)."""

    budget: float = 0.0
    """What the ratio budget has left in the admission under way (``open``, ``take``)."""

    def open(self, free_tokens: int, running_left: Ints) -> bool:
        """Start an admission: the budget is the free tokens less the running requests' tokens left
        (at most 4,096 each) times the ratio. False while the batch is full (nothing is tried)."""
        self.budget = free_tokens - self.ratio * float(np.minimum(running_left, CLIP_TOKENS).sum())
        return not (self.full and running_left.size)

    def take(self, prompt_tokens: int, output_tokens: int) -> bool:
        """A request was admitted: its prompt and whole output (at most 4,096) leave the budget.
        False once it is spent (the batch is full)."""
        self.budget -= prompt_tokens + min(output_tokens, CLIP_TOKENS)
        self.full = self.budget <= 0
        return not self.full

    def decoded(self, steps: int) -> None:
        """``steps`` decode steps ran: the ratio falls at each but one that followed a retraction."""
        steps -= self.retracting
        self.ratio, self.retracting = max(self.ratio - RATIO_DECAY * steps, RATIO_MIN), False

    def retracted(self, generated: Ints, output: Ints) -> None:
        """After a retraction: the ratio the running requests' progress says, and room to admit."""
        total, ahead = float(output.sum()), float(generated.sum()) + RETRACT_STEPS * generated.size
        self.ratio = min(1.0, ahead / total) if total else 1.0
        self.full, self.retracting = False, True

    def idle(self) -> None:
        """Nothing waiting or running: the ratio starts over."""
        self.ratio, self.full = RATIO_INIT, False
