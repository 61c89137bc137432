#!/usr/bin/python3
"""bench_torch: the same network in PyTorch (Debian's python3-torch, oneDNN),
for bench_model's side-by-side figures.

The architecture of nn/model.h (stem conv 3x3 + BN + ReLU, residual
blocks, policy and value heads, NCHW as PyTorch does): forward in eval mode
(batch norm not folded: PyTorch's own inference path) at the batch sizes
given, and an Adam training step (batch statistics, the same losses and L2)
at batch 256, for 1 and 2 threads. One thread is timed in thread CPU time,
two in wall time, as bench_model does; each figure is the median of 5
repetitions of >= 40 ms.

Prints one line per figure, for bench_model to read:
  forward THREADS B POSITIONS_PER_S
  train THREADS B SAMPLES_PER_S
usage: bench_torch.py BLOCKS FILTERS [B ...]"""
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, f):
        super().__init__()
        self.conv1 = nn.Conv2d(f, f, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(f)
        self.conv2 = nn.Conv2d(f, f, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(f)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + x)


class Net(nn.Module):
    """model.h's network: C planes on H x W, A actions, Pf/Vf/Vh heads."""

    def __init__(self, blocks, f, c=7, h=5, w=5, a=625, pf=2, vf=1, vh=64):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(c, f, 3, padding=1, bias=False),
                                  nn.BatchNorm2d(f), nn.ReLU())
        self.blocks = nn.Sequential(*[Block(f) for _ in range(blocks)])
        self.pconv = nn.Sequential(nn.Conv2d(f, pf, 1, bias=False), nn.BatchNorm2d(pf),
                                   nn.ReLU())
        self.pfc = nn.Linear(pf * h * w, a)
        self.vconv = nn.Sequential(nn.Conv2d(f, vf, 1, bias=False), nn.BatchNorm2d(vf),
                                   nn.ReLU())
        self.vfc1 = nn.Linear(vf * h * w, vh)
        self.vfc2 = nn.Linear(vh, 1)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        p = self.pfc(self.pconv(x).flatten(1))
        v = torch.tanh(self.vfc2(F.relu(self.vfc1(self.vconv(x).flatten(1)))))
        return p, v.squeeze(1)


def measure(fn, wall):
    """Median seconds per call over 5 repetitions of >= 40 ms."""
    clock = time.perf_counter if wall else time.thread_time
    fn()
    t0 = clock()
    fn()
    dt = max(clock() - t0, 1e-7)
    iters = max(1, int(0.04 / dt) + 1)
    runs = []
    for _ in range(5):
        t0 = clock()
        for _ in range(iters):
            fn()
        runs.append((clock() - t0) / iters)
    return statistics.median(runs)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    blocks, filters = int(sys.argv[1]), int(sys.argv[2])
    batches = [int(b) for b in sys.argv[3:]] or [1, 8, 32, 64, 256]
    torch.manual_seed(1)
    net = Net(blocks, filters)
    for threads in (1, 2):
        torch.set_num_threads(threads)
        net.eval()
        with torch.inference_mode():
            for b in batches:
                x = (torch.rand(b, 7, 5, 5) < 1 / 3).float()
                sec = measure(lambda: net(x), threads > 1)
                print(f"forward {threads} {b} {b / sec:.1f}", flush=True)
        # An Adam step at batch 256: the losses of model.h (value MSE, policy
        # cross-entropy, L2 1e-4 on the weights).
        net.train()
        opt = torch.optim.Adam(net.parameters(), lr=1e-3)
        tb = 256
        x = (torch.rand(tb, 7, 5, 5) < 1 / 3).float()
        pi = torch.zeros(tb, 625)
        pi[torch.arange(tb), (torch.arange(tb) * 37) % 625] = 1
        z = (torch.arange(tb) % 3 - 1).float()
        weights = [p for n, p in net.named_parameters() if p.dim() > 1]

        def step():
            opt.zero_grad()
            p, v = net(x)
            loss = ((z - v) ** 2).mean() - (pi * F.log_softmax(p, 1)).sum(1).mean()
            loss = loss + 1e-4 * sum((w * w).sum() for w in weights)
            loss.backward()
            opt.step()

        sec = measure(step, threads > 1)
        print(f"train {threads} {tb} {tb / sec:.1f}", flush=True)


if __name__ == "__main__":
    main()
