"""convtune_ctypes — libconvtune from Python through ctypes, for bench/.

The ctypes definitions live in one place, the package's loader
python/convtune/_lib.py; this module re-exports it so that bench/bench.py
and bench/kernelbench_l1_p50.py keep their `import convtune_ctypes` and
run from a checkout without installing the package.  The checkout's
python/ comes first on sys.path, so the loader matches the library built
beside it; an installed package is used when there is no python/ here.

load(), Library, Context (forward, forward_tensors, forward_path,
forward_reason, prepare, database_status), Problem, ConvtuneError,
check_tensor, PRECISIONS: see python/convtune/_lib.py.  The library is
found at $CONVTUNE_LIB, else build/runtime/libconvtune.so of this checkout,
else the installed libconvtune.so.
"""

import os
import sys

_PYTHON_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           "python")
if os.path.isdir(os.path.join(_PYTHON_DIR, "convtune")) and _PYTHON_DIR not in sys.path:
    sys.path.insert(0, _PYTHON_DIR)

from convtune._lib import *  # noqa: E402,F401,F403
from convtune._lib import __all__  # noqa: E402,F401

if __name__ == "__main__":
    # A smoke test that needs no GPU: load, parse the headline problem, print it.
    lib = load()  # noqa: F405
    p = lib.default_problem()
    print(lib.path)
    print(lib.format(p), "->", "x%s w%s b%s y%s" % p.shapes())
