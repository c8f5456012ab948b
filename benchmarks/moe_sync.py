"""Does dropless routing's device-to-host sync cost more than its latency in an eager MoE stack?

Megatron-Core's dropless all-to-all dispatcher reads each MoE layer's token counts back to the host
in the forward pass (``cuda_sync_point`` "before_ep_alltoall" in token_dispatcher.py), so the host
cannot issue that layer's experts before the GPU has routed its tokens. This times eight layers at
Qwen3-30B-A3B's shapes on one GPU (the compute of one ep=8 rank: 16 local experts of width 768,
top-8, 2,048 rows each per 4,096 tokens; attention 32 heads / 4 KV of 128) forward and backward,
with the counts read back each layer (``sync``) and with them known on the host (``static``, as
token-drop with padding), and the GPU's busy time (the profiler's kernel intervals, unioned).

Measured on this project's lent H100 80GB HBM3 (PyTorch 2.11.0+cu130, 2026-11-28; torch._grouped_mm
refused its test, so the experts ran as 16 GEMMs each, as here), per layer, forward and backward,
two runs on two machines (the second this file as it stands):

    tokens   kernels   wall static     wall sync       GPU busy   sync / static
        64       393   7.80, 8.66 ms   9.99, 9.93 ms   4.41 ms    1.28, 1.15
     4,096       421   11.41, 14.15    11.57, 12.11    9.89       1.01, 0.86
     8,192       424   16.50, 16.57    16.61, 16.68    15.63      1.01, 1.01
    16,384       476   28.57, 28.41    28.74, 28.72    27.68      1.01, 1.01

A tiny op cost the host 10.0 and 17.6 us to issue, a 16-element read-back 17.7 and 20.8 us. From
4,096 tokens on, where the GPU's work per layer exceeds the host's issuing, the sync costs less
than the runs' own spread (0-1 %); it costs 15-28 % only where the host is the bottleneck (64
tokens): after each sync the GPU waits for the next kernel's issue, which parsim's passes already
charge (each kernel takes the longer of its run and its issue), so the sync is not what makes the
published dropless runs slower than parsim.

    python benchmarks/moe_sync.py        # on a machine with a CUDA GPU and PyTorch
"""

from __future__ import annotations

import json
import os
import time

import torch
import torch.nn.functional as F

DEV, DT = "cuda", torch.bfloat16
D, H, KV, HD, E, K, FW = 2048, 32, 4, 128, 16, 8, 768  # hidden, heads, KV heads, head dim, experts...
LAYERS = int(os.environ.get("LAYERS", "8"))
SEQ = 4096  # tokens of one sequence: more tokens are more sequences (the micro-batch size)


