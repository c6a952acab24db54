"""A PyTorch model's weights move into cannl through DLPack and cannl's forward agrees with
PyTorch's. With PyTorch installed the model is built live; the committed fixture
(fixtures/torch_mlp.npz, from fixtures/make_torch_fixture.py) checks the same path without it."""
import pathlib
import sys

import numpy as np
import pytest

import cannl

FIXTURES = pathlib.Path(__file__).parent / "fixtures"


def cannl_forward(name, weights, x):
    """cannl's Linear(8) -> tanh -> Linear(3) with the input and the weights taken from any
    arrays (torch tensors through __dlpack__, NumPy arrays); returns the output and its context."""
    fc1 = cannl.nn.Linear(name + "_fc1", [8])
    fc2 = cannl.nn.Linear(name + "_fc2", [3])
    inputs = cannl.literal(name + "_x", x, batch=[x.shape[0]], output=[4])
    y = fc2(cannl.tanh(fc1(inputs)))
    cannl.resolve_shapes([y])
    ctx = cannl.Context.cpu()
    for tensor, value in zip([fc1.w, fc1.b, fc2.w, fc2.b], weights):
        ctx.set_values(tensor, value)
    ctx.run(cannl.train.compile_forward(ctx, [y], name + "_forward"))
    return y, ctx  # the values live in ctx: a tensor does not keep its context alive


def test_torch_weights_through_dlpack_match_torch_forward():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: the fixture test covers it")
    sys.path.insert(0, str(FIXTURES))
    from torch_mlp import make_model
    model, x = make_model()
    with torch.no_grad():
        expected = model(x).numpy()
    weights = [model[0].weight.detach(), model[0].bias.detach(), model[2].weight.detach(),
               model[2].bias.detach()]
    y, ctx = cannl_forward("torch_live", weights, x)
    np.testing.assert_allclose(y.numpy(), expected, rtol=0, atol=2e-6)
    # Out through DLPack as well: torch reads cannl's buffer in place.
    back = torch.from_dlpack(y)
    assert back.shape == (5, 3) and back.dtype == torch.float32
    y.numpy()[0, 0] = 42.0
    assert back[0, 0].item() == 42.0


def test_committed_torch_fixture_matches_through_dlpack():
    data = np.load(FIXTURES / "torch_mlp.npz")
    weights = [data["fc1_w"], data["fc1_b"], data["fc2_w"], data["fc2_b"]]
    y, ctx = cannl_forward("torch_fixture", weights, data["x"])
    np.testing.assert_allclose(y.numpy(), data["out"], rtol=0, atol=2e-6)
