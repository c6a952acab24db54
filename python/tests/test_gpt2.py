"""GPT-2 from Python on the small PyTorch fixture of tests/parity/gpt2: logits, greedy
generation equal to PyTorch's continuation, the tokenizer."""
import numpy as np

import cannl


def fixture_numbers(path):
    return [float(v) for v in path.read_text().replace(",", " ").split()]


def test_gpt2_logits_and_greedy_generation_match_pytorch(repo):
    fixture = repo / "tests" / "parity" / "gpt2"
    weights = fixture / "model.safetensors"
    config = cannl.nn.find_gpt2_config(weights)
    assert config.n_embd == 32
    model = cannl.nn.Gpt2(config, cannl.Context.cpu(), window=16)
    model.load_weights(weights)
    ids = [int(v) for v in fixture_numbers(fixture / "ids.txt")]
    last = model.last_logits(ids)
    assert last.shape == (config.vocab_size,)
    np.testing.assert_allclose(last, fixture_numbers(fixture / "last_logits.txt"), rtol=0, atol=1e-4)
    assert model.logits(ids).shape == (len(ids), config.vocab_size)
    greedy = [int(v) for v in fixture_numbers(fixture / "greedy.txt")]
    assert cannl.nn.generate(model, ids, len(greedy)) == greedy
    sampled = cannl.nn.generate(model, ids, 4, greedy=False, top_k=5, seed=7)
    assert sampled == cannl.nn.generate(model, ids, 4, greedy=False, top_k=5, seed=7)


def test_tokenizer_round_trip(repo):
    tokenizer = cannl.io.BpeTokenizer.from_directory(repo / "data" / "gpt2-bpe")
    ids = tokenizer.encode("Hello world")
    assert ids == [15496, 995]
    assert tokenizer.decode(ids) == b"Hello world"
    assert tokenizer.vocab_size == 50257
