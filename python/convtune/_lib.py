"""convtune._lib — libconvtune through ctypes: the one Python definition of
its C interface (runtime/convtune.h).

Nothing is compiled: the library is found and loaded at run time, and
ct_problem is declared here field by field as the C header has it
(tests/test_lib.py checks the layout against the library itself).  Every
call's ct_status is checked; a failure raises ConvtuneError with the
library's own message (ct_last_error, plus the NVRTC log when there is one).

Pointers are plain integers (torch's Tensor.data_ptr(), a stream's
.cuda_stream), so this module needs no torch; Context.forward_tensors is the
one helper that takes tensors, and it imports torch only when called.

The library is found, in this order, at
  1. $CONVTUNE_LIB (a path),
  2. build/runtime/libconvtune.so of the source tree this package sits in
     (python/convtune -> ../../build), only when the package is used
     straight from a checkout (not after `pip install`),
  3. the installed library (`meson install`): the libdir pkg-config gives
     for convtune ($PKG_CONFIG_PATH), meson's default prefix /usr/local
     (lib/<multiarch>, lib64, lib), ctypes.util.find_library("convtune"),
     then the plain name libconvtune.so (the loader's paths,
     $LD_LIBRARY_PATH).
When none loads, LibraryNotFound lists what was tried and the three ways
to point at a library: $CONVTUNE_LIB, $LD_LIBRARY_PATH (or ldconfig), and
$PKG_CONFIG_PATH.
"""

import ctypes
import ctypes.util
import os
import subprocess
import sysconfig
import threading

__all__ = [
    "CT_OK", "CT_PROBLEM_SPEC_MAX", "CT_PREC_TF32", "CT_PREC_FP32", "PRECISIONS",
    "CT_ACT_NONE", "CT_ACT_RELU", "CT_ACT_RELU6", "ACTIVATIONS", "CT_LAYOUT_NCHW", "CT_LAYOUT_NHWC", "LAYOUTS",
    "STATUS", "PATHS", "Problem", "ConvtuneError", "LibraryNotFound", "Library",
    "Context", "check_tensor", "load", "repo_root", "default_library_path",
    "library_candidates", "in_source_tree",
]

# -------------------------------------------------------------------------
# The C types (runtime/convtune.h)

CT_OK = 0
CT_PROBLEM_SPEC_MAX = 256  # longest canonical spec text, NUL included

CT_PREC_TF32 = 0
CT_PREC_FP32 = 1
PRECISIONS = {"tf32": CT_PREC_TF32, "fp32": CT_PREC_FP32}
CT_ACT_NONE = 0
CT_ACT_RELU = 1
CT_ACT_RELU6 = 2
ACTIVATIONS = {"none": CT_ACT_NONE, "relu": CT_ACT_RELU, "relu6": CT_ACT_RELU6}
CT_LAYOUT_NCHW = 0
CT_LAYOUT_NHWC = 1
LAYOUTS = {"nchw": CT_LAYOUT_NCHW, "nhwc": CT_LAYOUT_NHWC}

# ct_status, in the header's order (never renumbered).
(CT_ERR_INVALID_ARG, CT_ERR_INVALID_PROBLEM, CT_ERR_PARSE, CT_ERR_NOMEM,
 CT_ERR_NO_DRIVER, CT_ERR_NO_DEVICE, CT_ERR_CUDA, CT_ERR_NVRTC, CT_ERR_DB,
 CT_ERR_DB_CORRUPT, CT_ERR_NOT_FOUND, CT_ERR_UNSUPPORTED, CT_ERR_VERIFY,
 CT_ERR_IO) = range(1, 15)
STATUS = ["CT_OK", "CT_ERR_INVALID_ARG", "CT_ERR_INVALID_PROBLEM", "CT_ERR_PARSE",
          "CT_ERR_NOMEM", "CT_ERR_NO_DRIVER", "CT_ERR_NO_DEVICE", "CT_ERR_CUDA",
          "CT_ERR_NVRTC", "CT_ERR_DB", "CT_ERR_DB_CORRUPT", "CT_ERR_NOT_FOUND",
          "CT_ERR_UNSUPPORTED", "CT_ERR_VERIFY", "CT_ERR_IO"]
