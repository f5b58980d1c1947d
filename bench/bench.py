#!/usr/bin/env python3
"""bench.py — convtune against PyTorch on one conv2d problem, on one GPU.

Runs convtune (through libconvtune and ctypes) at tf32 and fp32, and PyTorch
eager (cuDNN, TF32 on and off, channels_last) and torch.compile on the same
inputs in one process; verifies every row against a float64 reference under
its precision contract (tuner/verify.h); times every row with the KernelBench
protocol (DESIGN.md, "Timing protocol"); measures the machine's copy and
matrix rates for the memory and compute floors; prints a table and writes
<out>/<gpu>.json and <out>/<gpu>.png.  Exits 1 when a convtune row fails its
contract or cannot run.

    python3 bench/bench.py [--lib PATH] [--db PATH] [--problem SPEC]
                           [--trials 100] [--max-autotune] [--no-compile]
                           [--out DIR] [--seed N] [--device N]

bench/README.md says what each column means.
"""

import argparse
import ctypes
import ctypes.util
import datetime
import json
import math
import os
import platform
import shutil
import subprocess
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import convtune_ctypes as ct  # noqa: E402
from suite import finite_or_none, gpu_slug  # noqa: E402,F401  (JSON has no Infinity or NaN)

# -------------------------------------------------------------------------
# The precision contract — tuner/verify.h, computed as tuner/verify.c's
# ct_tune_contract does.  L = (C/groups)*R*S (+1 with bias, +1 with a
# residual), n outputs, u_acc = 2^-24:
#   tf32: u_op = 2^-11, c_op = 1.0, c_acc = 0.75
#   fp32: u_op = 2^-22, c_op = 2.0, c_acc = 0.75
# y passes when (1) every element is finite, (2) elementwise
#   |y_i - ref_i| <= (2*u_op + (L+1)*u_acc) * abs_sum_i + 1e-37
# and (3) ||y - ref||_2 <= (1 + 3/sqrt(n)) * (c_op*u_op + c_acc*u_acc*sqrt(L)) * A,
# A = sqrt(sum_i sq_sum_i); abs_sum = sum |x*w| (+|b|), sq_sum = sum (x*w)^2 (+b^2).
# (4) On the headline problem's shape (any batch), DESIGN.md's figures too:
#   tf32: rel err <= 3.5e-4, max abs err <= 7e-4;
#   fp32: |y_i - ref_i| <= 1e-4 + 1e-4*|ref_i| and rel err <= 1e-6.
# max_abs_err and rel_err = ||y - ref|| / ||ref|| are over the finite outputs.

U_ACC = 2.0 ** -24
CONTRACT = {  # precision: (u_op, c_op, c_acc)
    "tf32": (2.0 ** -11, 1.0, 0.75),
    "fp32": (2.0 ** -22, 2.0, 0.75),
}


HEADLINE_TF32 = (3.5e-4, 7e-4)   # rel err, max abs err
HEADLINE_FP32 = (1e-6, 1e-4)     # rel err, atol = rtol
HEADLINE_SHAPE = dict(c=3, h=224, w=224, k=96, r=11, s=11, stride_h=4, stride_w=4,
                      pad_h=2, pad_w=2, dil_h=1, dil_w=1, bias=1, act=0, groups=1)


def is_headline_shape(problem):
    """Criterion (4) applies: the headline problem's shape, any batch."""
    return all(getattr(problem, k) == v for k, v in HEADLINE_SHAPE.items())


