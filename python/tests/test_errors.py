"""C++ errors cross as Python exceptions of the same class names and messages; nothing a user
does aborts the interpreter."""
import numpy as np
import pytest

import cannl

USER_ERRORS = ["ShapeError", "EinsumSyntaxError", "ScheduleError", "CompileError",
               "BackendUnavailable", "FormatError", "ConfigError", "UninitializedError",
               "RuntimeUsageError", "IoError", "ResourceError", "RuntimeError", "IndexRangeError"]


@pytest.mark.parametrize("name", USER_ERRORS)
def test_every_user_error_class_translates_with_its_message(name):
    cls = getattr(cannl, name)
    assert issubclass(cls, cannl.UserError) and issubclass(cls, cannl.Error)
    assert cls.__module__ == "cannl"
    with pytest.raises(cls, match="^what went wrong$") as info:
        cannl._cannl._throw_cpp_error(name, "what went wrong")
    assert type(info.value) is cls


def test_internal_error_is_an_error_but_no_user_error():
    assert issubclass(cannl.InternalError, cannl.Error)
    assert not issubclass(cannl.InternalError, cannl.UserError)
    with pytest.raises(cannl.InternalError, match="please report"):
        cannl._cannl._throw_cpp_error("InternalError", "an invariant")


def test_shape_error_from_mismatched_operands():
    a = cannl.literal("a", np.ones((2, 3)), output=[2, 3])
    b = cannl.literal("b", np.ones((4, 5)), output=[4, 5])
    with pytest.raises(cannl.ShapeError):
        cannl.einsum("ij;jk=>ik", a, b).shape


def test_einsum_syntax_error_points_into_the_spec():
    a = cannl.literal("a", np.ones(3))
    with pytest.raises(cannl.EinsumSyntaxError, match=r"\^"):
        cannl.einsum("i;;=>>", a, a)


def test_config_error_names_the_key():
    with pytest.raises(cannl.ConfigError, match="no_such_key"):
        cannl.config.get("no_such_key")
    cannl.config.set("backend", "abacus")
    try:
        with pytest.raises(cannl.ConfigError, match="abacus"):
            cannl.Context.from_config()
    finally:
        cannl.config.clear()


def test_reading_a_never_written_node_is_uninitialized_or_usage_error():
    ctx = cannl.Context.interpreter()
    w = cannl.param("never_run", output=[3], input=[2])
    with pytest.raises(cannl.RuntimeUsageError, match="no buffer"):
        ctx.numpy(w)
    with pytest.raises(cannl.RuntimeUsageError, match="no values in any live context"):
        cannl.param("orphan", output=[2], input=[2]).numpy()


def test_uninitialized_error_when_a_buffer_was_never_written():
    ctx = cannl.Context.interpreter()
    x = cannl.literal("uninit_x", np.arange(6.0), batch=[3], output=[2])
    w = cannl.param("uninit_w", output=[2])
    y = w * x
    cannl.train.compile_forward(ctx, [y], "uninit_forward")
    with pytest.raises(cannl.UninitializedError, match="never written"):
        ctx.numpy(y)


def test_negative_static_range_is_a_usage_error():
    with pytest.raises(cannl.RuntimeUsageError, match="range must be >= 0"):
        cannl.StaticSymbol(-1, "batch")


def test_size_mismatch_is_a_usage_error():
    ctx = cannl.Context.interpreter()
    t = cannl.literal("sized", np.zeros(4))
    cannl.train.compile_forward(ctx, [t * 2.0], "sized_forward")
    with pytest.raises(cannl.RuntimeUsageError, match="got 3 values"):
        ctx.set_values(t, np.zeros(3))


def test_format_and_io_errors_from_files(tmp_path):
    with pytest.raises(cannl.IoError):
        cannl.io.SafetensorsFile.open(tmp_path / "missing.safetensors")
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all}")
    with pytest.raises(cannl.FormatError):
        cannl.io.SafetensorsFile.open(bad)


def test_backend_unavailable_names_what_is_missing():
    try:
        cannl.Context.cuda(0)
    except cannl.BackendUnavailable as e:
        assert "cuda" in str(e).lower() or "lib" in str(e)
    else:
        pytest.skip("a CUDA device is present: BackendUnavailable cannot be provoked here")


def test_compile_error_names_the_compiler_flag():
    cannl.config.set("cc_extra_flags", "-fno-such-flag-xyz")
    try:
        ctx = cannl.Context.cpu()
        t = cannl.literal("cc_fails", np.ones(2))
        with pytest.raises(cannl.CompileError, match="no-such-flag-xyz"):
            cannl.train.compile_forward(ctx, [t + 1.0], "cc_fails")
    finally:
        cannl.config.clear()


def test_an_exception_in_a_callback_ends_fit_and_keeps_the_interpreter():
    x = cannl.literal("cb_x", np.ones((4, 2)), batch=[4], output=[2])
    w = cannl.param("cb_w", output=[1])
    ctx = cannl.Context.interpreter()
    step = cannl.train.compile_step(ctx, cannl.sum(w * x))

    class Stop(Exception):
        pass

    def on_epoch(report):
        raise Stop(f"stopped at {report.epoch}")

    with pytest.raises(Stop, match="stopped at 1"):
        cannl.train.fit(step, epochs=3, on_epoch=on_epoch)
    assert cannl.train.fit(step, epochs=1)  # the step still runs
