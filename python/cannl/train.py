"""cannl.train: compiling a training step and the fit loop (C++ cannl::train, cannl::nn options).

    step = cannl.train.compile_step(ctx, loss, sgd=cannl.train.SgdOptions(lr=0.1, momentum=0.9),
                                    batch=batch, n_batches=16)
    losses = cannl.train.fit(step, epochs=40)
"""
from ._cannl import (
    AdamOptions, EpochReport, LrSchedule, Optimizer, ScheduleKind, SgdOptions, TrainingStep,
    compile_forward, compile_step, fit)

__all__ = ["AdamOptions", "EpochReport", "LrSchedule", "Optimizer", "ScheduleKind", "SgdOptions",
           "TrainingStep", "compile_forward", "compile_step", "fit"]
