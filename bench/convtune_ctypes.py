"""convtune_ctypes — libconvtune from Python through ctypes.

The bench (bench/bench.py) and the KernelBench entry (bench/kernelbench_l1_p50.py)
share this loader; nothing is compiled against PyTorch.  It mirrors
runtime/convtune.h: ct_problem is the same struct (checked field by field
against the C header), every call's ct_status is checked, and a failure
raises ConvtuneError with the library's own message (ct_last_error, plus
the NVRTC log when there is one).

Pointers are plain integers (torch's Tensor.data_ptr(), a stream's
.cuda_stream), so this module needs no torch; Context.forward_tensors is the
one helper that takes tensors, and it imports torch only when called.

The library is found at $CONVTUNE_LIB, else build/runtime/libconvtune.so
under the repository root (the folder above bench/).
"""

import ctypes
import os

# -------------------------------------------------------------------------
# The C types (runtime/convtune.h)

CT_OK = 0
CT_PROBLEM_SPEC_MAX = 256  # longest canonical spec text, NUL included

CT_PREC_TF32 = 0
CT_PREC_FP32 = 1
PRECISIONS = {"tf32": CT_PREC_TF32, "fp32": CT_PREC_FP32}


class Problem(ctypes.Structure):
    """struct ct_problem: 13 int64 fields, int bias, enum precision (112 bytes)."""

    _fields_ = [
        ("n", ctypes.c_int64),
        ("c", ctypes.c_int64),
        ("h", ctypes.c_int64),
        ("w", ctypes.c_int64),
        ("k", ctypes.c_int64),
        ("r", ctypes.c_int64),
        ("s", ctypes.c_int64),
        ("stride_h", ctypes.c_int64),
        ("stride_w", ctypes.c_int64),
        ("pad_h", ctypes.c_int64),
        ("pad_w", ctypes.c_int64),
        ("dil_h", ctypes.c_int64),
        ("dil_w", ctypes.c_int64),
        ("bias", ctypes.c_int),
        ("precision", ctypes.c_int),  # ct_precision, an int-sized enum
    ]

    def copy(self, **changes):
        """A copy of this problem with some fields changed."""
        p = Problem.from_buffer_copy(self)
        for name, value in changes.items():
            setattr(p, name, value)
        return p

    def output_hw(self):
        """(P, Q) as PyTorch computes them (ct_problem_output's formula)."""
        P = (self.h + 2 * self.pad_h - self.dil_h * (self.r - 1) - 1) // self.stride_h + 1
        Q = (self.w + 2 * self.pad_w - self.dil_w * (self.s - 1) - 1) // self.stride_w + 1
        return P, Q

    def shapes(self):
        """The tensor shapes: x (N,C,H,W), w (K,C,R,S), b (K,) or None, y (N,K,P,Q)."""
        P, Q = self.output_hw()
        return ((self.n, self.c, self.h, self.w), (self.k, self.c, self.r, self.s),
                (self.k,) if self.bias else None, (self.n, self.k, P, Q))


class ConvtuneError(RuntimeError):
    """A libconvtune call that did not return CT_OK."""

    def __init__(self, status, status_text, message, nvrtc_log=""):
        text = "%s (%s)" % (message, status_text) if message else status_text
        if nvrtc_log:
            text += "\nNVRTC log:\n" + nvrtc_log.rstrip()
        super().__init__(text)
        self.status = status
        self.message = message
        self.nvrtc_log = nvrtc_log


# -------------------------------------------------------------------------
# Finding and loading the library

