"""A Llama training step as plain PyTorch runs it without ``torch.compile``: every kernel.

Fused training code (Megatron-LM, a compiled graph) runs a Llama block as a dozen kernels. Meta's
reference Llama (``model.py``), which torchtitan trained as it is when ``compile = false`` (pytorch/
torchtitan@041336434916bdc0f88c1f89fda176fd3c2092e4 ``torchtitan/models/llama/model.py``, the
configuration its A100 performance table was measured with), runs the Python it is written in, one
kernel per tensor op (``code=eager``). What that adds, mechanism by mechanism:

- ``apply_rotary_emb`` turns q and k into complex numbers in float32 (``xq.float()``), multiplies
  them by ``freqs_cis`` and casts back (``type_as``): three kernels through float32 each for q and
  for k, where a fused kernel reads and writes each element once; backward the same three;
- q, k and v are three projections (``wq``, ``wk``, ``wv``), their three input gradients summed;
- ``repeat_kv`` copies the keys and values to every query head before SDPA under grouped-query
  attention (``expand`` then ``reshape``), and its backward sums the copies;
- SDPA's FlashAttention-2 kernel, with the two kernels PyTorch runs around its backward (the
  ``dot(dO, O)`` row sums and the float32 dQ accumulator's conversion);
- ``w2(F.silu(w1(x)) * w3(x))``: the SiLU and the product are two kernels, their backward three;
- ``RMSNorm`` (``code=eager``: ``norm_type = "rmsnorm"``, torchtitan's 70B presets) is
  ``x.float()``, ``pow(2)``, ``mean``, ``+ eps``, ``rsqrt``, ``x * r``, ``type_as``, ``* weight``: five
  passes through float32 forward and a dozen backward; ``code=eager-fused-norm``
  (``norm_type = "fused_rmsnorm"``, its 8B and 13B presets) is torchtitan's Triton kernel, one pass
  forward and one backward, as the fused code's norm;
- the logits cast to float32 (``self.output(h).float()``) before ``F.cross_entropy``.

Each residual add is one kernel forward, and backward one sum where the stream forks. SDPA returns
its output in the (batch, seq, heads, head_dim) layout, so ``transpose(1, 2).contiguous()`` copies
nothing. Only the Llama family (RMSNorm, SwiGLU, rotary positions) is written here; the backward
kernels are issued by autograd (``primitive``), forward module calls pay the framework's ``op_cycles``.
"""

from __future__ import annotations

from collections.abc import Callable

from parsim.base.errors import ParsimError
from parsim.workloads.base import Kernel
from parsim.workloads.llm_config import LlmConfig
from parsim.workloads.transformer_hf import F32, Group, embedding_backward, float32_cross_entropy
from parsim.workloads.transformer_ops import EMBEDDING, REPLICATED, Ops, block_layers

CODES = ("eager", "eager-fused-norm")
"""``code`` values this module builds: the reference Llama op by op, with its RMSNorm or the fused one."""
_TOKEN_ID_B = 8  # int64 token ids
_COMPLEX_MUL_FLOPS = 3  # a complex product: 4 multiplies and 2 adds per pair of real elements


def train_step(
    ops: Ops,
    flash: Callable[..., list[Kernel]],
    config: LlmConfig,
    batch: int,
    seq: int,
    attention: str,
    code: str,
) -> list[Kernel]:
    """Forward kernels onto ``ops.forward``; returns the backward pass with the optimizer's updates.

    ``flash`` is ``transformer._attention`` (SDPA's fused kernel)."""
    if config.norm != "rmsnorm" or config.mlp != "swiglu" or config.position != "rotary" or config.moe:
        raise ParsimError(
            f"code={code}: the reference Llama's code (RMSNorm, SwiGLU, rotary positions, dense) is "
            f"written here, not {config.name}'s (use code=fused)"
        )
    if attention == "unfused":
        raise ParsimError(f"code={code}: the reference Llama calls SDPA's fused kernel: attention=flash")
    step = _Step(ops, config, batch, seq, fused_norm=code == "eager-fused-norm")
    groups = [step.embedding()]
    for i in range(config.layers):
        attn, mlp = block_layers(i)
        groups.append(step.attention_block(attn, flash, attention))
        groups.append(step.mlp_block(mlp))
    groups += step.head()
    return [k for group in reversed(groups) for k in group]


