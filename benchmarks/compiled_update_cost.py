"""Does `torch.compile` make the throughput row's minibatch step cheaper on CPU? (It did not.)

The clipped-surrogate loss of the throughput row's minibatch (512 CartPole observations,
separate 64-64 tanh MLPs for the policy and the value) with its gradients by autograd, eager
against `torch.compile(fullgraph=True)` (inductor's C++ kernels, forward and backward through
AOTAutograd). Prints the first compiled call's time (compile included; run twice to see it with
inductor's on-disk cache warm) and the per-call thread CPU of both, the minimum over rounds.

    python benchmarks/compiled_update_cost.py --repeats 10   # twice: cold, then cached compile
"""

from __future__ import annotations

import argparse
import os
import time

from throughput_floor import fastest  # this folder: the same best-of-N thread-CPU timer

os.environ.setdefault("OMP_NUM_THREADS", "1")
BATCH = 512


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    import torch
    from torch.nn.functional import linear, mse_loss

    torch.set_num_threads(1)
    torch.manual_seed(0)
    x, actions = torch.randn(BATCH, 4), torch.randint(0, 2, (BATCH,))
    old, advantages, returns = (
        torch.randn(BATCH) * 0.1 - 0.7,
        torch.randn(BATCH),
        torch.randn(BATCH),
    )

    def mlp(outputs: int) -> list[torch.Tensor]:
        return [
            torch.randn(64, 4) * 0.3, torch.zeros(64), torch.randn(64, 64) * 0.1,
            torch.zeros(64), torch.randn(outputs, 64) * 0.1, torch.zeros(outputs),
        ]  # fmt: skip

    params = [p.requires_grad_() for p in mlp(2) + mlp(1)]

    def loss(params: list[torch.Tensor]) -> torch.Tensor:
        pw1, pb1, pw2, pb2, pw3, pb3, vw1, vb1, vw2, vb2, vw3, vb3 = params
        hidden = torch.tanh(linear(torch.tanh(linear(x, pw1, pb1)), pw2, pb2))
        logits = linear(hidden, pw3, pb3)
        logits = logits - logits.logsumexp(-1, keepdim=True)
        log_prob = logits.gather(-1, actions.unsqueeze(-1)).squeeze(-1)
        value = linear(torch.tanh(linear(torch.tanh(linear(x, vw1, vb1)), vw2, vb2)), vw3, vb3)
        ratio = (log_prob - old).exp()
        surrogate = torch.minimum(ratio * advantages, ratio.clamp(0.8, 1.2) * advantages)
        return -surrogate.mean() + 0.5 * mse_loss(returns, value.flatten())

    compiled = torch.compile(loss, fullgraph=True)
    eager = fastest(lambda: torch.autograd.grad(loss(params), params), 50, args.repeats)
    started = time.perf_counter()
    torch.autograd.grad(compiled(params), params)
    first = time.perf_counter() - started
    fast = fastest(lambda: torch.autograd.grad(compiled(params), params), 50, args.repeats)
    print(f"one thread, min of {args.repeats} rounds, minibatch of {BATCH}")
    print(f"eager loss + autograd gradients:    {eager * 1e6:7.1f} us")
    print(f"compiled loss + gradients:          {fast * 1e6:7.1f} us")
    print(f"first compiled call (compile):      {first:7.2f} s")
    print(f"1-min load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