__all__ += STATUS[1:]

# ct_path, in the header's order.
PATHS = ["none", "tuned-cubin", "tuned-compiled", "default", "nearest"]


class Problem(ctypes.Structure):
    """struct ct_problem: 13 int64 fields, int bias, enums precision, act
    and layout, int residual, then int64 groups after 4 bytes of padding
    (136 bytes; the library's ct_problem_size must agree).  groups, the
    last field, defaults to 1 (an ordinary convolution, as in a spec) when
    a Problem is made without it; w is then (K, C / groups, R, S).
    Strides and dilations left out default to 1, likewise."""

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
        ("act", ctypes.c_int),  # ct_activation, likewise
        ("layout", ctypes.c_int),  # ct_layout, likewise
        ("residual", ctypes.c_int),
        ("groups", ctypes.c_int64),  # added in 0.4.0
    ]

    # Fields whose zero is not a valid value default as in a spec.
    _DEFAULTS = {"stride_h": 1, "stride_w": 1, "dil_h": 1, "dil_w": 1, "groups": 1}

    def __init__(self, *args, **kwargs):
        for i, (name, _) in enumerate(self._fields_):
            if name in self._DEFAULTS and len(args) <= i and name not in kwargs:
                kwargs[name] = self._DEFAULTS[name]
        super().__init__(*args, **kwargs)

    def spec(self):
        """The canonical spec text (README.md, "Problem specs"), as
        ct_problem_format writes it, computed here without the library."""
        def pair(a, b):
            return "%d" % a if a == b else "%dx%d" % (a, b)
        prec = {CT_PREC_TF32: "tf32", CT_PREC_FP32: "fp32"}.get(self.precision,
                                                               str(self.precision))
        act = {CT_ACT_NONE: "", CT_ACT_RELU: ",act=relu", CT_ACT_RELU6: ",act=relu6"}.get(
            self.act, ",act=%d" % self.act)
        act += {CT_LAYOUT_NCHW: "", CT_LAYOUT_NHWC: ",layout=nhwc"}.get(
            self.layout, ",layout=%d" % self.layout)
        act += {0: "", 1: ",residual=1"}.get(self.residual, ",residual=%d" % self.residual)
        act += ",groups=%d" % self.groups if self.groups != 1 else ""
        return ("n=%d,c=%d,h=%d,w=%d,k=%d,r=%d,s=%d,stride=%s,pad=%s,dil=%s,bias=%d,prec=%s%s"
                % (self.n, self.c, self.h, self.w, self.k, self.r, self.s,
                   pair(self.stride_h, self.stride_w), pair(self.pad_h, self.pad_w),
                   pair(self.dil_h, self.dil_w), self.bias, prec, act))

    def __repr__(self):
        return "Problem(%r)" % self.spec()

    def copy(self, **changes):
        """A copy of this problem with some fields changed."""
        p = Problem.from_buffer_copy(self)
        for name, value in changes.items():
            setattr(p, name, value)
        return p

    def key(self):
        """The fields as a tuple (hashable, comparable)."""
        return tuple(getattr(self, name) for name, _ in self._fields_)

    def output_hw(self):
        """(P, Q) as PyTorch computes them (ct_problem_output's formula)."""
        P = (self.h + 2 * self.pad_h - self.dil_h * (self.r - 1) - 1) // self.stride_h + 1
        Q = (self.w + 2 * self.pad_w - self.dil_w * (self.s - 1) - 1) // self.stride_w + 1
        return P, Q

    def shapes(self):
        """The tensor shapes: x (N,C,H,W), w (K,C/groups,R,S), b (K,) or
        None, y (N,K,P,Q)."""
        if self.groups < 1:
            raise ValueError("groups = %d must be >= 1" % self.groups)
        P, Q = self.output_hw()
        return ((self.n, self.c, self.h, self.w),
                (self.k, self.c // self.groups, self.r, self.s),
                (self.k,) if self.bias else None, (self.n, self.k, P, Q))


class ConvtuneError(RuntimeError):
    """A libconvtune call that did not return CT_OK.  .status is the
    ct_status, .message the library's message."""

    def __init__(self, status, status_text, message, nvrtc_log=""):
        text = "%s (%s)" % (message, status_text) if message else status_text
        if nvrtc_log:
            text += "\nNVRTC log:\n" + nvrtc_log.rstrip()
        super().__init__(text)
        self.status = status
        self.message = message
        self.nvrtc_log = nvrtc_log


class LibraryNotFound(FileNotFoundError):
    """libconvtune is nowhere this module looks (the message lists where)."""


# -------------------------------------------------------------------------
# Finding and loading the library

def repo_root():
    """The source tree this package sits in (python/convtune -> ../..)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def in_source_tree():
    """Whether this package is used from a convtune checkout (python/convtune
    beside meson.build and runtime/convtune.h), not an installed copy."""
    root = repo_root()
    return (os.path.exists(os.path.join(root, "meson.build")) and
            os.path.exists(os.path.join(root, "runtime", "convtune.h")))


def _pkg_config_libdir():
    """The libdir `pkg-config` gives for convtune, or None."""
    try:
        r = subprocess.run(["pkg-config", "--variable=libdir", "convtune"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    libdir = r.stdout.strip()
    return libdir if r.returncode == 0 and libdir else None


def _prefix_libdirs(prefix="/usr/local"):
    """The library folders `meson install` uses under prefix."""
    dirs = []
    multiarch = sysconfig.get_config_var("MULTIARCH")
    if multiarch:
        dirs.append(os.path.join(prefix, "lib", multiarch))
    dirs += [os.path.join(prefix, "lib64"), os.path.join(prefix, "lib")]
    return dirs


def library_candidates():
    """Where load() looks, in order: (description, path or name) pairs."""
    out = []
    env = os.environ.get("CONVTUNE_LIB")
    if env:
        return [("$CONVTUNE_LIB", env)]
    if in_source_tree():
        out.append(("the source tree's build",
                    os.path.join(repo_root(), "build", "runtime", "libconvtune.so")))
    libdir = _pkg_config_libdir()
    if libdir:
        out.append(("pkg-config's libdir for convtune",
                    os.path.join(libdir, "libconvtune.so")))
    for d in _prefix_libdirs():
        path = os.path.join(d, "libconvtune.so")
        if os.path.exists(path):
            out.append(("meson install's default prefix", path))
    found = ctypes.util.find_library("convtune")
    if found:
        out.append(("ctypes.util.find_library('convtune')", found))
    out.append(("the loader's search path", "libconvtune.so"))
    return out


def default_library_path():
    """The first candidate that exists as a file, else the last name tried
    (left to the dynamic loader)."""
    cands = library_candidates()
    for _, path in cands:
        if os.path.sep in path and os.path.exists(path):
            return path
    return cands[-1][1]


def _text(raw):
    return raw.decode("utf-8", "replace") if raw else ""


def _bytes_or_none(text):
    return None if text is None else os.fsencode(text)


class Library:
    """libconvtune, loaded with its function signatures declared."""

    def __init__(self, path=None):
        lib, tried = None, []
        cands = [("given path", path)] if path else library_candidates()
        for what, cand in cands:
            if os.path.sep in cand and not os.path.exists(cand):
                tried.append("%s: %s (no such file)" % (what, cand))
                continue
            try:
                lib = ctypes.CDLL(cand)
                self.path = cand
                break
            except OSError as e:
                tried.append("%s: %s (%s)" % (what, cand, e))
        if lib is None:
            raise LibraryNotFound(
                "libconvtune not found; tried:\n  " + "\n  ".join(tried) +
                "\nBuild it (meson setup build && meson compile -C build) or install it "
                "(meson install -C build), then point at it in one of three ways:\n"
                "  1. CONVTUNE_LIB=/path/to/libconvtune.so (the file itself);\n"
                "  2. LD_LIBRARY_PATH=/path/to/its/folder (or run ldconfig after "
                "installing into a system folder);\n"
                "  3. PKG_CONFIG_PATH=/path/to/the/folder/of/convtune.pc "
                "(pkg-config's libdir is used).")
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
            # Added with struct ct_problem's act and layout (0.2.0); its
            # residual (0.3.0) and groups (0.4.0) lengthened it again, which
            # ct_problem_size tells: a library without them has an older,
            # shorter struct, so it is refused.
            "ct_activation_name": (cp, [i]),
            "ct_layout_name": (cp, [i]),
            "ct_problem_size": (sz, []),
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
        # Later additions: present in this source tree's library; an older
        # library simply lacks the methods that use them.
        optional = {
            "ct_forward_reason": (i, [vp, P, ctypes.c_char_p, sz]),
            "ct_prepare": (i, [vp, P]),
            "ct_database_status": (i, [vp, ctypes.c_char_p, sz]),
            "ct_weights_pack": (i, [vp, P, vp, vp, ctypes.POINTER(vp)]),
            "ct_forward_packed": (i, [vp, P, vp, vp, vp, vp, vp]),
            "ct_weights_bytes": (sz, [vp]),
            "ct_weights_free": (None, [vp]),
            "ct_default_database": (i, [ctypes.c_char_p, sz]),
        }
        for name, (restype, argtypes) in list(sigs.items()) + list(optional.items()):
            fn = getattr(lib, name, None)
            if fn is None:
                if name in optional:
                    continue
                raise ConvtuneError(CT_ERR_UNSUPPORTED, "unsupported",
                                    "%s lacks %s: a library older than this package"
                                    % (self.path, name))
            fn.restype = restype
            fn.argtypes = argtypes
        if lib.ct_problem_size() != ctypes.sizeof(Problem):
            raise ConvtuneError(CT_ERR_UNSUPPORTED, "unsupported",
                                "%s has a struct ct_problem of %d bytes, this package %d: "
                                "the library and the package come from different versions"
                                % (self.path, lib.ct_problem_size(), ctypes.sizeof(Problem)))

    def has(self, name):
        """Whether the loaded library exports the function `name`."""
        return getattr(self._lib, name, None) is not None

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
        """Parses a spec (README.md, "Problem specs") with ct_problem_parse.
        Raises TypeError unless spec is a str, ConvtuneError when it is not a
        valid spec."""
        if not isinstance(spec, str):
            raise TypeError("a problem spec is a str such as 'n=1,c=3,h=224,w=224,"
                            "k=64,r=7,s=7', not %s" % type(spec).__name__)
        if "\0" in spec:
            self._raise(CT_ERR_PARSE, "cannot parse problem spec %r: it contains a NUL "
                        "character" % spec)
        p = Problem()
        err = ctypes.create_string_buffer(256)
        st = self._lib.ct_problem_parse(spec.encode(), ctypes.byref(p), err, len(err))
        if st != CT_OK:
            self._raise(st, "cannot parse problem spec %r: %s" % (spec, _text(err.value)))
        return p

    def validate(self, p):
        """ct_problem_validate: raises ConvtuneError (CT_ERR_INVALID_PROBLEM)
        naming the offending field, else returns p."""
        err = ctypes.create_string_buffer(256)
        st = self._lib.ct_problem_validate(ctypes.byref(p), err, len(err))
        if st != CT_OK:
            self._raise(st, _text(err.value))
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

    def default_database(self):
        """The tuning database that open(None) opens and `convtune` uses
        without --db, as the environment is now (ct_default_database):
        $CONVTUNE_DB, else $XDG_CACHE_HOME/convtune/tuning.db, else
        ~/.cache/convtune/tuning.db; None when none of those is set."""
        if not self.has("ct_default_database"):
            self._raise(CT_ERR_UNSUPPORTED, "%s lacks ct_default_database: a library older "
                        "than this package" % self.path)
        buf = ctypes.create_string_buffer(4096)
        st = self._lib.ct_default_database(buf, len(buf))
        if st == CT_ERR_IO:
            return None
        if st != CT_OK:
            self._raise(st, "ct_default_database: the path does not fit in %d bytes" % len(buf))
        return _text(buf.value)

    # -- contexts ---------------------------------------------------------

    def open(self, db_path=None, device=0):
        """A Context on CUDA device `device` with the tuning database at
        db_path (None: $CONVTUNE_DB, else the per-user default; "": none).
        A database that is missing or unusable does not fail this: see
        Context.database_status()."""
        handle = ctypes.c_void_p()
        st = self._lib.ct_open(_bytes_or_none(db_path), int(device), ctypes.byref(handle))
        if st != CT_OK:
            self._raise(st, "ct_open: " + _text(self._lib.ct_open_error()))
        return Context(self, handle)


class PackedWeights:
    """Weights packed once by Context.pack_weights: device memory the
    library holds until free() (or garbage collection) releases it, which
    synchronises the context first; closing the context releases it too."""

    def __init__(self, context, problem, handle):
        self.context = context
        self.problem = problem
        self._handle = handle

    @property
    def bytes(self):
        """The device memory held (0 once freed)."""
        return self.context._lib.ct_weights_bytes(self._handle) if self._handle else 0

    _free_lock = threading.Lock()

    def free(self):
        with PackedWeights._free_lock:  # one free, whichever thread calls
            handle, self._handle = self._handle, None
        if handle:
            self.context._lib.ct_weights_free(handle)

    def __del__(self):
        self.free()


class Context:
    """An open ct_context.  close() it, or use it as a context manager.
    Safe to share between threads (so is the C context)."""

    def __init__(self, library, handle):
        self.library = library
        self._lib = library._lib
        self._handle = handle

    _close_lock = threading.Lock()

    def close(self):
        with Context._close_lock:  # one ct_close, whichever thread calls
            handle, self._handle = self._handle, None
        if handle:
            self._lib.ct_close(handle)

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

    def pack_weights(self, p, w, stream=0):
        """ct_weights_pack: p's weights (device pointer w) packed once, on
        `stream`, into memory of the library's own: a PackedWeights for
        forward_packed.  A copy: later changes to w do not reach it."""
        handle = ctypes.c_void_p()
        st = self._lib.ct_weights_pack(self._handle, ctypes.byref(p), w, stream or None,
                                       ctypes.byref(handle))
        self._check(st, "ct_weights_pack")
        return PackedWeights(self, p, handle)

    def forward_packed(self, p, x, packed, b, y, stream=0):
        """ct_forward_packed: forward() with weights from pack_weights (for
        this context and problem)."""
        if not isinstance(packed, PackedWeights) or packed.context is not self:
            raise ValueError("forward_packed needs PackedWeights from this context's "
                             "pack_weights")
        st = self._lib.ct_forward_packed(self._handle, ctypes.byref(p), x, packed._handle,
                                         b or None, y, stream or None)
        self._check(st, "ct_forward_packed")

    def launcher(self, p, packed=None):
        """forward(p, x, w, b, y, stream) as a function of (x, w, b, y,
        stream), p bound once; with packed, forward_packed(p, x, packed,
        b, y, stream) (w unused).  For a caller that repeats one call:
        nothing is checked in Python (the library still checks every
        call).  Holds p and packed; once the context is closed or packed
        freed, the library refuses the call."""
        if packed is not None and (not isinstance(packed, PackedWeights)
                                   or packed.context is not self):
            raise ValueError("launcher needs PackedWeights from this context's pack_weights")
        fn = self._lib.ct_forward if packed is None else self._lib.ct_forward_packed
        what = "ct_forward" if packed is None else "ct_forward_packed"
        ref, check = ctypes.byref(p), self._check

        def launch(x, w, b, y, stream):
            st = fn(self._handle, ref, x, w if packed is None else packed._handle, b, y, stream)
            if st != CT_OK:
                check(st, what)

        return launch

    def prepare(self, p):
        """ct_prepare: loads p's kernel without launching anything."""
        self._check(self._lib.ct_prepare(self._handle, ctypes.byref(p)), "ct_prepare")

    def forward_tensors(self, p, x, w, b, y):
        """ct_forward on torch tensors, on torch's current stream of x's
        device, after checking each tensor against the problem: fp32, on one
        CUDA device, of the problem's shape and dense in its layout (x, w, y
        contiguous for NCHW, channels_last for NHWC).  Raises ValueError
        naming the offending tensor."""
        import torch

        xs, ws, bs, ys = p.shapes()
        nhwc = p.layout == CT_LAYOUT_NHWC
        check_tensor("x", x, xs, None, nhwc)
        check_tensor("w", w, ws, x.device, nhwc)
        if p.bias:
            if b is None:
                raise ValueError("the problem has a bias but b is None")
            check_tensor("b", b, bs, x.device)
        check_tensor("y", y, ys, x.device, nhwc)
        stream = torch.cuda.current_stream(x.device).cuda_stream
        self.forward(p, x.data_ptr(), w.data_ptr(), b.data_ptr() if p.bias else None,
                     y.data_ptr(), stream)

    def forward_path(self, p):
        """(path name, variant name) of the kernel ct_forward runs for p:
        path is "none" (not run yet), "tuned-cubin", "tuned-compiled",
        "nearest" (the nearest tuned problem's winner) or "default"."""
        path = ctypes.c_int()
        buf = ctypes.create_string_buffer(256)
        st = self._lib.ct_forward_path(self._handle, ctypes.byref(p), ctypes.byref(path),
                                       buf, len(buf))
        self._check(st, "ct_forward_path")
        return self.library.path_name(path.value), _text(buf.value)

    def forward_reason(self, p):
        """Why ct_forward runs what it runs for p (one line of text)."""
        buf = ctypes.create_string_buffer(1024)
        st = self._lib.ct_forward_reason(self._handle, ctypes.byref(p), buf, len(buf))
        self._check(st, "ct_forward_reason")
        return _text(buf.value)

    def database_status(self):
        """(status name, message) of the context's tuning database:
        "CT_OK" when it is open and usable, else why default variants run
        (ct_database_status)."""
        buf = ctypes.create_string_buffer(1024)
        st = self._lib.ct_database_status(self._handle, buf, len(buf))
        name = STATUS[st] if 0 <= st < len(STATUS) else str(st)
        return name, _text(buf.value)


def check_tensor(name, t, shape, device, channels_last=False):
    """Raises ValueError unless t is a dense fp32 CUDA tensor of `shape` (on
    `device` when given): contiguous, or channels_last when that is set."""
    if str(t.dtype) != "torch.float32":
        raise ValueError("%s must be float32, not %s" % (name, t.dtype))
    if not t.is_cuda:
        raise ValueError("%s must be on a CUDA device, not %s" % (name, t.device))
    if device is not None and t.device != device:
        raise ValueError("%s is on %s but x is on %s" % (name, t.device, device))
    if tuple(t.shape) != tuple(shape):
        raise ValueError("%s has shape %s; the problem needs %s"
                         % (name, tuple(t.shape), tuple(shape)))
    if channels_last:
        import torch

        if not t.is_contiguous(memory_format=torch.channels_last):
            raise ValueError("%s must be channels_last (the problem is layout=nhwc); call "
                             ".contiguous(memory_format=torch.channels_last) first" % name)
    elif not t.is_contiguous():
        raise ValueError("%s must be contiguous (dense NCHW / KCRS); call .contiguous() "
                         "first (a channels_last tensor is not)" % name)


def load(path=None):
    """The Library at path (None: the first of library_candidates() that loads)."""
    return Library(path)
