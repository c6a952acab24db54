"""cannl: a deep-learning compiler in C++20, driven from Python.

A model is a graph of tensor expressions; cannl infers every shape, derives the backward pass,
generates C (or CUDA / OpenCL), compiles and runs it. The Python API mirrors the C++ one:

    import cannl
    ctx = cannl.Context.cpu()
    w = cannl.param("w", output=[2], init=cannl.Init(kind=cannl.InitKind.Kaiming))
    loss = cannl.nn.cross_entropy(w * x + cannl.param("b"), y)     # `*` composes
    step = cannl.train.compile_step(ctx, loss, sgd=cannl.train.SgdOptions(lr=0.1),
                                    batch=batch, n_batches=16)
    cannl.train.fit(step, epochs=40)
    w.numpy()                                  # the trained values, a zero-copy view

Submodules follow the C++ namespaces: cannl.nn, cannl.train, cannl.io, cannl.datasets and
cannl.config. C++ errors arrive as cannl.Error subclasses with the same names and messages.
"""
import sys as _sys

from . import _cannl
from ._cannl import *  # noqa: F401,F403  (the core: Tensor, ops, Context)
from ._cannl import config
from .errors import *  # noqa: F401,F403  (cannl.Error and its subclasses)

_sys.modules[__name__ + ".config"] = config

from . import datasets, errors, io, nn, train  # noqa: E402

# Names of the submodules live only there, as in C++ (cannl::nn::Linear is cannl.nn.Linear).
for _module in (datasets, io, nn, train):
    for _name in _module.__all__:
        globals().pop(_name, None)
del _module, _name

__version__ = "0.1.0"
