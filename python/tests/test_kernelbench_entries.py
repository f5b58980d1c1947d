"""bench/kernelbench_entries.py without a GPU: its parallel prebuild of the
entries' kernels (each distinct build once, in threads of the process that
then checks the entries, a failure reported and left to the entry's first
call), with stand-in entries and with real load_inline builds."""

import os
import shutil
import threading

import pytest

from conftest import load_bench_script

pytest.importorskip("torch")


# An entry's build interface, as `convtune kernelbench` writes it: _SOURCES
# names each precision's build digest, _extension builds one and keeps it in
# _BUILT; here a build is a mark (precision, process, thread) instead of nvcc.
FAKE_ENTRY = '''
import os, threading
_SOURCES = {"tf32": (None, None, "%(tf32)s", "90a"), "fp32": (None, None, "%(fp32)s", "90a")}
_BUILT = {}
def _extension(precision):
    digest = _SOURCES[precision][2]
    if digest in _BUILT:
        return _BUILT[digest]
    if precision == "%(fail)s":
        raise RuntimeError("nvcc failed\\nerror: no kernel")
    MARKS.append((precision, os.getpid(), threading.get_ident()))
    _BUILT[digest] = precision
    return precision
'''


@pytest.fixture(scope="module")
def entries():
    return load_bench_script("kernelbench_entries.py", "convtune_kb_entries")


def fake(entries, marks, **digests):
    ns = entries.load(FAKE_ENTRY % dict(digests), "fake")
    ns["MARKS"] = marks
    return ns


def test_prebuild_builds_each_digest_once_in_threads(entries, capsys):
    marks = []
    same = fake(entries, marks, tf32="d1", fp32="d1", fail="-")   # one build, both precisions
    two = fake(entries, marks, tf32="d2", fp32="d3", fail="fp32")  # two builds, fp32's failing
    entries.prebuild({"l1_p50.py": same, "l1_p55.py": two}, 2)
    assert sorted(m[0] for m in marks) == ["tf32", "tf32"]
    assert all(pid == os.getpid() and tid != threading.get_ident() for _, pid, tid in marks)
    # The namespaces hold the builds: the entries' calls find them.
    assert same["_BUILT"] == {"d1": "tf32"} and two["_BUILT"] == {"d2": "tf32"}
    out = capsys.readouterr().out
    assert "prebuild l1_p55.py fp32: FAILED (RuntimeError: error: no kernel)" in out
    assert "prebuild l1_p50.py tf32: ok in" in out
    assert "prebuilt 3 kernel builds" in out
    with pytest.raises(RuntimeError, match="nvcc failed"):   # tried again at its first call
        two["_extension"]("fp32")


# A real entry's _extension in small: load_inline of a C++ function, named
# by the digest.  Two of them prebuilt at once must both load and run.
REAL_ENTRY = '''
from torch.utils.cpp_extension import load_inline
_SOURCES = {"tf32": (None, None, "%(digest)s", "90a")}
_BUILT = {}
def _extension(precision):
    digest = _SOURCES[precision][2]
    if digest not in _BUILT:
        _BUILT[digest] = load_inline(name="convtune_kb_probe_" + digest,
            cpp_sources=["int plus(int a) { return a + %(add)d; }"], functions=["plus"],
            build_directory=%(dir)r, verbose=False)
    return _BUILT[digest]
'''


@pytest.mark.skipif(shutil.which("ninja") is None or shutil.which("c++") is None,
                    reason="load_inline needs ninja and a C++ compiler")
def test_prebuild_load_inline_in_threads(entries, tmp_path, capsys):
    spaces = {}
    for add in (1, 2):
        d = tmp_path / ("b%d" % add)
        d.mkdir()
        spaces["e%d" % add] = entries.load(REAL_ENTRY % dict(digest="p%d" % add, add=add,
                                                             dir=str(d)), "real")
    entries.prebuild(spaces, 2)
    out = capsys.readouterr().out
    assert "FAILED" not in out, out
    assert spaces["e1"]["_extension"]("tf32").plus(40) == 41
    assert spaces["e2"]["_extension"]("tf32").plus(40) == 42
