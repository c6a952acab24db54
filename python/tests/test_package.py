"""The package as installed: the C++ namespaces as submodules, type stubs generated at build
time beside the module, docstrings."""
import importlib.util
import pathlib

import cannl


def test_submodules_mirror_the_cpp_namespaces():
    import cannl.config
    import cannl.nn
    import cannl.train
    assert cannl.nn.Linear and cannl.train.fit and cannl.io.save_checkpoint and cannl.datasets.moons
    assert not hasattr(cannl, "Linear")   # cannl::nn::Linear is cannl.nn.Linear only
    assert cannl.config.get("backend")


def test_type_stubs_sit_beside_the_module():
    module = pathlib.Path(importlib.util.find_spec("cannl._cannl").origin)
    stub = module.parent / "_cannl.pyi"
    assert stub.is_file(), f"no stub at {stub}"
    text = stub.read_text()
    assert "class Tensor" in text and "def einsum(" in text and "def compile_step(" in text


def test_docstrings():
    assert "composes" in cannl.__doc__
    assert "einsum" in cannl.einsum.__doc__
    assert cannl.train.compile_step.__doc__ and cannl.Context.numpy.__doc__
