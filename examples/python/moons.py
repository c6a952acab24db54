#!/usr/bin/env python3
"""The moons demo from Python: the same model, data, seed and optimizer as `cannl demo`
(apps/cannl/demo.cpp), so it prints the same losses and the same final train accuracy.

    python3 examples/python/moons.py [--epochs 40] [--lr 0.1]

An MLP 2 -> 64 -> 64 -> 2 (relu) trained with SGD (momentum 0.9) on 1024 half-moons points in
batches of 64; the batch of each step is chosen at run time by a static index.
"""
import argparse

import cannl

SAMPLES = 1024
BATCH = 64


class Mlp:
    """The demo's MLP: parameters named as in C++, so their seeded initial values are equal."""

    def __init__(self):
        kaiming = cannl.Init(kind=cannl.InitKind.Kaiming)
        zero = cannl.Init(kind=cannl.InitKind.Constant)
        self.w1 = cannl.param("w1", output=[64], init=kaiming)
        self.b1 = cannl.param("b1", init=zero)
        self.w2 = cannl.param("w2", output=[64], init=kaiming)
        self.b2 = cannl.param("b2", init=zero)
        self.w3 = cannl.param("w3", output=[2], init=kaiming)
        self.b3 = cannl.param("b3", init=zero)

    def __call__(self, x):
        h1 = cannl.relu(self.w1 * x + self.b1)
        h2 = cannl.relu(self.w2 * h1 + self.b2)
        return self.w3 * h2 + self.b3


def train(epochs=40, lr=0.1, ctx=None, report=print):
    """Trains the demo's MLP; returns (mean loss per epoch, final train accuracy, mlp, step)."""
    data = cannl.datasets.moons(samples=SAMPLES, noise=0.1, seed=42)
    n_batches = SAMPLES // BATCH
    batch = cannl.StaticSymbol(n_batches, "batch")
    x_all = cannl.literal("moons_x", data.features, batch=[n_batches, BATCH], output=[2])
    y_all = cannl.literal("moons_y", data.one_hot(), batch=[n_batches, BATCH], output=[2])
    mlp = Mlp()
    loss = cannl.nn.cross_entropy(mlp(cannl.slice_batch(x_all, batch)), cannl.slice_batch(y_all, batch))

    ctx = ctx or cannl.Context.from_config()
    report(f"cannl demo: MLP 2 -> 64 -> 64 -> 2 on {SAMPLES} half-moons points, batch {BATCH}, "
           f"SGD lr {lr:g} momentum 0.9, backend {ctx.backend_name}")
    step = cannl.train.compile_step(ctx, loss, sgd=cannl.train.SgdOptions(lr=lr, momentum=0.9),
                                    batch=batch, n_batches=n_batches)

    def on_epoch(r):
        if r.epoch % 5 == 0 or r.epoch == 1 or r.epoch == r.epochs:
            report(f"epoch {r.epoch:3d}/{r.epochs}  loss {r.mean_loss:.6f}  {r.steps_per_second:.0f} steps/s")

    losses = cannl.train.fit(step, epochs=epochs, on_epoch=on_epoch)

    x_eval = cannl.literal("moons_eval_x", data.features, batch=[SAMPLES], output=[2])
    logits = mlp(x_eval)
    evaluate = cannl.train.compile_forward(step.ctx, [logits], "evaluate")
    step.ctx.run(evaluate)
    accuracy = cannl.nn.accuracy(step.ctx.get_values(logits), data.labels, 2)
    report(f"final train accuracy: {accuracy:.4f}")
    return losses, accuracy, mlp, step


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--lr", type=float, default=0.1)
    args = parser.parse_args()
    train(args.epochs, args.lr)


if __name__ == "__main__":
    main()
