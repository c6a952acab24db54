#!/usr/bin/env python3
"""makemore from Python: a character-level MLP language model (Bengio et al. 2003, as in
Karpathy's makemore part 2) on data/names/, against the bigram-count baseline.

    python3 examples/python/makemore.py [--epochs 10] [--quick]

Each name is read as the three characters before every position ('.' pads and ends a name); the
model embeds them (a table [10 <- 27] applied to one-hot ids), concatenates the embeddings, and
predicts the next character through a tanh layer of 200. AdamW with a cosine schedule, batches
chosen at run time by a static index. It prints the train and dev loss next to the bigram's dev
loss, and five sampled names (the sampler writes its context straight into the routine's input
buffer through a NumPy view).
"""
import argparse
import pathlib

import numpy as np

import cannl

DATA = pathlib.Path(__file__).resolve().parents[2] / "data" / "names" / "first-names-en.txt"
CONTEXT, EMBED, HIDDEN, BATCH = 3, 10, 200, 64


def load_words():
    words = [w.strip().lower() for w in DATA.read_text().splitlines() if w.strip()]
    chars = sorted({c for w in words for c in w})
    vocab = ["."] + chars
    return words, {c: i for i, c in enumerate(vocab)}, vocab


def examples(words, index):
    """(contexts [n, CONTEXT], next ids [n]) of every position of every word."""
    xs, ys = [], []
    for w in words:
        context = [0] * CONTEXT
        for c in w + ".":
            xs.append(context)
            ys.append(index[c])
            context = context[1:] + [index[c]]
    return np.array(xs, dtype=np.int64), np.array(ys, dtype=np.int64)


def bigram_dev_loss(train, dev, vocab_size):
    counts = np.ones((vocab_size, vocab_size))        # add-one smoothing
    np.add.at(counts, (train[0][:, -1], train[1]), 1)
    probs = counts / counts.sum(axis=1, keepdims=True)
    return float(-np.log(probs[dev[0][:, -1], dev[1]]).mean())


class Mlp:
    def __init__(self, vocab_size):
        self.vocab = vocab_size
        self.table = cannl.param("mm_emb", input=[vocab_size], output=[EMBED],
                                 init=cannl.Init(kind=cannl.InitKind.Normal, stddev=1.0))
        self.fc1 = cannl.nn.Linear("mm_fc1", [HIDDEN])
        self.fc2 = cannl.nn.Linear("mm_fc2", [vocab_size])

    def __call__(self, ids):
        """ids: batch [..., CONTEXT] -> logits batch [...], output [vocab]."""
        embedded = cannl.einsum("...c|d => ...|cd", self.table * cannl.nn.one_hot_of_ids(ids, self.vocab))
        return self.fc2(cannl.tanh(self.fc1(embedded)))


def mean_nll(logits, targets):
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return float(-log_probs[np.arange(len(targets)), targets].mean())


def sample_names(ctx, model, vocab, count=5, seed=7):
    ids = cannl.nn.ids_literal("mm_sample", [0] * CONTEXT, [1, CONTEXT])
    logits = model(ids)
    routine = cannl.train.compile_forward(ctx, [logits], "mm_sample")
    ctx.run(routine)                                  # its output is written once ...
    context_view = ctx.numpy(ids)                     # ... then input and output are viewed in place
    logits_view = ctx.numpy(logits)
    rng = np.random.default_rng(seed)
    names = []
    for _ in range(count):
        context_view[...] = 0
        name = ""
        while len(name) < 20:
            ctx.run(routine)
            p = np.exp(logits_view[0] - logits_view[0].max())
            nxt = int(rng.choice(len(p), p=p / p.sum()))
            if nxt == 0:
                break
            name += vocab[nxt]
            context_view[0, :] = np.roll(context_view[0, :], -1)
            context_view[0, -1] = nxt
        names.append(name)
    return names


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--max-batches", type=int, default=400, help="steps per epoch")
    parser.add_argument("--quick", action="store_true", help="1 epoch of 20 steps (a smoke test)")
    args = parser.parse_args()
    if args.quick:
        args.epochs, args.max_batches = 1, 20

    words, index, vocab = load_words()
    order = np.random.default_rng(42).permutation(len(words))
    n_train, n_dev = int(0.8 * len(words)), int(0.9 * len(words))
    train = examples([words[i] for i in order[:n_train]], index)
    dev = examples([words[i] for i in order[n_train:n_dev]], index)

    n_batches = min(args.max_batches, len(train[1]) // BATCH)
    pick = np.random.default_rng(7).permutation(len(train[1]))[:n_batches * BATCH]
    batch = cannl.StaticSymbol(n_batches, "mm_batch")
    x = cannl.nn.ids_literal("mm_x", train[0][pick].ravel().tolist(), [n_batches, BATCH, CONTEXT])
    y = cannl.nn.ids_literal("mm_y", train[1][pick].tolist(), [n_batches, BATCH])
    model = Mlp(len(vocab))
    loss = cannl.nn.cross_entropy_loss(model(cannl.slice_batch(x, batch)),
                                       cannl.nn.one_hot_of_ids(cannl.slice_batch(y, batch), len(vocab)))
    schedule = cannl.train.LrSchedule(kind=cannl.train.ScheduleKind.Cosine, lr=1e-2,
                                      total_steps=args.epochs * n_batches, min_lr=1e-3)
    step = cannl.train.compile_step(cannl.Context.cpu(), loss, optimizer=cannl.train.Optimizer.AdamW,
                                    adam=cannl.train.AdamOptions(schedule=schedule),
                                    batch=batch, n_batches=n_batches, name="mm_step")
    cannl.train.fit(step, epochs=args.epochs, on_epoch=lambda r: print(
        f"  mlp epoch {r.epoch}/{r.epochs}: train loss {r.mean_loss:.4f} ({r.steps_per_second:.0f} steps/s)"))

    dev_ids = cannl.nn.ids_literal("mm_dev", dev[0].ravel().tolist(), [len(dev[1]), CONTEXT])
    dev_logits = model(dev_ids)
    step.ctx.run(cannl.train.compile_forward(step.ctx, [dev_logits], "mm_dev"))
    dev_loss = mean_nll(dev_logits.numpy(), dev[1])
    print("samples:", ", ".join(sample_names(step.ctx, model, vocab)))
    baseline = bigram_dev_loss(train, dev, len(vocab))
    print(f"mlp dev loss {dev_loss:.4f} vs bigram counts {baseline:.4f}")
    return dev_loss, baseline


if __name__ == "__main__":
    main()
