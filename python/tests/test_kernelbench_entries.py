"""bench/kernelbench_entries.py without a GPU: its parallel prebuild of the
entries' kernels (each distinct build once, in worker processes, a failure
reported and left to the entry's first call) and its results table."""

import importlib.util
import os

import pytest

from conftest import PYTHON_DIR

pytest.importorskip("torch")

SCRIPT = os.path.join(os.path.dirname(PYTHON_DIR), "bench", "kernelbench_entries.py")

# An entry's build interface, as `convtune kernelbench` writes it: _SOURCES
# names each precision's build digest, _extension builds one; here it
# leaves a mark (the process and precision) instead of running nvcc.
FAKE_ENTRY = '''
import os
_SOURCES = {"tf32": (None, None, "%(tf32)s", "90a"), "fp32": (None, None, "%(fp32)s", "90a")}
def _extension(precision):
    if precision == "%(fail)s":
        raise RuntimeError("nvcc failed")
    with open(os.path.join(%(marks)r, "%%s-%%d" %% (precision, os.getpid())), "w") as f:
        f.write(precision)
'''


@pytest.fixture(scope="module")
def entries():
    spec = importlib.util.spec_from_file_location("convtune_kb_entries", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_prebuild_builds_each_digest_once_in_workers(entries, tmp_path, capsys):
    marks = tmp_path / "marks"
    marks.mkdir()
    same = tmp_path / "l1_p50.py"   # one build serves both precisions
    same.write_text(FAKE_ENTRY % dict(tf32="d1", fp32="d1", fail="-", marks=str(marks)))
    two = tmp_path / "l1_p55.py"    # two builds, the fp32 one failing
    two.write_text(FAKE_ENTRY % dict(tf32="d2", fp32="d3", fail="fp32", marks=str(marks)))
    entries.prebuild([str(same), str(two)], 2)
    built = sorted(name.split("-")[0] for name in os.listdir(marks))
    assert built == ["tf32", "tf32"]
    assert all(int(name.split("-")[1]) != os.getpid() for name in os.listdir(marks))
    out = capsys.readouterr().out
    assert "prebuild l1_p55.py fp32: FAILED (exit 1: RuntimeError: nvcc failed)" in out
    assert "prebuilt 3 kernel builds" in out
