"""Shared by the tests: where the package, the library and the mock driver
are.  Run from the source tree: python3 -m pytest python/tests (with
$CONVTUNE_LIB set, or a build in build/)."""

import importlib.util
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(HERE)
if PYTHON_DIR not in sys.path:
    sys.path.insert(0, PYTHON_DIR)

import convtune  # noqa: E402

BENCH_DIR = os.path.join(os.path.dirname(PYTHON_DIR), "bench")


def load_bench_script(filename, name):
    """bench/<filename> imported as a module called name (the bench
    scripts are not a package)."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(BENCH_DIR, filename))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def mock_driver_path():
    """The mock libcuda of the build (tests/mock_cuda.c), or None:
    $CONVTUNE_TEST_MOCK_CUDA, else tests/libct_mockcuda.so beside the
    library's runtime/ folder."""
    env = os.environ.get("CONVTUNE_TEST_MOCK_CUDA")
    if env:
        return env if os.path.exists(env) else None
    try:
        lib = convtune.load()
    except convtune.LibraryNotFound:
        return None
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(lib.path))),
                        "tests", "libct_mockcuda.so")
    return path if os.path.exists(path) else None


@pytest.fixture(scope="session")
def lib():
    try:
        return convtune.load()
    except convtune.LibraryNotFound as e:
        pytest.skip("libconvtune not built: %s" % e)
