"""convtune — autotuned CUDA conv2d kernels (libconvtune) from Python.

    import convtune.torch as ct
    y = ct.conv2d(x, weight, bias, stride=4, padding=2)   # like F.conv2d
    conv = ct.Conv2d(3, 96, 11, stride=4, padding=2)      # like nn.Conv2d

convtune.torch needs PyTorch and is imported on its own; this package
itself needs only the standard library: load(), Library, Context, Problem
and ConvtuneError are the ctypes layer over libconvtune (convtune._lib).
Nothing is compiled: the library is found at run time ($CONVTUNE_LIB, a
source tree's build/, or the installed libconvtune.so).
"""

from ._lib import (  # noqa: F401
    CT_OK,
    CT_PREC_FP32,
    CT_PREC_TF32,
    PATHS,
    PRECISIONS,
    STATUS,
    ConvtuneError,
    Context,
    Library,
    LibraryNotFound,
    Problem,
    library_candidates,
    load,
)

__all__ = ["CT_OK", "CT_PREC_FP32", "CT_PREC_TF32", "PATHS", "PRECISIONS", "STATUS",
           "ConvtuneError", "Context", "Library", "LibraryNotFound", "Problem",
           "library_candidates", "load"]
__version__ = "0.5.0"
