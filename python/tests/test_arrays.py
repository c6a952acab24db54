"""Values to and from NumPy and DLPack: zero-copy views on CPU contexts (tested by writing
through them), copies where the memory does not allow a view, any array in."""
import numpy as np
import pytest

import cannl


def doubled(ctx, name, values):
    """A literal x and the routine computing 2 * x, compiled and run in ctx."""
    x = cannl.literal(name, values)
    y = x * 2.0
    routine = cannl.train.compile_forward(ctx, [y], name + "_double")
    ctx.run(routine)
    return x, y, routine


@pytest.mark.parametrize("make_ctx", [cannl.Context.cpu, cannl.Context.interpreter, cannl.Context.gpu_emulator])
def test_numpy_view_is_zero_copy_both_ways(make_ctx):
    ctx = make_ctx()
    x, y, routine = doubled(ctx, "view_x", np.array([1.0, 2.0, 3.0]))
    assert ctx.is_view(x)
    view = ctx.numpy(x)
    assert view.dtype == np.float32 and view.shape == (3,)
    assert np.array_equal(ctx.numpy(y), [2.0, 4.0, 6.0])
    view[1] = 10.0                                   # write through the view ...
    assert ctx.get_values(x)[1] == 10.0               # ... the context sees it ...
    ctx.run(routine)
    assert np.array_equal(ctx.numpy(y), [2.0, 20.0, 6.0])  # ... and so does the next run
    again = ctx.numpy(x)
    assert np.shares_memory(view, again)
    ctx.numpy(y)[0] = -1.0
    assert ctx.get_values(y)[0] == -1.0


def test_view_keeps_its_context_alive():
    ctx = cannl.Context.cpu()
    x, y, _ = doubled(ctx, "alive_x", np.arange(4.0))
    view = ctx.numpy(y)
    del ctx
    import gc
    gc.collect()
    assert np.array_equal(view, [0.0, 2.0, 4.0, 6.0])


def test_tensor_remembers_its_context_for_numpy_and_dlpack():
    ctx = cannl.Context.cpu()
    x, y, _ = doubled(ctx, "dl_x", np.array([[1.0, 2.0], [3.0, 4.0]]))
    assert np.array_equal(y.numpy(), [[2.0, 4.0], [6.0, 8.0]])
    assert np.array_equal(np.asarray(y), y.numpy())
    assert y.__dlpack_device__() == (1, 0)
    through_dlpack = np.from_dlpack(y)
    assert np.shares_memory(through_dlpack, ctx.numpy(y))   # the capsule shares the buffer
    ctx.numpy(y)[0, 0] = 5.0
    assert through_dlpack[0, 0] == 5.0
    buffer = memoryview(y)                           # the buffer protocol: the same memory
    assert buffer.format == "f" and buffer.shape == (2, 2)
    assert np.shares_memory(np.asarray(buffer), ctx.numpy(y))
    if through_dlpack.flags.writeable:               # NumPy >= 2 (1.x imports DLPack read-only)
        through_dlpack[0, 1] = 7.0
        assert ctx.get_values(y)[0, 1] == 7.0


def test_dlpack_in_from_numpy_and_any_dtype():
    ctx = cannl.Context.cpu()
    src = np.arange(6, dtype=np.int64).reshape(2, 3)
    t = cannl.from_dlpack(src, name="from_int")       # a literal: the values are copied
    assert t.dims == [2, 3]
    cannl.train.compile_forward(ctx, [t * 1.0], "from_int_forward")
    assert np.array_equal(ctx.numpy(t), src)
    ctx.set_values(t, np.full((2, 3), 7, dtype=np.float64))   # converted to the node's f32
    assert np.array_equal(ctx.numpy(t), np.full((2, 3), 7.0))
    ctx.set_values(t, np.arange(6, dtype=np.float32)[::-1].copy().reshape(3, 2))  # same count
    assert ctx.numpy(t).ravel().tolist() == [5, 4, 3, 2, 1, 0]
    strided = np.arange(12, dtype=np.float64).reshape(2, 6)[:, ::2]
    ctx.set_values(t, strided)                        # non-contiguous input is gathered
    assert np.array_equal(ctx.numpy(t), strided)