def repo_root():
    """The repository root: the folder above the one holding this file."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def default_library_path():
    """$CONVTUNE_LIB, else <repo>/build/runtime/libconvtune.so."""
    env = os.environ.get("CONVTUNE_LIB")
    if env:
        return env
    return os.path.join(repo_root(), "build", "runtime", "libconvtune.so")


def _text(raw):
    return raw.decode("utf-8", "replace") if raw else ""


def _bytes_or_none(text):
    return None if text is None else os.fsencode(text)


class Library:
    """libconvtune, loaded with its function signatures declared."""

    def __init__(self, path=None):
        self.path = path or default_library_path()
        if not os.path.exists(self.path):
            raise FileNotFoundError(
                "libconvtune not found at %s: build it (meson setup build && "
                "meson compile -C build) or set $CONVTUNE_LIB" % self.path)
        lib = ctypes.CDLL(self.path)
        self._lib = lib
        P = ctypes.POINTER(Problem)
        vp, cp, sz, i = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int
        sigs = {
            "ct_status_string": (cp, [i]),
            "ct_problem_default": (None, [P]),
            "ct_problem_output": (None, [P, ctypes.POINTER(ctypes.c_int64),
                                         ctypes.POINTER(ctypes.c_int64)]),
            "ct_problem_validate": (i, [P, ctypes.c_char_p, sz]),
            "ct_problem_parse": (i, [cp, P, ctypes.c_char_p, sz]),
            "ct_problem_format": (i, [P, ctypes.c_char_p, sz]),
            "ct_precision_name": (cp, [i]),
            "ct_open": (i, [cp, i, ctypes.POINTER(vp)]),
            "ct_open_error": (cp, []),
            "ct_close": (None, [vp]),
            "ct_forward": (i, [vp, P, vp, vp, vp, vp, vp]),
            "ct_path_name": (cp, [i]),
            "ct_forward_path": (i, [vp, P, ctypes.POINTER(ctypes.c_int), ctypes.c_char_p, sz]),
            "ct_last_error": (cp, [vp]),
            "ct_last_cuda_result": (i, [vp]),
            "ct_last_nvrtc_result": (i, [vp]),
            "ct_last_nvrtc_log": (cp, [vp]),
        }
        for name, (restype, argtypes) in sigs.items():
            fn = getattr(lib, name)
            fn.restype = restype
            fn.argtypes = argtypes

    def status_string(self, status):
        return _text(self._lib.ct_status_string(status))

    def _raise(self, status, message):
        raise ConvtuneError(status, self.status_string(status), message)

    # -- problems ---------------------------------------------------------

    def default_problem(self):
        """The headline problem (ct_problem_default)."""
        p = Problem()
        self._lib.ct_problem_default(ctypes.byref(p))
        return p

    def parse(self, spec):
        """Parses a spec (README.md, "Problem specs") with ct_problem_parse."""
        p = Problem()
        err = ctypes.create_string_buffer(256)
        st = self._lib.ct_problem_parse(spec.encode(), ctypes.byref(p), err, len(err))
        if st != CT_OK:
            self._raise(st, "cannot parse problem spec %r: %s" % (spec, _text(err.value)))
        return p

    def format(self, p):
        """The canonical spec text of p (ct_problem_format)."""
        buf = ctypes.create_string_buffer(CT_PROBLEM_SPEC_MAX)
        st = self._lib.ct_problem_format(ctypes.byref(p), buf, len(buf))
        if st != CT_OK:
            self._raise(st, "cannot format the problem")
        return _text(buf.value)

    def path_name(self, path):
        return _text(self._lib.ct_path_name(path))

    # -- contexts ---------------------------------------------------------

    def open(self, db_path=None, device=0):
        """A Context on CUDA device `device` with the tuning database at
        db_path (None: $CONVTUNE_DB, else the per-user default)."""
        handle = ctypes.c_void_p()
        st = self._lib.ct_open(_bytes_or_none(db_path), int(device), ctypes.byref(handle))
        if st != CT_OK:
            self._raise(st, "ct_open: " + _text(self._lib.ct_open_error()))
        return Context(self, handle)


class Context:
    """An open ct_context.  close() it, or use it as a context manager."""

    def __init__(self, library, handle):
        self.library = library
        self._lib = library._lib
        self._handle = handle

    def close(self):
        if self._handle:
            self._lib.ct_close(self._handle)
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def _check(self, status, what):
        if status == CT_OK:
            return
        msg = _text(self._lib.ct_last_error(self._handle))
        log = _text(self._lib.ct_last_nvrtc_log(self._handle))
        cu = self._lib.ct_last_cuda_result(self._handle)
        nv = self._lib.ct_last_nvrtc_result(self._handle)
        extra = []
        if cu:
            extra.append("CUresult %d" % cu)
        if nv:
            extra.append("nvrtcResult %d" % nv)
        if extra:
            msg += " [" + ", ".join(extra) + "]"
        raise ConvtuneError(status, self.library.status_string(status),
                            "%s: %s" % (what, msg), log)

    def forward(self, p, x, w, b, y, stream=0):
        """ct_forward with device pointers (ints; b may be None or 0 only
        without bias) on `stream` (a cudaStream_t as an int; 0: the legacy
        default stream).  Asynchronous; raises ConvtuneError on failure."""
        st = self._lib.ct_forward(self._handle, ctypes.byref(p), x, w, b or None, y,
                                  stream or None)
        self._check(st, "ct_forward")

    def forward_tensors(self, p, x, w, b, y):
        """ct_forward on torch tensors, on torch's current stream of x's
        device, after checking each tensor against the problem: fp32, on one
        CUDA device, dense (contiguous) NCHW / KCRS and of the problem's
        shape.  Raises ValueError naming the offending tensor."""
        import torch

        xs, ws, bs, ys = p.shapes()
        check_tensor("x", x, xs, None)
        check_tensor("w", w, ws, x.device)
        if p.bias:
            if b is None:
                raise ValueError("the problem has a bias but b is None")
            check_tensor("b", b, bs, x.device)
        check_tensor("y", y, ys, x.device)
        stream = torch.cuda.current_stream(x.device).cuda_stream
        self.forward(p, x.data_ptr(), w.data_ptr(), b.data_ptr() if p.bias else None,
                     y.data_ptr(), stream)

    def forward_path(self, p):
        """(path name, variant name) of the kernel ct_forward runs for p:
        path is "none" (not run yet), "tuned-cubin", "tuned-compiled" or
        "default" (nothing tuned for this problem and device)."""
        path = ctypes.c_int()
        buf = ctypes.create_string_buffer(256)
        st = self._lib.ct_forward_path(self._handle, ctypes.byref(p), ctypes.byref(path),
                                       buf, len(buf))
        self._check(st, "ct_forward_path")
        return self.library.path_name(path.value), _text(buf.value)


def check_tensor(name, t, shape, device):
    """Raises ValueError unless t is a contiguous fp32 CUDA tensor of `shape`
    (on `device` when given)."""
    if str(t.dtype) != "torch.float32":
        raise ValueError("%s must be float32, not %s" % (name, t.dtype))
    if not t.is_cuda:
        raise ValueError("%s must be on a CUDA device, not %s" % (name, t.device))
    if device is not None and t.device != device:
        raise ValueError("%s is on %s but x is on %s" % (name, t.device, device))
    if tuple(t.shape) != tuple(shape):
        raise ValueError("%s has shape %s; the problem needs %s"
                         % (name, tuple(t.shape), tuple(shape)))
    if not t.is_contiguous():
        raise ValueError("%s must be contiguous (dense NCHW / KCRS); call .contiguous() "
                         "first (a channels_last tensor is not)" % name)


def load(path=None):
    """The Library at path (None: default_library_path())."""
    return Library(path)


if __name__ == "__main__":
    # A smoke test that needs no GPU: load, parse the headline problem, print it.
    lib = load()
    p = lib.default_problem()
    print(lib.path)
    print(lib.format(p), "->", "x%s w%s b%s y%s" % p.shapes())