def reduction_length(problem):
    """L of the contract (tuner/verify.c's): (C/groups)*R*S terms per
    output (an output channel reads the C/groups input channels of its
    group), +1 with bias, +1 with a residual."""
    return ((problem.c // problem.groups) * problem.r * problem.s + (1 if problem.bias else 0)
            + (1 if problem.residual else 0))


def contract_check(y, ref, abs_sum, sq_sum, L, precision, headline=False):
    """The verdict of the precision contract on output y (any float dtype,
    any layout of the same shape) against the float64 figures of
    reference_fp64.  Returns a dict: passes, max_abs_err, rel_err,
    elem_ratio, frob_ratio (each <= 1 passes), n_nonfinite, reason."""
    u_op = CONTRACT[precision][0]
    n = y.numel()
    y64 = y.to(torch.float64)
    finite = torch.isfinite(y64)
    n_nonfinite = int(n - int(finite.sum()))
    zero = torch.zeros((), dtype=torch.float64, device=y64.device)
    d = torch.where(finite, y64 - ref, zero)
    del y64
    errdot = float((d * ref).sum())
    d.abs_()
    elem_coef = 2.0 * u_op + (L + 1.0) * U_ACC
    max_ratio = float((d / (elem_coef * abs_sum + 1e-37)).max()) if n else 0.0
    max_abs_err = float(d.max()) if n else 0.0
    max_close = float((d / (HEADLINE_FP32[1] * (1.0 + ref.abs()))).max()) if n else 0.0
    err2 = float((d * d).sum())
    del d
    ref2 = float(torch.where(finite, ref * ref, zero).sum())
    a2 = float(sq_sum.sum())

    return contract_verdict(err2=err2, ref2=ref2, a2=a2, max_abs_err=max_abs_err,
                            max_ratio=max_ratio, max_close=max_close,
                            n_nonfinite=n_nonfinite, n=n, L=L, precision=precision,
                            headline=headline, errdot=errdot)


def contract_verdict(err2, ref2, a2, max_abs_err, max_ratio, max_close, n_nonfinite, n, L,
                     precision, headline=False, errdot=None):
    """The contract's verdict from its figures over the n outputs: err2 =
    sum (y - ref)^2 and ref2 = sum ref^2 over the finite outputs, a2 = sum
    sq_sum, the largest |y - ref| / elementwise bound (max_ratio), the
    headline's fp32 figure (max_close) and the non-finite count.  Returns
    contract_check's dict, with bias = errdot / ref2 when errdot = sum
    (y - ref) * ref is given (reported, not a criterion): the part of the
    error that scales the output, -rel_err for a pure shrink (what a
    truncating accumulator does), near 0 for rounding to nearest.  A bias
    adds up layer after layer in a network; rounding errors partly cancel."""
    u_op, c_op, c_acc = CONTRACT[precision]
    err = math.sqrt(err2)
    frob_bound = (1.0 + 3.0 / math.sqrt(n)) * (c_op * u_op + c_acc * U_ACC * math.sqrt(L)) \
        * math.sqrt(a2)
    rel_err = err / math.sqrt(ref2) if ref2 > 0 else (math.inf if err > 0 else 0.0)
    frob_ratio = err / frob_bound if frob_bound > 0 else (math.inf if err > 0 else 0.0)
    elem_ratio = math.inf if n_nonfinite else max_ratio

    reasons = []
    if n_nonfinite:
        reasons.append("%d outputs NaN/Inf (unwritten?)" % n_nonfinite)
    if max_ratio > 1.0:
        reasons.append("elementwise: worst |y-ref| is %.3gx its bound" % max_ratio)
    if not frob_ratio <= 1.0:
        reasons.append("Frobenius: ||y-ref|| is %.3gx its bound (rel err %.3g)"
                       % (frob_ratio, rel_err))
    if headline and precision == "tf32" and (rel_err > HEADLINE_TF32[0]
                                             or max_abs_err > HEADLINE_TF32[1]):
        reasons.append("headline tf32: rel err %.3g (limit %.2g), max abs err %.3g (limit %.2g)"
                       % (rel_err, HEADLINE_TF32[0], max_abs_err, HEADLINE_TF32[1]))
    if headline and precision == "fp32" and (rel_err > HEADLINE_FP32[0] or max_close > 1.0):
        reasons.append("headline fp32: rel err %.3g (limit %.2g), worst element %.3gx atol=rtol=%.0e"
                       % (rel_err, HEADLINE_FP32[0], max_close, HEADLINE_FP32[1]))
    return {"passes": not reasons, "max_abs_err": max_abs_err, "rel_err": rel_err,
            "bias": errdot / ref2 if errdot is not None and ref2 > 0 else None,
            "elem_ratio": elem_ratio, "frob_ratio": frob_ratio,
            "n_nonfinite": n_nonfinite, "reason": "; ".join(reasons)}


# -------------------------------------------------------------------------
# Inputs, the float64 reference, PyTorch's conv

def conv_args(problem):
    """F.conv2d's stride, padding, dilation (per axis) and groups for the
    problem: w is (K, C/groups, R, S), PyTorch's grouped convolution."""
    return {"stride": (problem.stride_h, problem.stride_w),
            "padding": (problem.pad_h, problem.pad_w),
            "dilation": (problem.dil_h, problem.dil_w),
            "groups": problem.groups}


def make_inputs(problem, seed, device):
    """x ~ torch.rand like KernelBench's get_inputs(); w (K, C/groups, R, S)
    and b initialised as nn.Conv2d(C, K, (R, S), groups=groups)'s
    reset_parameters does (kaiming_uniform_(a=sqrt(5)), i.e.
    U(+-1/sqrt(fan_in)), and U(+-1/sqrt(fan_in)) for the bias, fan_in =
    (C/groups)*R*S).  Drawn on the CPU under torch.manual_seed(seed), then
    moved to `device`."""
    xs, ws, bs, _ = problem.shapes()
    torch.manual_seed(seed)
    x = torch.rand(*xs)
    w = torch.empty(*ws)
    nn.init.kaiming_uniform_(w, a=math.sqrt(5))
    b = None
    if bs is not None:
        bound = 1.0 / math.sqrt((problem.c // problem.groups) * problem.r * problem.s)
        b = torch.empty(*bs).uniform_(-bound, bound)
    to = lambda t: None if t is None else t.to(device).contiguous()  # noqa: E731
    return to(x), to(w), to(b)


def reference_fp64(problem, x, w, b):
    """(ref, abs_sum, sq_sum), float64 on x's device: the convolution,
    conv(|x|, |w|) + |b| and conv(x^2, w^2) + b^2 (verify.h's figures),
    each with the problem's groups (the sums run over an output channel's
    group's C/groups input channels)."""
    args = conv_args(problem)
    x64, w64 = x.double(), w.double()
    b64 = None if b is None else b.double()
    ref = F.conv2d(x64, w64, b64, **args)
    abs_sum = F.conv2d(x64.abs(), w64.abs(), None if b is None else b64.abs(), **args)
    sq_sum = F.conv2d(x64 * x64, w64 * w64, None if b is None else b64 * b64, **args)
    return ref, abs_sum, sq_sum


class Model(nn.Module):
    """KernelBench level 1 problem 50, as KernelBench states it
    (KernelBench/level1/50_conv_standard_2D__square_input__square_kernel.py):
    the reference bench/kernelbench_l1_p50.py's ModelNew is checked against."""

    def __init__(self, num_classes=1000):
        super(Model, self).__init__()
        self.conv1 = nn.Conv2d(in_channels=3, out_channels=96, kernel_size=11, stride=4,
                               padding=2)

    def forward(self, x):
        x = self.conv1(x)
        return x


# -------------------------------------------------------------------------
# Timing: the KernelBench protocol

FLUSH_BYTES = 256 << 20  # written before each trial to flush L2 (H200: 60 MB)
WARMUP_CALLS = 3


def time_call(fn, trials, flush):
    """KernelBench's cuda_event timing of fn(): WARMUP_CALLS untimed calls;
    then per trial: synchronize, write FLUSH_BYTES (flush.fill_), record a
    CUDA event, fn(), record an event, synchronize.  The first trial is
    discarded; returns the `trials` others' statistics in ms."""
    for _ in range(WARMUP_CALLS):
        fn()
        torch.cuda.synchronize()
    stream = torch.cuda.current_stream()
    ms = []
    for i in range(trials + 1):
        torch.cuda.synchronize()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        flush.fill_(i)
        start.record(stream)
        fn()
        end.record(stream)
        torch.cuda.synchronize()
        ms.append(start.elapsed_time(end))
    return stats(ms[1:])


def stats(ms):
    s = sorted(ms)
    n = len(s)
    median = s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
    return {"mean_ms": sum(s) / n, "median_ms": median, "min_ms": s[0], "max_ms": s[-1]}


def _median_ms(fn, reps):
    """The median of `reps` event-timed calls of fn() after one untimed call."""
    fn()
    torch.cuda.synchronize()
    ms = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        ms.append(start.elapsed_time(end))
    return stats(ms)["median_ms"]


# -------------------------------------------------------------------------
# Floors

COPY_BYTES = 2 << 30  # device-to-device copy: 2 GiB read, 2 GiB written
MATMUL_N = 8192
RATE_REPS = 10


def measure_rates():
    """The machine's rates: copy (bytes read + written per s, a COPY_BYTES
    device-to-device copy) and TF32 / fp32 matrix rates (FLOP/s, a
    MATMUL_N^3 matmul with allow_tf32 on / off); medians of RATE_REPS."""
    src = torch.empty(COPY_BYTES // 4, dtype=torch.float32, device="cuda").fill_(1.0)
    dst = torch.empty_like(src)
    copy_rate = 2 * COPY_BYTES / (_median_ms(lambda: dst.copy_(src), RATE_REPS) * 1e-3)
    del src, dst

    a = torch.randn(MATMUL_N, MATMUL_N, device="cuda")
    b = torch.randn(MATMUL_N, MATMUL_N, device="cuda")
    flops = 2.0 * MATMUL_N ** 3
    saved = torch.backends.cuda.matmul.allow_tf32
    rates = {}
    for name, tf32 in (("tf32", True), ("fp32", False)):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        rates[name] = flops / (_median_ms(lambda: torch.mm(a, b), RATE_REPS) * 1e-3)
    torch.backends.cuda.matmul.allow_tf32 = saved
    return {"copy_bytes_per_s": copy_rate, "tf32_flop_per_s": rates["tf32"],
            "fp32_flop_per_s": rates["fp32"],
            "how": "copy: %d-byte device-to-device copy, (read + written) / time; "
                   "matrix: %d^3 torch.mm, allow_tf32 on (tf32) / off (fp32); "
                   "medians of %d" % (COPY_BYTES, MATMUL_N, RATE_REPS)}


def floors(problem, rates):
    """The problem's floors in ms from the measured rates.  memory: x, y, w
    (K*(C/groups)*R*S elements, problem.shapes()'s), b crossing HBM once;
    tf32 / fp32: 2*N*K*P*Q*(C/groups)*R*S FLOPs at the TF32 / fp32 matrix
    rate; tf32x3: a 3xTF32 split; and the floor of each precision class:
    max(memory, best compute) (fp32 class: fp32 or tf32x3, whichever is
    lower)."""
    xs, ws, bs, ys = problem.shapes()
    numel = lambda s: 0 if s is None else math.prod(s)  # noqa: E731
    bytes_ = 4 * (numel(xs) + numel(ys) + numel(ws) + numel(bs))
    P, Q = problem.output_hw()
    flops = (2.0 * problem.n * problem.k * P * Q * (problem.c // problem.groups) * problem.r
             * problem.s)
    f = {"bytes": bytes_, "flops": flops,
         "memory_ms": bytes_ / rates["copy_bytes_per_s"] * 1e3,
         "tf32_ms": flops / rates["tf32_flop_per_s"] * 1e3,
         "fp32_ms": flops / rates["fp32_flop_per_s"] * 1e3}
    f["tf32x3_ms"] = 3.0 * f["tf32_ms"]
    f["class_ms"] = {"tf32": max(f["memory_ms"], f["tf32_ms"]),
                     "fp32": max(f["memory_ms"], min(f["fp32_ms"], f["tf32x3_ms"]))}
    return f


# -------------------------------------------------------------------------
# Machine and versions

def _nvidia_smi_driver(index):
    """The driver version nvidia-smi reports; None without nvidia-smi."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return None
    try:
        r = subprocess.run([exe, "--query-gpu=driver_version", "--format=csv,noheader",
                            "-i", str(index)], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return (r.stdout.strip() or None) if r.returncode == 0 else None


def _cuda_driver_api_version():
    """cuDriverGetVersion from libcuda, as "13.0"; None without it."""
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("cuda") or "libcuda.so.1")
    except OSError:
        return None
    v = ctypes.c_int()
    if lib.cuDriverGetVersion(ctypes.byref(v)) != 0:
        return None
    return "%d.%d" % (v.value // 1000, (v.value % 1000) // 10)


def machine_info(device):
    props = torch.cuda.get_device_properties(device)
    cudnn = torch.backends.cudnn.version()
    return {
        "gpu": torch.cuda.get_device_name(device),
        "device_index": device,
        "compute_capability": "%d.%d" % (props.major, props.minor),
        "sm_count": props.multi_processor_count,
        "memory_gib": round(props.total_memory / 2 ** 30, 1),
        "driver": _nvidia_smi_driver(device),
        "cuda_driver_api": _cuda_driver_api_version(),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "cudnn": None if cudnn is None else "%d.%d.%d" % (cudnn // 10000, cudnn % 10000 // 100,
                                                           cudnn % 100),
        "python": platform.python_version(),
        "host_cpu": platform.processor() or platform.machine(),
    }


def db_description(db):
    """The tuning database ct_open uses, by its rule (convtune.h)."""
    if db:
        return db
    if os.environ.get("CONVTUNE_DB"):
        return os.environ["CONVTUNE_DB"] + " ($CONVTUNE_DB)"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "convtune", "tuning.db") + " (default)"


# -------------------------------------------------------------------------
# The rows

class Row:
    """One implementation.  setup() does what must happen before timing
    (allocating, compiling, loading the kernel) and returns (call, y): y is
    the output of a first call, call() is what is timed.  While the row runs,
    torch.backends.cudnn.allow_tf32 is `tf32`."""

    def __init__(self, name, precision, kind, setup, tf32=True, note="", problem=None):
        self.name = name
        self.precision = precision  # the contract and floor class it is held to
        self.kind = kind            # "convtune" or "pytorch"
        self.setup = setup
        self.tf32 = tf32
        self.problem = problem      # convtune rows: the ct_problem they run
        self.result = {"name": name, "precision": precision, "kind": kind, "note": note}


class cudnn_tf32:
    """torch.backends.cudnn.allow_tf32 = flag for a block."""

    def __init__(self, flag):
        self.flag = flag

    def __enter__(self):
        self.saved = torch.backends.cudnn.allow_tf32
        torch.backends.cudnn.allow_tf32 = self.flag

    def __exit__(self, *exc):
        torch.backends.cudnn.allow_tf32 = self.saved


def convtune_row(lib, ctx, problem, prec, x, w, b, packed=False):
    """ct_forward at `prec` into a preallocated y, on the current stream (x,
    w and y channels_last for a layout=nhwc problem); packed: ct_forward_packed
    with w packed once in setup (no weight pass in the timed calls)."""
    p = problem.copy(precision=ct.PRECISIONS[prec])

    def setup():
        _, _, _, ys = p.shapes()
        y = torch.full(ys, float("nan"), device=x.device)  # poisoned: unwritten fails
        if p.layout == ct.CT_LAYOUT_NHWC:
            y = y.contiguous(memory_format=torch.channels_last)
        ctx.forward_tensors(p, x, w, b, y)  # checks the tensors; loads the kernel
        ptrs = (x.data_ptr(), w.data_ptr(), None if b is None else b.data_ptr(), y.data_ptr())
        stream = torch.cuda.current_stream(x.device).cuda_stream
        if packed:
            pw = ctx.pack_weights(p, w.data_ptr(), stream)

            def call():  # holds y and the packed weights while timed
                ctx.forward_packed(p, ptrs[0], pw, ptrs[2], ptrs[3], stream)
                return y
            y.fill_(float("nan"))  # the output checked is the packed call's
            call()
            return call, y

        def call():  # holds y, which the kernel writes, for as long as it is timed
            ctx.forward(p, *ptrs, stream)
            return y
        return call, y

    spec = lib.format(p)
    row = Row("convtune " + prec, prec, "convtune", setup,
              note=("ct_forward_packed, " if packed else "ct_forward, ") + spec, problem=p)
    row.result["spec"] = spec
    row.result["packed"] = bool(packed)
    return row


def pytorch_row(name, precision, make_fn, args, tf32, note):
    """fn(*args), with fn = make_fn() made in setup (so that a torch.compile
    failure is the row's error); fn's first call, which compiles, is there
    too.  Each call returns a new output."""
    def setup():
        fn = make_fn()
        return (lambda: fn(*args)), fn(*args)
    return Row(name, precision, "pytorch", setup, tf32=tf32, note=note)


def build_rows(args, lib, ctx, problem, x, w, b):
    cargs = conv_args(problem)

    def conv(xx, ww, bb):
        return F.conv2d(xx, ww, bb, **cargs)

    # A function of its own for each torch.compile mode, so that the two
    # compiled versions never share a Dynamo cache entry.
    def conv_compile_default(xx, ww, bb):
        return F.conv2d(xx, ww, bb, **cargs)

    def conv_compile_max_autotune(xx, ww, bb):
        return F.conv2d(xx, ww, bb, **cargs)

    x_cl = x.contiguous(memory_format=torch.channels_last)
    w_cl = w.contiguous(memory_format=torch.channels_last)
    eager = lambda: conv  # noqa: E731
    rows = [
        convtune_row(lib, ctx, problem, "tf32", x, w, b),
        convtune_row(lib, ctx, problem, "fp32", x, w, b),
        pytorch_row("eager (cuDNN, TF32)", "tf32", eager, (x, w, b), True,
                    "F.conv2d, torch.backends.cudnn.allow_tf32 = True (PyTorch's default)"),
        pytorch_row("eager, TF32 off", "fp32", eager, (x, w, b), False,
                    "F.conv2d, torch.backends.cudnn.allow_tf32 = False"),
        pytorch_row("eager, channels_last", "tf32", eager, (x_cl, w_cl, b), True,
                    "F.conv2d on x and w already in channels_last: only the conv is timed, "
                    "not converting x to channels_last (nor y back to NCHW)"),
    ]
    if not args.no_compile:
        rows.append(pytorch_row("torch.compile", "tf32",
                                lambda: torch.compile(conv_compile_default), (x, w, b), True,
                                "torch.compile(F.conv2d), default mode (inductor)"))
    if not args.no_compile and args.max_autotune:
        rows.append(pytorch_row(
            "torch.compile max-autotune", "tf32",
            lambda: torch.compile(conv_compile_max_autotune, mode="max-autotune-no-cudagraphs"),
            (x, w, b), True, 'torch.compile(F.conv2d, mode="max-autotune-no-cudagraphs")'))
    return rows


def verify_and_time(row, ctx, ref_figs, L, headline, trials, flush):
    """Sets the row up, verifies its first output under the row's contract
    (with criterion (4) when `headline`), times it.  Fills row.result; an exception becomes the row's error (the
    other rows still run)."""
    r = row.result
    try:
        with cudnn_tf32(row.tf32):
            call, y = row.setup()
            if row.kind == "convtune":
                r["path"], r["variant"] = ctx.forward_path(row.problem)
            torch.cuda.synchronize()
            r.update(contract_check(y, *ref_figs, L, row.precision,
                                    headline=headline))
            del y
            r.update(time_call(call, trials, flush))
    except Exception as e:  # noqa: BLE001 — a row that cannot run says why
        r["error"] = "%s: %s" % (type(e).__name__, e)
        r["passes"] = False


def add_ratios(results, fl):
    """speedup_vs_compile / _eager (baseline mean / row mean: > 1 is faster)
    and x_floor (row mean / the floor of its precision class)."""
    def mean_of(name):
        return next((r.get("mean_ms") for r in results if r["name"] == name), None)

    compile_ms, eager_ms = mean_of("torch.compile"), mean_of("eager (cuDNN, TF32)")
    for r in results:
        m = r.get("mean_ms")
        r["speedup_vs_compile"] = compile_ms / m if m and compile_ms else None
        r["speedup_vs_eager"] = eager_ms / m if m and eager_ms else None
        r["x_floor"] = m / fl["class_ms"][r["precision"]] if m else None


# -------------------------------------------------------------------------
# Output

def fmt_ms(v):
    if v is None:
        return "-"
    return "%.3f" % v if v >= 1 else ("%.4f" % v if v >= 0.001 else "%.3g" % v)


def fmt_e(v):
    return "-" if v is None else ("inf" if v == math.inf else "%.2e" % v)


def fmt_x(v):
    return "-" if v is None else "%.2fx" % v


def verdict(r):
    return "error" if "error" in r else ("ok" if r.get("passes") else "FAIL")


def table(results):
    """The results table, one row per implementation, as text."""
    head = ["name", "prec", "mean ms", "median ms", "speedup vs compile", "speedup vs eager",
            "max abs err", "rel err", "pass", "x floor"]
    body = [[r["name"], r["precision"], fmt_ms(r.get("mean_ms")), fmt_ms(r.get("median_ms")),
             fmt_x(r["speedup_vs_compile"]), fmt_x(r["speedup_vs_eager"]),
             fmt_e(r.get("max_abs_err")), fmt_e(r.get("rel_err")), verdict(r),
             fmt_x(r["x_floor"])] for r in results]
    widths = [max(len(c) for c in col) for col in zip(head, *body)]

    def line(cells):  # text columns left-aligned, figures right-aligned
        return "  ".join(c.ljust(wd) if i < 2 else c.rjust(wd)
                         for i, (c, wd) in enumerate(zip(cells, widths))).rstrip()
    return "\n".join([line(head), line(["-" * wd for wd in widths])] + [line(l) for l in body])


def plot(results, fl, title, path):
    """Horizontal bars of mean ms per row (failing rows red and hatched),
    with the memory, TF32 and 3xTF32 floors as vertical lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = list(reversed(results))  # the first row on top
    means = [r.get("mean_ms") for r in rows]
    floors_ = [("memory floor", fl["memory_ms"], "--", "#1f77b4"),
               ("TF32 floor", fl["tf32_ms"], "--", "#2ca02c"),
               ("3xTF32 floor", fl["tf32x3_ms"], ":", "#ff7f0e")]
    shown = [m for m in means if m] + [v for _, v, _, _ in floors_]
    log = max(shown) / min(shown) > 30  # one slow row would squash the others
    fig, ax = plt.subplots(figsize=(10, 0.5 * len(rows) + 2.6))
    for i, (r, m) in enumerate(zip(rows, means)):
        failed = not r.get("passes")
        color = "#d62728" if failed else ("#2a7ab9" if r["kind"] == "convtune" else "#9a9a9a")
        if m:
            ax.barh(i, m, color=color, hatch="//" if failed else None, edgecolor="black",
                    linewidth=0.5)
        label = ("error: " + r["error"][:70]) if "error" in r else \
            "%s ms%s" % (fmt_ms(m), "" if r.get("passes") else "  FAIL")
        ax.text(m or (min(shown) / 1.5 if log else 0), i, "  " + label, va="center", fontsize=8)
    for label, v, style, color in floors_:
        ax.axvline(v, linestyle=style, color=color, label="%s %s ms" % (label, fmt_ms(v)))
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(["%s (%s)" % (r["name"], r["precision"]) for r in rows], fontsize=9)
    if log:
        ax.set_xscale("log")
        ax.set_xlim(min(shown) / 1.5, max(shown) * 4)
    else:
        ax.set_xlim(0, max(shown) * 1.35)
    ax.set_xlabel("mean ms, KernelBench protocol (lower is better)")
    ax.set_title(title, fontsize=9)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=3, fontsize=8,
              frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# -------------------------------------------------------------------------
# Main

def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="convtune against PyTorch on one conv2d problem (KernelBench protocol)")
    ap.add_argument("--lib", help="libconvtune.so (default: $CONVTUNE_LIB, else "
                    "build/runtime/libconvtune.so)")
    ap.add_argument("--db", help="tuning database (default: ct_open's: $CONVTUNE_DB, else "
                    "$XDG_CACHE_HOME/convtune/tuning.db, else ~/.cache/convtune/tuning.db)")
    ap.add_argument("--problem", metavar="SPEC", help="problem spec, README.md 'Problem "
                    "specs' (default: the headline problem); its prec is ignored: convtune "
                    "runs at both")
    ap.add_argument("--trials", type=int, default=100, help="timed trials per row (100)")
    ap.add_argument("--max-autotune", action="store_true", help='add torch.compile('
                    'mode="max-autotune-no-cudagraphs"), which takes minutes to compile')
    ap.add_argument("--no-compile", action="store_true", help="leave out the torch.compile rows")
    ap.add_argument("--out", metavar="DIR", default=os.path.join(HERE, "results"),
                    help="folder for <gpu>.json and <gpu>.png (default: bench/results)")
    ap.add_argument("--seed", type=int, default=0, help="torch.manual_seed for the inputs (0)")
    ap.add_argument("--device", type=int, default=0, help="CUDA device index (0)")
    a = ap.parse_args(argv)
    if a.trials < 1:
        ap.error("--trials must be >= 1")
    return a


def print_header(machine, args, lib, spec):
    print("GPU      %s (sm_%s, %d SMs, %.0f GiB), device %d"
          % (machine["gpu"], machine["compute_capability"].replace(".", ""),
             machine["sm_count"], machine["memory_gib"], args.device))
    print("driver   %s (CUDA driver API %s)" % (machine["driver"] or "?",
                                                 machine["cuda_driver_api"] or "?"))
    print("versions torch %s, CUDA %s, cuDNN %s, Python %s"
          % (machine["torch"], machine["torch_cuda"], machine["cudnn"], machine["python"]))
    print("problem  %s" % spec)
    print("library  %s" % lib.path)
    print("database %s" % db_description(args.db))
    print("inputs   torch.manual_seed(%d); x = torch.rand; w, b initialised as nn.Conv2d does"
          % args.seed)
    print("timing   KernelBench protocol: %d MiB written before each trial, CUDA events, "
          "%d warm-up calls, 1 discarded trial, mean of %d"
          % (FLUSH_BYTES >> 20, WARMUP_CALLS, args.trials))
    print()


def print_notes(results, rates, fl):
    """What the table needs said: kernels, errors, failures, what is timed,
    the rates and floors."""
    wd = max(len(r["name"]) for r in results) + 1
    for r in results:
        if r["kind"] == "convtune" and "path" in r:
            print("%-*s kernel: %s, variant %s" % (wd, r["name"], r["path"], r["variant"] or "?"))
            if r["path"] == "default":
                print("%-*s NOTE: the database has no entry for %s on this GPU: the default "
                      "variant ran (NVRTC-compiled, untuned); run `convtune tune --problem %s` "
                      "first" % (wd, "", r["spec"], r["spec"]))
            elif r["path"] == "tuned-compiled":
                print("%-*s note: the stored cubin could not be used; the tuned variant was "
                      "recompiled" % (wd, ""))
    for r in results:
        if "error" in r:
            print("%-*s ERROR: %s" % (wd, r["name"], r["error"]))
        elif not r["passes"]:
            print("%-*s FAILS its %s contract: %s" % (wd, r["name"], r["precision"], r["reason"]))
    for r in results:
        if r["kind"] == "pytorch":
            print("%-*s %s" % (wd, r["name"], r["note"]))
    print("rates    copy %.2f TB/s; matrix TF32 %.0f TFLOP/s, fp32 %.1f TFLOP/s"
          % (rates["copy_bytes_per_s"] / 1e12, rates["tf32_flop_per_s"] / 1e12,
             rates["fp32_flop_per_s"] / 1e12))
    print("floors   memory %.4g ms (%.4g MB), TF32 %.4g ms, 3xTF32 %.4g ms, fp32 %.4g ms "
          "(%.4g GFLOP)" % (fl["memory_ms"], fl["bytes"] / 1e6, fl["tf32_ms"], fl["tf32x3_ms"],
                            fl["fp32_ms"], fl["flops"] / 1e9))
    print("x floor  mean / the floor of the row's precision: tf32 %.4g ms = max(memory, TF32); "
          "fp32 %.4g ms = max(memory, min(fp32, 3xTF32))"
          % (fl["class_ms"]["tf32"], fl["class_ms"]["fp32"]))
    print("contract tuner/verify.h: finite, elementwise and Frobenius bounds; u_op = 2^-11 "
          "for tf32 rows, 2^-22 for fp32 rows")
    print()


def main(argv=None):
    args = parse_args(argv)
    try:
        lib = ct.load(args.lib)
        problem = lib.parse(args.problem) if args.problem else lib.default_problem()
    except (OSError, ct.ConvtuneError) as e:
        print("bench: %s" % e, file=sys.stderr)
        return 1
    spec = lib.format(problem)
    if not torch.cuda.is_available():
        print("bench: PyTorch sees no CUDA device; the bench needs a GPU", file=sys.stderr)
        return 1
    torch.cuda.set_device(args.device)
    torch.backends.cudnn.allow_tf32 = True  # PyTorch's default for convolutions
    machine = machine_info(args.device)
    print_header(machine, args, lib, spec)

    dev = torch.device("cuda", args.device)
    x, w, b = make_inputs(problem, args.seed, dev)
    try:
        ctx = lib.open(args.db, args.device)
    except ct.ConvtuneError as e:
        print("bench: %s" % e, file=sys.stderr)
        return 1
    rows = build_rows(args, lib, ctx, problem, x, w, b)
    ref_figs = reference_fp64(problem, x, w, b)
    L = reduction_length(problem)
    flush = torch.empty(FLUSH_BYTES // 8, dtype=torch.int64, device=dev)
    for row in rows:
        print("running  %s ..." % row.name, flush=True)
        verify_and_time(row, ctx, ref_figs, L, is_headline_shape(problem), args.trials, flush)
    results = [row.result for row in rows]
    del ref_figs, flush, rows  # frees the outputs and compiled functions
    ctx.close()
    torch.cuda.empty_cache()

    print("measuring the copy and matrix rates for the floors ...", flush=True)
    rates = measure_rates()
    fl = floors(problem, rates)
    add_ratios(results, fl)
    print()
    print_notes(results, rates, fl)

    doc = {
        "problem": spec, "trials": args.trials, "seed": args.seed,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine, "library": lib.path, "database": db_description(args.db),
        "protocol": "KernelBench: %d MiB written before each trial, CUDA events on the current "
                    "stream, synchronize per trial, %d untimed warm-up calls, 1 discarded "
                    "trial, then mean / median / min / max of %d"
                    % (FLUSH_BYTES >> 20, WARMUP_CALLS, args.trials),
        "contract": "tuner/verify.h; passes = all outputs finite and within the elementwise "
                    "and Frobenius bounds; ratios <= 1 pass; null = not finite",
        "floors": dict(fl, rates=rates),
        "rows": results,
    }
    slug = gpu_slug(machine["gpu"])
    os.makedirs(args.out, exist_ok=True)
    json_path = os.path.join(args.out, slug + ".json")
    with open(json_path, "w") as f:
        json.dump(finite_or_none(doc), f, indent=2, allow_nan=False)
        f.write("\n")
    png_path = os.path.join(args.out, slug + ".png")
    plot(results, fl, "%s: conv2d %s\nmean of %d trials, KernelBench protocol"
         % (machine["gpu"], spec, args.trials), png_path)
    print("wrote    %s\n         %s" % (json_path, png_path))
    print()
    print(table(results))

    bad = [r["name"] for r in results if r["kind"] == "convtune" and not r.get("passes")]
    if bad:
        print("\nbench: %s did not pass (see above)" % ", ".join(bad), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
