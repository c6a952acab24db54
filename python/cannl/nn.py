"""cannl.nn: blocks with parameters, parameter-free functions, losses and GPT-2 (C++ cannl::nn).

    fc = cannl.nn.Linear("fc", [16])
    loss = cannl.nn.cross_entropy(fc(x), y)
"""
from ._cannl import (
    OVER_OUTPUTS, AvgPool2d, BatchNorm, BatchNorm1d, BatchNorm2d, Conv2d, DecoderBlock, DecoderLm,
    DepthwiseSeparableConv2d, Embedding, Gpt2, Gpt2Config, LayerNorm, LearnedPositions, Linear,
    MaxPool2d, Mlp, Mode, MultiHeadAttention, RopeOptions, accuracy, causal_mask, cross_entropy,
    cross_entropy_loss, dropout, find_gpt2_config, gelu, generate, ids_literal, log_softmax,
    one_hot_of_ids, parse_gpt2_config, position_one_hot, read_gpt2_config, rope,
    sinusoidal_positions, softmax)

__all__ = [
    "OVER_OUTPUTS", "AvgPool2d", "BatchNorm", "BatchNorm1d", "BatchNorm2d", "Conv2d", "DecoderBlock",
    "DecoderLm", "DepthwiseSeparableConv2d", "Embedding", "Gpt2", "Gpt2Config", "LayerNorm",
    "LearnedPositions", "Linear", "MaxPool2d", "Mlp", "Mode", "MultiHeadAttention", "RopeOptions",
    "accuracy", "causal_mask", "cross_entropy", "cross_entropy_loss", "dropout", "find_gpt2_config",
    "gelu", "generate", "ids_literal", "log_softmax", "one_hot_of_ids", "parse_gpt2_config",
    "position_one_hot", "read_gpt2_config", "rope", "sinusoidal_positions", "softmax"]