class _Step:
    def __init__(self, ops: Ops, config: LlmConfig, batch: int, seq: int, fused_norm: bool):
        self.ops, self.config, self.batch, self.seq = ops, config, batch, seq
        self.tokens, self.fused_norm = batch * seq, fused_norm
        self.a = ops.size  # the parameters' and activations' type (bfloat16 under FSDP's policy)

    def _cast(self, g: Group, what: str, n: float, source: float, target: float) -> list[Kernel]:
        """``.float()`` or ``type_as``: no kernel when the types agree (a float32 model)."""
        return [] if source == target else [g.op(f"{what} cast", n, n * source, n * target)]

    def norm(self, g: Group, what: str) -> None:
        n, d, t, a = self.tokens * self.config.hidden, self.config.hidden, self.tokens, self.a
        if self.fused_norm:  # torchtitan's TritonFusedRMSNorm: x, w in; y and a float32 rstd per row out
            g.forward(g.op(f"{what} fwd", n, n * a + d * a, n * a + t * F32, 4, module=True, part=REPLICATED))
            g.grad(g.op(f"{what} bwd", n, 2 * n * a + t * F32 + d * a, n * a + d * F32, 8, part=REPLICATED))
            return
        # x.float(), pow(2), mean(-1), + eps, rsqrt, x * r, type_as(x), * weight
        f = F32
        g.forward(
            *self._cast(g, f"{what} x.float()", n, a, f),
            g.op(f"{what} pow fwd", n, n * f, n * f, module=True),
            g.op(f"{what} mean fwd", n, n * f, t * f),
            g.op(f"{what} + eps fwd", t, t * f, t * f),
            g.op(f"{what} rsqrt fwd", t, t * f, t * f, special_ops=float(t)),
            g.op(f"{what} x * r fwd", n, n * f + t * f, n * f),
            *self._cast(g, f"{what} type_as", n, f, a),
            g.op(f"{what} * weight fwd", n, n * a + d * a, n * a),
        )
        # autograd, last op first: the weight's product (both operands' gradients, the weight's
        # summed over the tokens), type_as's cast, x * r's two, rsqrt's, mean's (the gradient
        # broadcast to every element), pow's (grad * 2 * x^1), the two paths into x summed, the cast
        g.grad(
            g.op(f"{what} grad * weight", n, n * a + d * a, n * a),
            g.op(f"{what} grad * y", n, 2 * n * a, n * a),
            g.op(f"{what} weight grad sum", n, n * a, d * a),
            *self._cast(g, f"{what} grad type_as", n, a, f),
            g.op(f"{what} grad * r", n, n * f + t * f, n * f),
            g.op(f"{what} grad * x", n, 2 * n * f, n * f),
            g.op(f"{what} r grad sum", n, n * f, t * f),
            g.op(f"{what} rsqrt bwd", t, 2 * t * f, t * f, 3),
            g.op(f"{what} mean bwd", n, t * f, n * f),
            g.op(f"{what} pow bwd x^1", n, n * f, n * f),
            g.op(f"{what} pow bwd * 2", n, n * f, n * f),
            g.op(f"{what} pow bwd * grad", n, 2 * n * f, n * f),
            g.op(f"{what} x grads sum", n, 2 * n * f, n * f),
            *self._cast(g, f"{what} grad x.float()", n, f, a),
        )

    def linear(self, g: Group, what: str, n: int, k: int) -> None:
        """``nn.Linear(k, n, bias=False)`` over the tokens: its GEMM now, its two backward ones."""
        g.grad(*self.ops.linear(g.layer, what, self.tokens, n, k, False, True))

    def residual(self, g: Group) -> None:
        n, a = self.tokens * self.config.hidden, self.a
        g.forward(g.op("residual add fwd", n, 2 * n * a, n * a, part=REPLICATED))
        g.grad(g.op("residual fork sum", n, 2 * n * a, n * a, part=REPLICATED))

    def rotary(self, g: Group, what: str, n: int) -> None:
        """``view_as_complex(x.float())``, ``* freqs_cis``, ``type_as``: forward and backward."""
        a, f = self.a, F32
        freqs = self.seq * self.config.head_dim // 2 * 2 * F32  # complex64 (seq, head_dim / 2)
        flops = _COMPLEX_MUL_FLOPS
        g.forward(
            *self._cast(g, f"rotary {what} .float()", n, a, f),
            g.op(f"rotary {what} * freqs fwd", n, n * f + freqs, n * f, flops),
            *self._cast(g, f"rotary {what} type_as", n, f, a),
        )
        g.grad(
            *self._cast(g, f"rotary {what} grad type_as", n, a, f),
            g.op(f"rotary {what} grad * conj(freqs)", n, n * f + freqs, n * f, flops),
            *self._cast(g, f"rotary {what} grad .float()", n, f, a),
        )

    def attention_block(self, layer: str, flash: Callable[..., list[Kernel]], attention: str) -> list[Kernel]:
        g, c, a, t = Group(self.ops, layer), self.config, self.a, self.tokens
        d, hd, heads, kv = c.hidden, c.head_dim, c.heads, c.kv_heads
        nq, nk = t * heads * hd, t * kv * hd
        self.norm(g, "attention_norm")
        # the three projections' input gradients summed (autograd runs it after their backward)
        g.grad(*(g.op(f"x grads sum {i}", t * d, 2 * t * d * a, t * d * a) for i in (1, 2)))
        self.linear(g, "q", heads * hd, d)
        self.linear(g, "k", kv * hd, d)
        self.linear(g, "v", kv * hd, d)
        self.rotary(g, "q", nq)
        self.rotary(g, "k", nk)
        if kv < heads:  # repeat_kv: expand + reshape copies k and v to every query head
            for name in ("keys", "values"):
                g.forward(g.op(f"repeat_kv {name} copy", nq, nk * a, nq * a))
                g.grad(g.op(f"repeat_kv {name} grad sum", nq, nq * a, nk * a))
        b, s = self.batch, self.seq  # SDPA sees every query head's keys (repeat_kv's copies)
        backward = flash(self.ops, layer, attention, b, s, s, heads, heads, hd, a, True)
        g.grad(
            g.op("sdpa bwd dot(do, o)", nq, 2 * nq * a, self.batch * heads * self.seq * F32, 2),
            *backward,
            g.op("sdpa bwd convert dq", nq, nq * F32, nq * a),
        )
        self.linear(g, "out", d, heads * hd)
        self.residual(g)
        return g.backward() + self.ops.update_of(layer, c.norm_params + c.attention_params)

    def mlp_block(self, layer: str) -> list[Kernel]:
        g, c, a = Group(self.ops, layer), self.config, self.a
        d, width = c.hidden, c.mlp_hidden
        n = self.tokens * width
        self.norm(g, "ffn_norm")
        g.grad(g.op("x grads sum", self.tokens * d, 2 * self.tokens * d * a, self.tokens * d * a))
        self.linear(g, "gate", width, d)  # w1
        g.forward(g.op("silu fwd", n, n * a, n * a, 4, module=True, special_ops=float(n)))
        g.grad(g.op("silu bwd", n, 2 * n * a, n * a, 6, special_ops=float(n)))
        self.linear(g, "up", width, d)  # w3
        g.forward(g.op("silu * up fwd", n, 2 * n * a, n * a))
        g.grad(g.op("grad * up", n, 2 * n * a, n * a), g.op("grad * silu", n, 2 * n * a, n * a))
        self.linear(g, "down", d, width)  # w2
        self.residual(g)
        return g.backward() + self.ops.update_of(layer, c.norm_params + c.mlp_params)

    def embedding(self) -> list[Kernel]:
        """``tok_embeddings``: a gather; backward ``embedding_dense_backward`` into the table."""
        g, c, t, a = Group(self.ops, EMBEDDING), self.config, self.tokens, self.a
        n = t * c.hidden
        g.forward(g.op("token gather", n, n * a + t * _TOKEN_ID_B, n * a, 0, module=True, cold=n * a))
        g.grad(*embedding_backward(g, "tok_embeddings", c.vocab, t, c.hidden))
        return g.backward() + self.ops.update_of(EMBEDDING, c.vocab * c.hidden)

    def head(self) -> list[list[Kernel]]:
        """The final norm, ``self.output(h).float()`` and ``F.cross_entropy`` on the float32 logits."""
        c, t, a = self.config, self.tokens, self.a
        d, v = c.hidden, c.vocab
        norm = Group(self.ops, "ln_f")
        self.norm(norm, "norm")
        head = Group(self.ops, "lm_head")
        self.linear(head, "logits", v, d)
        n = t * v
        head.forward(*self._cast(head, "logits.float()", n, a, F32))
        head.grad(*self._cast(head, "logits grad", n, F32, a))
        loss = Group(self.ops, "loss")
        loss.grad(*float32_cross_entropy(loss, t, v))
        return [
            norm.backward() + self.ops.update_of("ln_f", c.norm_params),
            head.backward() + self.ops.update_of("lm_head", c.head_params),
            loss.backward(),
        ]
