#!/usr/bin/env python3
"""A small independent GPT-2 byte-level BPE encoder (the published algorithm: bytes_to_unicode,
the pre-tokenization regex via the `regex` module, rank-ordered merges), used to produce the
reference token ids the C++ tokenizer is tested against.

Usage: python3 scripts/bpe_reference.py [DATA_DIR] > tests/io/data/bpe_reference.json
  DATA_DIR defaults to data/gpt2-bpe (encoder.json + vocab.bpe). Needs `pip install regex`.
Output: a JSON list of {"text": ..., "ids": [...]}: a hand-written test text plus seeded random
strings over many scripts, so every Unicode class the pattern distinguishes is exercised.
"""
import json
import os
import random
import sys

import regex

PATTERN = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")

TEST_TEXT = (
    "Hello world! It's a test: they're here, we've seen 'em, I'm sure you'll say he'd agree.\n"
    "Numbers 12345 and 3.14159, dates 2024-01-31, prices $9.99 & 100%.\n\n"
    "   Leading spaces,\ttabs\t\tand trailing spaces   \n"
    "Unicode: café naïve résumé — “quotes” ‘single’ … 日本語のテキスト 中文 한국어 Ελληνικά Русский текст "
    "العربية ١٢٣ हिन्दी ५ emoji 😀🚀 flags 🇫🇷 math ∑∫√∞ ½ ² Ⅻ\n"
    "Code: def f(x): return x**2 + 1  # comment\n    if a != b and c <= d: pass\n"
    "<|endoftext|> special-looking text, URLs https://example.com/path?q=1&r=2 and e-mail a.b@c.org\n"
    "MiXeD CaSe, ALLCAPS, camelCaseWords, snake_case_words, 'quoted' \"double\" (paren) [bracket] {brace}\n"
    "Apostrophes: don't DON'T rock'n'roll 's 't 're 've 'm 'll 'd ''s\n"
    "Whitespace runs:  two   three    four\n\n\n\u00a0nbsp\u2003em-space\u3000ideographic  \n"
)


def bytes_to_unicode():
    printable = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
                 + list(range(ord("®"), ord("ÿ") + 1)))
    mapping, extra = {}, 0
    for b in range(256):
        if b in printable:
            mapping[b] = chr(b)
        else:
            mapping[b] = chr(256 + extra)
            extra += 1
    return mapping


class Encoder:
    def __init__(self, data_dir):
        with open(os.path.join(data_dir, "encoder.json"), encoding="utf-8") as f:
            self.encoder = json.load(f)
        with open(os.path.join(data_dir, "vocab.bpe"), encoding="utf-8") as f:
            lines = f.read().split("\n")[1:]
        self.ranks = {tuple(line.split()): i for i, line in enumerate(l for l in lines if l)}
        self.byte_map = bytes_to_unicode()

    def bpe(self, word):
        parts = list(word)
        while len(parts) > 1:
            pairs = [(self.ranks.get((a, b), float("inf")), i) for i, (a, b) in
                     enumerate(zip(parts, parts[1:]))]
            rank, index = min(pairs)
            if rank == float("inf"):
                break
            first, second = parts[index], parts[index + 1]
            merged, i = [], 0
            while i < len(parts):
                if i + 1 < len(parts) and parts[i] == first and parts[i + 1] == second:
                    merged.append(first + second)
                    i += 2
                else:
                    merged.append(parts[i])
                    i += 1
            parts = merged
        return parts

    def encode(self, text):
        ids = []
        for piece in PATTERN.findall(text):
            word = "".join(self.byte_map[b] for b in piece.encode("utf-8"))
            ids.extend(self.encoder[token] for token in self.bpe(word))
        return ids


def random_texts(count, seed=1234):
    """Strings over ASCII, Latin-1, Greek, Cyrillic, CJK, Arabic, Devanagari, digits of many
    scripts, symbols, emoji and assorted whitespace."""
    blocks = [(0x20, 0x7E), (0xA0, 0xFF), (0x370, 0x3FF), (0x400, 0x4FF), (0x600, 0x6FF),
              (0x900, 0x97F), (0x2000, 0x206F), (0x2150, 0x218F), (0x3000, 0x303F),
              (0x4E00, 0x4FFF), (0xFF10, 0xFF5A), (0x1F300, 0x1F64F), (0x10400, 0x1044F)]
    spaces = ["\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x85", "\u2028", "  "]
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        chars = []
        for _ in range(rng.randint(1, 60)):
            roll = rng.random()
            if roll < 0.15:
                chars.append(rng.choice(spaces + [" "]))
            elif roll < 0.25:
                chars.append(rng.choice(["'s", "'t", "'re", "'ll", "'", " '", "0", " 7"]))
            else:
                low, high = rng.choice(blocks)
                chars.append(chr(rng.randint(low, high)))
        texts.append("".join(chars))
    return texts


def main():
    data_dir = sys.argv[1] if len(sys.argv) > 1 else "data/gpt2-bpe"
    encoder = Encoder(data_dir)
    cases = [{"text": t, "ids": encoder.encode(t)} for t in [TEST_TEXT] + random_texts(200)]
    json.dump(cases, sys.stdout, ensure_ascii=True, indent=None)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