def _rms(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return F.rms_norm(x, (x.shape[-1],), w)


class Layer(torch.nn.Module):
    """Attention (fused SDPA) and a top-8 MoE of 16 SwiGLU experts, routing force-balanced."""

    def __init__(self) -> None:
        super().__init__()

        def weight(*shape: int) -> torch.nn.Parameter:
            return torch.nn.Parameter(torch.randn(*shape, device=DEV, dtype=DT) * 0.02)

        def ones(n: int) -> torch.nn.Parameter:
            return torch.nn.Parameter(torch.ones(n, device=DEV, dtype=DT))

        self.n1, self.n2, self.qn, self.kn = ones(D), ones(D), ones(HD), ones(HD)
        self.wqkv, self.wo = weight((H + 2 * KV) * HD, D), weight(D, H * HD)
        self.router, self.w1, self.w2 = weight(E, D), weight(E, D, 2 * FW), weight(E, FW, D)

    def forward(self, x: torch.Tensor, sync: bool, static: list[int]) -> torch.Tensor:
        t = x.shape[0]
        b = max(1, t // SEQ)
        h = _rms(x, self.n1)
        q, k, v = F.linear(h, self.wqkv).split([H * HD, KV * HD, KV * HD], dim=-1)
        q = _rms(q.view(b, t // b, H, HD), self.qn).transpose(1, 2)
        k = _rms(k.view(b, t // b, KV, HD), self.kn).transpose(1, 2)
        v = v.view(b, t // b, KV, HD).transpose(1, 2)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + F.linear(a.transpose(1, 2).reshape(t, H * HD), self.wo)
        h = _rms(x, self.n2)
        probs = F.linear(h, self.router).float().softmax(-1)
        # force-balanced routing: token i to experts (i + j) mod E, j < K, weighted by its probs
        idx = (torch.arange(t, device=DEV)[:, None] + torch.arange(K, device=DEV)[None, :]) % E
        w = probs.gather(1, idx)
        w = (w / w.sum(-1, keepdim=True)).to(DT)
        flat = idx.reshape(-1)
        order = torch.argsort(flat, stable=True)
        counts = torch.bincount(flat, minlength=E)
        splits = counts.tolist() if sync else static  # dropless: the device-to-host read-back
        tok = order // K
        outs = []
        for e, rows in enumerate(h.index_select(0, tok).split(splits)):  # permute, then each expert
            g, u = (rows @ self.w1[e]).chunk(2, dim=-1)
            outs.append((F.silu(g) * u) @ self.w2[e])
        y = torch.cat(outs) * w.reshape(-1)[order, None]
        return x + torch.zeros_like(h).index_add_(0, tok, y)  # unpermute and combine


def _step(layers: torch.nn.ModuleList, static: list[int], x: torch.Tensor, sync: bool) -> None:
    y = x
    for layer in layers:
        y = layer(y, sync, static)
    y.float().pow(2).mean().backward()


def _wall_s(layers: torch.nn.ModuleList, static: list[int], x: torch.Tensor, sync: bool) -> float:
    for _ in range(3):
        _step(layers, static, x, sync)
    torch.cuda.synchronize()
    times = []
    for _ in range(10):
        start = time.perf_counter()
        _step(layers, static, x, sync)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2] / LAYERS


def _gpu_s(
    layers: torch.nn.ModuleList, static: list[int], x: torch.Tensor, sync: bool
) -> tuple[float, float]:
    """The union of the kernels' intervals per layer, and the kernels per layer."""
    from torch.profiler import ProfilerActivity, profile

    _step(layers, static, x, sync)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
        _step(layers, static, x, sync)
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    busy, start, end = 0.0, None, None
    for s, e in sorted((k.time_range.start, k.time_range.end) for k in kernels):
        if end is None or s > end:
            busy += 0.0 if end is None else end - start
            start, end = s, e
        else:
            end = max(end, e)
    busy += 0.0 if end is None else end - start
    return busy * 1e-6 / LAYERS, len(kernels) / LAYERS


def main() -> None:
    print("torch", torch.__version__, torch.cuda.get_device_name())
    rows = []
    for tokens in (64, 4096, 8192, 16384):
        torch.manual_seed(0)
        layers = torch.nn.ModuleList([Layer() for _ in range(LAYERS)])
        static = [tokens * K // E] * E
        x = torch.randn(tokens, D, device=DEV, dtype=DT, requires_grad=True)
        row: dict[str, float] = {"tokens": tokens}
        for sync in (False, True):
            key = "sync" if sync else "static"
            row[f"wall_{key}_ms"] = _wall_s(layers, static, x, sync) * 1e3
            gpu, row["kernels_per_layer"] = _gpu_s(layers, static, x, sync)
            row[f"gpu_{key}_ms"] = gpu * 1e3
        rows.append(row)
        print(json.dumps(row), flush=True)
        del layers, x
        torch.cuda.empty_cache()
    a = torch.randn(16, device=DEV)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(20000):
        a = a * 1.0001
    issue = (time.perf_counter() - start) / 20000
    torch.cuda.synchronize()
    reads = []
    for _ in range(200):
        b = a * 1.0
        start = time.perf_counter()
        b.tolist()
        reads.append(time.perf_counter() - start)
    print(json.dumps({"host_per_tiny_op_us": issue * 1e6, "read_back_us": sorted(reads)[100] * 1e6}))
    print("tokens | kernels/layer | wall static | wall sync | GPU busy | sync / static (ms per layer)")
    for r in rows:
        ratio = r["wall_sync_ms"] / r["wall_static_ms"]
        print(
            f"{r['tokens']:6.0f} | {r['kernels_per_layer']:5.0f} | {r['wall_static_ms']:7.3f} | "
            f"{r['wall_sync_ms']:7.3f} | {r['gpu_static_ms']:7.3f} | {ratio:.2f}"
        )


if __name__ == "__main__":
    main()
