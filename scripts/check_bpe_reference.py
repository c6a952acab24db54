#!/usr/bin/env python3
"""Checks tests/io/data/bpe_reference.json (written by scripts/bpe_reference.py) against Hugging
Face's GPT-2 tokenizer built from the same data/gpt2-bpe files, so the C++ tokenizer's test ids are
those of the real GPT-2 tokenizer, not only of our own Python encoder.

Special tokens are not parsed (split_special_tokens=True): "<|endoftext|>" inside a text is encoded
as plain characters, as cannl's BpeTokenizer::encode and tiktoken's encode_ordinary do.

Usage: python3 scripts/check_bpe_reference.py [DATA_DIR] [REFERENCE_JSON]
Exit status 0 when every case matches. Needs transformers (pip).
"""
import json
import os
import sys

from transformers import GPT2Tokenizer


def main():
    root = os.path.join(os.path.dirname(__file__), "..")
    data = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "data", "gpt2-bpe")
    ref = sys.argv[2] if len(sys.argv) > 2 else os.path.join(root, "tests", "io", "data", "bpe_reference.json")
    tokenizer = GPT2Tokenizer(vocab=os.path.join(data, "encoder.json"), merges=os.path.join(data, "vocab.bpe"))
    cases = json.load(open(ref, encoding="utf-8"))
    mismatches, ids = 0, 0
    for case in cases:
        got = tokenizer.encode(case["text"], split_special_tokens=True)
        ids += len(got)
        if got != case["ids"]:
            mismatches += 1
            print(f"MISMATCH {case['text'][:40]!r}: transformers {got[:12]} reference {case['ids'][:12]}")
    print(f"{len(cases)} texts, {ids} ids: {mismatches} mismatches with transformers' GPT2Tokenizer")
    sys.exit(1 if mismatches else 0)


if __name__ == "__main__":
    main()
