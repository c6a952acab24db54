"""cannl.io: checkpoints, safetensors files and GPT-2's tokenizer (C++ cannl::io).

    entries = cannl.io.checkpoint_entries("model", [loss])
    cannl.io.save_checkpoint(step.ctx, entries, "ckpt.safetensors")
"""
from ._cannl import (
    BpeTokenizer, CheckpointEntry, SafetensorsFile, checkpoint_entries, restore_checkpoint,
    save_checkpoint)

__all__ = ["BpeTokenizer", "CheckpointEntry", "SafetensorsFile", "checkpoint_entries",
           "restore_checkpoint", "save_checkpoint"]