def test_f64_literals_view_in_f64():
    ctx = cannl.Context.interpreter()
    x, y, _ = doubled(ctx, "f64_x", np.array([0.1, 0.2]))
    t = cannl.literal("f64_t", np.array([0.1, 0.2]), dtype=cannl.DType.F64)
    cannl.train.compile_forward(ctx, [t * 3.0], "f64_forward")
    assert ctx.numpy(t).dtype == np.float64
    assert ctx.numpy(t)[0] == 0.1


def opencl_context():
    """An OpenCL context (PoCL in CI), or the test skipped where none opens."""
    try:
        return cannl.Context.opencl()
    except cannl.BackendUnavailable as e:
        pytest.skip(f"no OpenCL device here: {e}")


def test_gpu_contexts_copy_instead_of_viewing():
    ctx = opencl_context()
    x, y, _ = doubled(ctx, "ocl_x", np.array([1.0, 2.0]))
    assert not ctx.is_view(y)
    values = ctx.numpy(y)
    assert np.array_equal(values, [2.0, 4.0])
    values[0] = 9.0                                  # a copy: the device buffer is unchanged
    assert ctx.get_values(y)[0] == 2.0
    assert np.array_equal(np.from_dlpack(y), [2.0, 4.0])


def test_copy_false_views_a_cpu_tensor():
    ctx = cannl.Context.cpu()
    _, y, _ = doubled(ctx, "cpu_nocopy_x", np.array([1.0, 2.0]))
    view = np.asarray(y, copy=False)
    view[0] = 5.0
    assert ctx.get_values(y)[0] == 5.0


def test_copy_false_refuses_a_tensor_that_only_copies():
    ctx = opencl_context()
    _, y, _ = doubled(ctx, "ocl_nocopy_x", np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="cannot be viewed without a copy"):
        np.asarray(y, copy=False)                    # a copy would break the promise of a view
    with pytest.raises(BufferError, match="not in host memory"):
        memoryview(y)                                # the buffer protocol exports memory only
    assert np.array_equal(np.asarray(y), [2.0, 4.0])  # copy=None: a copy is fine


def test_copy_false_refuses_a_dtype_conversion():
    ctx = cannl.Context.cpu()
    _, y, _ = doubled(ctx, "cpu_nocopy_dtype_x", np.array([1.0, 2.0]))
    with pytest.raises(ValueError):
        np.asarray(y, dtype=np.float64, copy=False)  # f32 cells: float64 needs a copy
    assert np.asarray(y, dtype=np.float32, copy=False).dtype == np.float32


def test_a_failed_read_in_another_context_does_not_take_the_tensor_there():
    ctx = cannl.Context.interpreter()
    _, y, _ = doubled(ctx, "failed_read_x", np.array([1.0, 2.0, 3.0]))
    other = cannl.Context.interpreter()
    with pytest.raises(cannl.UserError):
        other.numpy(y)                               # no buffer of y there
    assert np.array_equal(y.numpy(), [2.0, 4.0, 6.0])  # still read where it lives


def test_a_tensor_is_no_condition():
    a = cannl.literal("cond_a", np.ones(2))
    c = cannl.literal("cond_c", np.ones(2))
    with pytest.raises(TypeError, match="ambiguous"):
        bool(a == c)
    with pytest.raises(TypeError):
        a in [c]                                     # would hold for any c: == builds an expression
    assert a in [a]                                  # identity comes first


def test_repr_leaves_open_shapes_open():
    w = cannl.param("open_w", output=[3])
    assert "$" in repr(w)                            # its input row is still unknown
    x = cannl.literal("open_x", np.zeros((8, 2)), batch=[8], output=[2])
    h = w * x                                        # the use that decides w's input row
    assert w.shape == "2->3"
    assert h.shape == "8|3"


def test_literal_rows_and_shape_strings():
    x = cannl.literal("rows_x", np.zeros((8, 2)), batch=[8], output=[2])
    w = cannl.param("rows_w", output=[3])
    h = w * x
    assert h.shape == "8|3"            # batch | output (no input axes)
    assert w.shape == "2->3"           # input -> output (a parameter has no batch axes)
    assert x.shape == "8|2"
    assert repr(w) == "<cannl.param 'rows_w' 2->3 f32>"
