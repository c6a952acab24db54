"""The Python examples run (short forms), so they cannot rot."""
import re
import subprocess
import sys

from conftest import REPO


def test_makemore_quick_run_reports_dev_loss_and_samples(work_dir):
    out = subprocess.run([sys.executable, str(REPO / "examples" / "python" / "makemore.py"), "--quick"],
                         cwd=work_dir, capture_output=True, text=True, check=True).stdout
    assert re.search(r"^samples: \S", out, re.M), out
    dev, bigram = map(float, re.search(r"mlp dev loss (\S+) vs bigram counts (\S+)", out).groups())
    assert 1.5 < dev < 3.5 and 2.0 < bigram < 3.0, out
