"""A Hugging Face GPT-2 training step as eager PyTorch runs it under autocast: every kernel.

Fused training code (Megatron-LM, FlashAttention's own GPT, llm.c) runs a block as a dozen kernels in
the activations' type. Hugging Face's ``modeling_gpt2.py`` in eager PyTorch with ``torch.autocast``
runs the Python it is written in, one kernel per tensor op, each op in the type autocast gives it
(``code=hf``). What that adds, mechanism by mechanism:

- autocast runs ``layer_norm``, ``softmax``, ``log_softmax``, ``cross_entropy`` and ``pow`` in float32
  (PyTorch's autocast op reference, "CUDA ops that can autocast to float32"): the residual stream
  stays float32 (the embeddings are float32 and ``bfloat16 + float32`` is float32), every matrix
  layer first casts its input, its weight and its bias (``Conv1D`` is ``torch.addmm(bias, x, W)``),
  and the weight's and bias's gradients are cast back;
- ``gelu_new`` (``NewGELUActivation``) is eight tensor ops of the tanh formula; its ``pow(x, 3)``
  makes the rest of it float32, so the MLP's widest tensor is written in float32 several times, and
  its backward is fifteen kernels (the product rule, ``tanh_backward``, ``pow_backward``, the casts
  autograd adds back to each input's type and the sums of the three paths into ``x``);
- attention with ``attn_implementation="eager"`` (``attention=unfused``): ``matmul(q, k^T)`` (q and
  k copied to be batched), division by a ``torch.full`` scale, ``torch.where`` with the causal mask,
  ``softmax`` in float32 (a cast in, a cast out), dropout, ``matmul`` with v (v copied) and the heads
  merged by a copy: the batch x heads x S x S scores go through memory eight times forward; with
  SDPA (``attention=flash``) one FlashAttention kernel forward and three backward;
- ``dropout`` (``embd_pdrop``, ``attn_pdrop``, ``resid_pdrop``, 0.1 when the model is in train
  mode): a kernel that writes the kept values and a byte of mask per element, and one backward;
- the loss (``ForCausalLMLoss``): ``logits.float()`` then ``cross_entropy`` (``log_softmax`` and
  ``nll_loss``) over batch x seq x vocabulary logits in float32 (1.6 GB at 8 x 1024 x 50,257); its
  backward zero-fills that gradient, scatters into it, runs ``log_softmax``'s backward and casts back;
- the embedding's backward (``embedding_dense_backward``: zero the table's gradient, sort the ids,
  sum each id's rows) and the tied LM head's gradient added into the token table's.

Backward kernels are issued by the autograd engine in C++ (``primitive``); forward module calls pay
the framework's ``op_cycles``. Only the GPT-2 family (LayerNorm, GELU, learned positions, fused QKV)
is written here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from parsim.base.errors import ParsimError
from parsim.workloads.base import Kernel
from parsim.workloads.llms import LlmConfig
from parsim.workloads.transformer_ops import Ops, block_layers

F32 = 4  # bytes of a float32: what autocast keeps the norms, the residual stream and the loss in
_MASK = 1  # a dropout mask: one bool byte per element
_TOKEN_ID_B = 8  # int64 token ids
_SORT_KERNELS = 4  # a CUB radix sort of the ids: histogram, then a scan and a scatter per pass pair
GELU_NEW_FORWARD = 9  # autocast's cast of x to float32, then pow, *, +, *, tanh, +, 0.5 * x, *


class Group:
    """One layer group's kernels: the forward ones onto ``ops.forward``; the backward ones collected
    per forward op and run in reverse order (``backward``)."""

    def __init__(self, ops: Ops, layer: str):
        self.ops, self.layer = ops, layer
        self._chunks: list[list[Kernel]] = []

    def op(
        self,
        what: str,
        n: float,
        read: float,
        written: float,
        flops: float = 1.0,
        module: bool = False,
        **extra: Any,
    ) -> Kernel:
        """A streaming kernel over ``n`` elements (``flops`` each): a primitive op unless ``module``."""
        return self.ops.kernel(
            self.layer, what, flops * n, read, written, int(n), primitive=not module, **extra
        )

    def forward(self, *kernels: Kernel) -> None:
        self.ops.forward.extend(kernels)

    def grad(self, *kernels: Kernel) -> None:
        """The backward kernels of the forward op just added, in the order autograd runs them."""
        self._chunks.append(list(kernels))

    def backward(self) -> list[Kernel]:
        return [k for chunk in reversed(self._chunks) for k in chunk]


def float32_cross_entropy(loss: Group, t: int, v: int) -> list[Kernel]:
    """``F.cross_entropy`` over ``t`` float32 rows of ``v`` logits: ``log_softmax`` and ``nll_loss``
    forward now; returns the backward (the seed, the zero-filled gradient, the scatter, then
    ``log_softmax``'s backward)."""
    n = t * v
    loss.forward(
        loss.op("log_softmax fwd", n, n * F32, n * F32, 4, module=True, special_ops=float(n)),
        loss.op("nll_loss fwd", t, t * (F32 + _TOKEN_ID_B), F32),
    )
    return [
        loss.op("loss grad seed", 1, 0, F32),
        loss.op("nll_loss bwd zero", n, 0, n * F32),
        loss.op("nll_loss bwd scatter", t, t * _TOKEN_ID_B, t * F32),
        loss.op("log_softmax bwd", n, 2 * n * F32, n * F32, 3, special_ops=float(n)),
    ]


def embedding_backward(g: Group, table: str, rows: int, t: int, d: int) -> list[Kernel]:
    """``embedding_dense_backward`` of a ``rows x d`` table over ``t`` ids: zero the float32
    gradient, sort the ids, find each id's segment, sum each segment's rows into its row."""
    ids = t * _TOKEN_ID_B
    return [
        g.op(f"{table} grad zero", rows * d, 0, rows * d * F32),
        *(g.op(f"{table} ids sort {i}", t, 2 * ids, 2 * ids) for i in range(_SORT_KERNELS)),
        g.op(f"{table} segment offsets", t, 2 * ids, ids),
        g.op(f"{table} partial sums", t * d, t * d * F32 + ids, t * d * F32),
        g.op(f"{table} sum into rows", t * d, 2 * t * d * F32, t * d * F32),
    ]


def train_step(
    ops: Ops,
    flash: Callable[..., list[Kernel]],
    config: LlmConfig,
    batch: int,
    seq: int,
    attention: str,
    dropout: bool,
) -> list[Kernel]:
    """Forward kernels onto ``ops.forward``; returns the backward pass with the optimizer's updates.

    ``flash`` is ``transformer._attention`` (SDPA's fused kernel); ``dropout``: the model is in train
    mode, its three dropouts at work."""
    if (
        config.norm != "layernorm"
        or config.mlp != "gelu"
        or config.position != "learned"
        or not config.fused_qkv
    ):
        raise ParsimError(f"code=hf: training is modelled for the GPT-2 family only, not {config.name}")
    step = _Step(ops, config, batch * seq, dropout)
    groups = [step.embedding()]
    for i in range(config.layers):
        attn, mlp = block_layers(i)
        groups.append(step.attention_block(attn, flash, batch, seq, attention))
        groups.append(step.mlp_block(mlp))
    groups += step.head()
    return [k for group in reversed(groups) for k in group]


class _Step:
    def __init__(self, ops: Ops, config: LlmConfig, tokens: int, dropout: bool):
        self.ops, self.config, self.tokens, self.dropout = ops, config, tokens, dropout
        self.low = ops.size  # autocast's matrix type (bfloat16: 2 bytes)
        self.autocast = ops.numerics.casts
        self.wide = F32 if self.autocast else self.low  # the float32 islands' type

    def drop(self, g: Group, what: str, n: int, size: float) -> None:
        """``nn.Dropout`` in train mode: kept values and a bool mask out; backward: mask x gradient."""
        if self.dropout:
            g.forward(g.op(f"{what} dropout fwd", n, n * size, n * (size + _MASK), 2, module=True))
            g.grad(g.op(f"{what} dropout bwd", n, n * (size + _MASK), n * size, 2))

    def cast(self, g: Group, what: str, n: float, source: float, target: float) -> Kernel:
        return g.op(f"{what} cast", n, n * source, n * target)

    def layer_norm(self, g: Group, what: str) -> None:
        """``F.layer_norm`` in float32: one kernel; backward: the input's gradient, then the scale's
        and shift's (a column reduction)."""
        n, d, w = self.tokens * self.config.hidden, self.config.hidden, self.wide
        g.forward(g.op(f"{what} fwd", n, n * w + 2 * d * w, n * w + 2 * self.tokens * F32, 5, module=True))
        g.grad(
            g.op(f"{what} bwd-data", n, 2 * n * w + 2 * self.tokens * F32, n * w, 8),
            g.op(f"{what} bwd-weight", n, 2 * n * w, 2 * d * F32, 2),
        )

    def conv1d(self, g: Group, what: str, k: int, n: int, x_size: float) -> None:
        """``Conv1D``: ``torch.addmm(bias, x, W)`` over ``x[tokens, k]``; autocast casts x (when it is
        not already of the matrix type), W and the bias first; backward: the bias's sum, the two GEMMs,
        and the casts of the three gradients back to their tensors' types."""
        m, a, ops = self.tokens, self.low, self.ops
        weights = k * n + n
        casts = []
        if self.autocast:
            if x_size != a:
                casts.append(self.cast(g, f"{what} input", m * k, x_size, a))
            casts += [self.cast(g, f"{what} weight", k * n, F32, a), self.cast(g, f"{what} bias", n, F32, a)]
        g.forward(*casts)
        g.forward(
            ops.gemm(g.layer, f"{what} fwd", m, n, k, m * k * a + weights * a, m * n * a, cold=weights * a)
        )
        grads = [
            g.op(f"{what} bwd-bias", m * n, m * n * a, n * a),
            ops.gemm(g.layer, f"{what} bwd-data", m, k, n, m * n * a + k * n * a, m * k * a, primitive=True),
            ops.gemm(g.layer, f"{what} bwd-weight", k, n, m, (m * k + m * n) * a, k * n * a, primitive=True),
        ]
        if self.autocast:
            grads += [
                self.cast(g, f"{what} weight grad", k * n, a, F32),
                self.cast(g, f"{what} bias grad", n, a, F32),
            ]
            if x_size != a:
                grads.append(self.cast(g, f"{what} input grad", m * k, a, x_size))
        g.grad(*grads)

    def residual(self, g: Group) -> None:
        """``branch + residual``: a bfloat16 branch onto the float32 stream; backward: the gradient cast
        to the branch's type, and the stream's two gradients summed where it forks (at the norm)."""
        n, a, w = self.tokens * self.config.hidden, self.low, self.wide
        g.forward(g.op("residual add fwd", n, n * (a + w), n * w))
        grads = [g.op("residual fork sum", n, 2 * n * w, n * w)]
        if w != a:
            grads.append(self.cast(g, "residual branch grad", n, w, a))
        g.grad(*grads)

    def embedding(self) -> list[Kernel]:
        """wte and wpe gathers (float32 tables), their sum, dropout; backward: ``embedding_dense_backward``
        of each table and the sum over the batch of the broadcast positions' gradient."""
        g, c, t = Group(self.ops, "embed"), self.config, self.tokens
        d, w = c.hidden, F32  # embeddings are not autocast: the tables' float32
        n = t * d
        g.forward(g.op("token gather", n, n * w + t * _TOKEN_ID_B, n * w, 0, module=True, cold=n * w))
        g.forward(g.op("positions arange", t, 0, t * _TOKEN_ID_B, 1))
        g.forward(g.op("position gather", n, n * w, n * w, 0, module=True))
        g.forward(g.op("position add fwd", n, 2 * n * w, n * w))
        grads = [g.op("position grad batch sum", n, n * w, n * w)]
        for table, rows in (("wte", c.vocab), ("wpe", c.position_rows)):
            grads += embedding_backward(g, table, rows, t, d)
        g.grad(*grads)
        self.drop(g, "embed", n, w)
        return g.backward() + self.ops.update_of("embed", (c.vocab + c.position_rows) * d)

    def attention_block(
        self, layer: str, flash: Callable[..., list[Kernel]], batch: int, seq: int, attention: str
    ) -> list[Kernel]:
        g, c = Group(self.ops, layer), self.config
        d, hd, heads = c.hidden, c.head_dim, c.heads
        self.layer_norm(g, "ln_1")
        self.conv1d(g, "c_attn", d, 3 * d, self.wide)
        if attention == "unfused":
            self.eager_attention(g, batch, seq, heads, hd)
        else:
            # SDPA's FlashAttention kernel (forward now); its backward is three kernels around the main one
            backward = flash(self.ops, layer, attention, batch, seq, seq, heads, heads, hd, self.low, True)
            q = self.tokens * d
            g.grad(
                g.op("sdpa bwd split cat", 3 * q, 3 * q * self.low, 3 * q * self.low),  # dq, dk, dv -> c_attn
                g.op("sdpa bwd dot(do, o)", q, 2 * q * self.low, batch * heads * seq * F32, 2),
                *backward,
                g.op("sdpa bwd convert dq", q, q * F32, q * self.low),
            )
        self.conv1d(g, "c_proj", d, d, self.low)
        self.drop(g, "resid", self.tokens * d, self.low)
        self.residual(g)
        return g.backward() + self.ops.update_of(layer, c.norm_params + c.attention_params)

    def eager_attention(self, g: Group, batch: int, seq: int, heads: int, hd: int) -> None:
        """``GPT2Attention._attn`` (``eager_attention_forward``) over the whole S x S square."""
        a, w, ops, layer = self.low, self.wide, self.ops, g.layer
        bh, q = batch * heads, self.tokens * heads * hd
        n = bh * seq * seq  # scores
        g.forward(g.op("q copy", q, q * a, q * a), g.op("k copy", q, q * a, q * a))
        g.grad(g.op("split cat bwd", 3 * q, 3 * q * a, 3 * q * a))  # dq, dk, dv into c_attn's output
        g.forward(ops.gemm(layer, "scores q@kT fwd", bh * seq, seq, hd, 2 * q * a, n * a))
        g.grad(
            ops.gemm(layer, "dq = ds@k bwd", bh * seq, hd, seq, n * a + q * a, q * a, primitive=True),
            ops.gemm(layer, "dk = dsT@q bwd", bh * seq, hd, seq, n * a + q * a, q * a, primitive=True),
        )
        g.forward(g.op("scale full", 1, 0, a), g.op("scores / scale fwd", n, n * a, n * a))
        g.grad(g.op("scores / scale bwd", n, n * a, n * a))
        g.forward(g.op("mask full", 1, 0, a), g.op("causal where fwd", n, n * (a + _MASK), n * a))
        g.grad(g.op("causal where bwd", n, n * (a + _MASK), n * a))
        g.forward(self.cast(g, "softmax input", n, a, w))
        g.grad(self.cast(g, "softmax input grad", n, w, a))
        g.forward(g.op("softmax fwd", n, n * w, n * w, 5, module=True, special_ops=float(n)))
        g.grad(g.op("softmax bwd", n, 2 * n * w, n * w, 3))
        g.forward(self.cast(g, "probs", n, w, a))
        g.grad(self.cast(g, "probs grad", n, a, w))
        self.drop(g, "attn", n, a)
        g.forward(
            g.op("v copy", q, q * a, q * a),
            ops.gemm(layer, "probs@v fwd", bh * seq, hd, seq, n * a + q * a, q * a),
        )
        g.grad(
            g.op("grad heads copy", q, q * a, q * a),  # the merged heads' gradient, batched for bmm
            ops.gemm(layer, "dp = do@vT bwd", bh * seq, seq, hd, 2 * q * a, n * a, primitive=True),
            ops.gemm(layer, "dv = pT@do bwd", bh * seq, hd, seq, n * a + q * a, q * a, primitive=True),
        )
        g.forward(g.op("merge heads copy", q, q * a, q * a))

    def mlp_block(self, layer: str) -> list[Kernel]:
        g, c = Group(self.ops, layer), self.config
        d, width = c.hidden, c.mlp_hidden
        self.layer_norm(g, "ln_2")
        self.conv1d(g, "c_fc", d, width, self.wide)
        self.gelu_new(g, self.tokens * width)
        self.conv1d(g, "c_proj", width, d, self.wide)
        self.drop(g, "resid", self.tokens * d, self.low)
        self.residual(g)
        return g.backward() + self.ops.update_of(layer, c.norm_params + c.mlp_params)

    def gelu_new(self, g: Group, n: int) -> None:
        """``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * pow(x, 3))))`` on the bfloat16 ``x``:
        autocast runs ``pow`` in float32, and float32 propagates to every op after it but ``0.5 * x``."""
        a, w = self.low, self.wide
        wide = ("* 0.044715", "x + ", "* sqrt(2/pi)", "tanh", "1 + ")
        first = [self.cast(g, "gelu x", n, a, w)] if w != a else []
        g.forward(*first, g.op("gelu pow fwd", n, n * w, n * w, 2, module=True))
        tanh = {"tanh": float(n)}
        g.forward(
            *(
                g.op(
                    f"gelu {op} fwd",
                    n,
                    n * (w + (a if op == "x + " else 0)),
                    n * w,
                    special_ops=tanh.get(op, 0.0),
                )
                for op in wide
            )
        )
        g.forward(g.op("gelu 0.5 * x fwd", n, n * a, n * a), g.op("gelu product fwd", n, n * (a + w), n * w))
        product_rule = [
            g.op("gelu grad * f", n, 2 * n * w, n * w),
            g.op("gelu grad * g", n, n * (a + w), n * w),
        ]
        to_low = (
            [self.cast(g, "gelu grad g", n, w, a), self.cast(g, "gelu grad x (sum)", n, w, a)]
            if w != a
            else []
        )
        back_x = [self.cast(g, "gelu grad x (pow)", n, w, a)] if w != a else []
        g.grad(
            *product_rule,
            g.op("gelu tanh_backward", n, 2 * n * w, n * w, 3),
            g.op("gelu grad * sqrt(2/pi)", n, n * w, n * w),
            g.op("gelu grad * 0.044715", n, n * w, n * w),
            g.op("gelu pow_backward x^2", n, n * w, n * w),
            g.op("gelu pow_backward * 3", n, n * w, n * w),
            g.op("gelu pow_backward * grad", n, 2 * n * w, n * w),
            *to_low,
            *back_x,
            g.op("gelu grad 0.5", n, n * a, n * a),
            g.op("gelu grad x sum 1", n, 2 * n * a, n * a),
            g.op("gelu grad x sum 2", n, 2 * n * a, n * a),
        )

    def head(self) -> list[list[Kernel]]:
        """ln_f, the tied LM head over every token, and the float32 cross-entropy."""
        c, t, a, w = self.config, self.tokens, self.low, self.wide
        d, v = c.hidden, c.vocab
        norm = Group(self.ops, "ln_f")
        self.layer_norm(norm, "norm")
        head = Group(self.ops, "lm_head")
        casts = (
            [self.cast(head, "input", t * d, w, a), self.cast(head, "weight", v * d, F32, a)]
            if w != a
            else []
        )
        head.forward(*casts)
        head.forward(
            self.ops.gemm("lm_head", "logits fwd", t, v, d, (t * d + v * d) * a, t * v * a, cold=v * d * a)
        )
        grads = [
            self.ops.gemm(
                "lm_head", "logits bwd-data", t, d, v, (t * v + v * d) * a, t * d * a, primitive=True
            ),
            self.ops.gemm(
                "lm_head", "logits bwd-weight", v, d, t, (t * v + t * d) * a, v * d * a, primitive=True
            ),
        ]
        if w != a:
            grads += [
                self.cast(head, "weight grad", v * d, a, F32),
                self.cast(head, "input grad", t * d, a, w),
            ]
        grads.append(head.op("tied grad into wte", v * d, 2 * v * d * F32, v * d * F32))
        head.grad(*grads)
        loss = Group(self.ops, "loss")
        n = t * v
        labels = [
            loss.op(f"labels {op}", t, t * _TOKEN_ID_B, t * _TOKEN_ID_B)
            for op in ("pad fill", "pad copy", "shift")
        ]
        loss.forward(*([self.cast(loss, "logits.float()", n, a, F32)] if a != F32 else []), *labels)
        loss.grad(
            *float32_cross_entropy(loss, t, v),
            *([self.cast(loss, "logits grad", n, F32, a)] if a != F32 else []),
        )
        return [
            norm.backward() + self.ops.update_of("ln_f", c.norm_params),
            head.backward() + self.ops.update_of("lm_head", c.head_params),
            loss.backward(),
        ]
