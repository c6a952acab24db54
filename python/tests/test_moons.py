"""The moons demo trained from Python prints what `cannl demo` prints: the same losses per
epoch and the same final train accuracy (same seed, same graph, same backend)."""
import os
import pathlib
import re
import subprocess
import sys

import cannl
from conftest import REPO

sys.path.insert(0, str(REPO / "examples" / "python"))
import moons  # noqa: E402

EPOCHS = 40  # the demo's default: its headline accuracy


def cannl_program():
    path = pathlib.Path(os.environ.get("CANNL_APP", REPO / "build" / "cannl"))
    assert path.is_file(), f"the cannl program is not built at {path} (set CANNL_APP)"
    return path


def test_python_moons_matches_cannl_demo(work_dir):
    demo = subprocess.run([str(cannl_program()), "demo", "--epochs", str(EPOCHS)], cwd=work_dir,
                          capture_output=True, text=True, check=True).stdout
    expected_losses = {int(e): l for e, l in re.findall(r"epoch +(\d+)/\d+  loss (\S+)", demo)}
    expected_accuracy = re.search(r"final train accuracy: (\S+)", demo).group(1)
    assert sorted(expected_losses) == [1] + list(range(5, EPOCHS + 1, 5))

    # The demo's folder under build_files/: its compiled routines are found in the compile cache
    # (the generated C is the same, so its digest is).
    cannl.config.set("build_files_prefix", "cannl")
    try:
        lines = []
        losses, accuracy, mlp, step = moons.train(epochs=EPOCHS, report=lines.append)
    finally:
        cannl.config.clear()
    assert len(losses) == EPOCHS
    for epoch, loss in expected_losses.items():
        assert f"{losses[epoch - 1]:.6f}" == loss, (epoch, losses, demo)
    assert f"{accuracy:.4f}" == expected_accuracy
    assert losses[-1] < losses[0]
    # The trained weights are readable in place.
    assert mlp.w1.numpy().shape == (64, 2)
    assert step.ctx.is_view(mlp.w1)
