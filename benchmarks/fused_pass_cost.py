"""Is one fused policy-and-value pass cheaper than SB3's two separate MLPs? (It was not.)

The throughput row's minibatch (512 CartPole observations, separate 64-64 tanh MLPs for the
policy and the value, a 2-logit and a 1-value head) forward and backward as `trainers.fast.manual`
computes it, against the same arithmetic with the two networks fused: the first layers as one
`addmm` of 128 outputs, the second layers as one `baddbmm` over a stack of two, the heads as one
`addmm` over the concatenated hidden states. Thread CPU per call, the minimum over rounds.

    python benchmarks/fused_pass_cost.py --repeats 15
"""

from __future__ import annotations

import argparse
import os

from throughput_floor import fastest  # this folder: the same best-of-N thread-CPU timer

os.environ.setdefault("OMP_NUM_THREADS", "1")
BATCH = 512


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    tanh_backward = torch.ops.aten.tanh_backward
    x = torch.randn(BATCH, 4)
    w1, b1 = torch.randn(128, 4) * 0.3, torch.zeros(128)
    w2, b2 = torch.randn(2, 64, 64) * 0.1, torch.zeros(2, 1, 64)
    heads, head_bias = torch.randn(3, 128) * 0.1, torch.zeros(3)
    separate_nets = [
        (w1[:64].clone(), w2[0].clone(), torch.randn(2, 64)),
        (w1[64:].clone(), w2[1].clone(), torch.randn(1, 64)),
    ]

    def separate() -> list[torch.Tensor]:
        grads = []
        for first, second, head in separate_nets:
            h1 = torch.tanh(torch.addmm(b1[:64], x, first.t()))
            h2 = torch.tanh(torch.addmm(b1[:64], h1, second.t()))
            out = torch.addmm(head_bias[: head.shape[0]], h2, head.t())
            grad = torch.ones_like(out)
            grads += [grad.sum([0], keepdim=True), grad.t().mm(h2)]
            grad = tanh_backward(grad.mm(head), h2)
            grads += [grad.sum([0], keepdim=True), grad.t().mm(h1)]
            grad = tanh_backward(grad.mm(second), h1)
            grads += [grad.sum([0], keepdim=True), grad.t().mm(x)]
        return grads

    def fused() -> list[torch.Tensor]:
        h1 = torch.tanh(torch.addmm(b1, x, w1.t()))
        stacked = h1.view(BATCH, 2, 64).transpose(0, 1)
        h2 = torch.tanh(torch.baddbmm(b2, stacked, w2.transpose(1, 2)))
        flat = h2.transpose(0, 1).reshape(BATCH, 128)
        out = torch.addmm(head_bias, flat, heads.t())
        grad = torch.ones_like(out)
        grads = [grad.sum(0), grad.t().mm(flat)]
        grad2 = tanh_backward(grad.mm(heads).view(BATCH, 2, 64).transpose(0, 1), h2)
        grads += [grad2.sum(1), torch.bmm(grad2.transpose(1, 2), stacked)]
        grad1 = tanh_backward(torch.bmm(grad2, w2).transpose(0, 1).reshape(BATCH, 128), h1)
        return [*grads, grad1.sum(0), grad1.t().mm(x)]

    with torch.no_grad():
        apart = fastest(separate, 50, args.repeats) * 1e6
        together = fastest(fused, 50, args.repeats) * 1e6
    print(f"one thread, min of {args.repeats} rounds, minibatch of {BATCH}")
    print(f"separate policy and value MLPs, forward + backward: {apart:7.1f} us")
    print(f"one fused pass, forward + backward:                 {together:7.1f} us")
    print(f"1-min load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
