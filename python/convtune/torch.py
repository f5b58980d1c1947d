"""convtune.torch — libconvtune's conv2d for PyTorch, through ctypes (no
extension is compiled against PyTorch).

    conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1,
           *, precision="auto", act="none", residual=None)
        F.conv2d's arguments and result (groups: PyTorch's grouped
        convolution, depthwise with groups = C; act="relu" / "relu6":
        through a ReLU / ReLU6 the kernel applies; residual: a tensor of
        the output's shape the kernel adds before the activation); runs
        libconvtune's ct_forward on the current CUDA stream of x's device.
    Conv2d(in_channels, out_channels, kernel_size, stride=1, padding=0,
           dilation=1, groups=1, bias=True, padding_mode="zeros",
           device=None, dtype=None, *, precision="auto")
        a drop-in for nn.Conv2d: a subclass, so its parameters, their
        initialisation and its state_dict keys are nn.Conv2d's; its forward
        is conv2d.  Conv2d.from_module(m) converts an nn.Conv2d.
    torch.ops.convtune.conv2d(x, weight, bias, stride, padding, dilation,
                              precision, act="none", residual=None, groups=1)
        the registered custom op behind both, with a fake (meta)
        implementation, so it traces into torch.compile graphs (fullgraph
        too) and, being free of allocation and synchronisation after its
        first call per shape, replays inside CUDA graphs.  Eager calls that
        need nothing of the dispatcher (no autograd, tracing, tensor
        subclass, mode or profiler: _needs_op) run its implementation
        directly, which saves the op's dispatch, 15-20 us a call.  While
        the profiler records, a Conv2d(pack_weights=True) still runs its
        packed call, in a record_function named convtune::conv2d.
    explain(x, weight, bias=None, ...)
        which kernel runs for that call and why (path, variant, reason,
        database state).
    collect(model, *example_inputs, precision="auto", fold_bn=True,
            fuse_relu=True, fuse_residual=True, grouped=False, ...)
        the conv2d problems one forward pass of a model runs (forward hooks
        on its nn.Conv2d modules; BatchNorms folded, additions, ReLUs and
        ReLU6s fused as patch() does),
        with call counts, in the form
        `convtune tune --problems` reads, and the convolutions convtune
        cannot run, each with the reason.
    tune(model, *example_inputs, budget=None, ...)
        collect(), then `convtune tune --problems` on them, with its
        progress; returns its result.
    patch(model, fold_bn=True, fuse_relu=True, fuse_residual=True,
          grouped=False, channels_last=False, precision="auto", inplace=False)
        the model for inference with its nn.Conv2d modules replaced by
        Conv2d (eval-mode BatchNorms folded into the convolution before
        them, a residual addition and a ReLU or ReLU6 after them fused into
        its kernel), and a report of what was replaced and what was left alone,
        and why.

precision: "tf32" (TF32 tensor-core products, PyTorch's default for
convolutions), "fp32" (IEEE-fp32-class accuracy) or "auto": tf32 where
PyTorch lets cuDNN's convolutions use TF32 (torch.backends.cudnn.allow_tf32,
or torch.backends.cudnn.conv.fp32_precision where the per-operator
settings of convolutions and RNNs differ), else fp32, read each time the
op runs.

Layouts: a contiguous x runs NCHW, a channels_last x NHWC (layout=nhwc in
the spec; the output is channels_last too); a weight in the other memory
format is copied into x's for each call (patch() and
model.to(memory_format=torch.channels_last) give weights in the model's).
An x that is both (C = 1, or H = W = 1) runs NHWC where x or the weight
was made channels_last (strides exactly that format's), else NCHW.

Groups: any groups F.conv2d takes (groups dividing C and K; weight of
shape (K, C / groups, R, S); depthwise: groups = C, K a multiple of C),
",groups=G" in the spec.  The library runs them on its FFMA families,
which meet tf32 and fp32 alike: direct (any groups), dw and dwc
(depthwise, NCHW and NHWC), and on tc and tc3 (tensor cores; NCHW, 4 or
more output channels a group); patch(), collect() and tune() leave grouped
convolutions to PyTorch unless given grouped=True (the report says so).

Unsupported cases raise UnsupportedError naming the reason; nothing falls
back silently to another implementation: tensors not float32,
on the CPU or on another device than x, neither contiguous nor
channels_last (a strided view), padding_mode other than "zeros",
padding="same" that would need asymmetric padding, sizes beyond the
library's 32-bit indexing.

Gradients: the forward pass is libconvtune's; the backward pass is PyTorch's
own convolution_backward, so modules train as usual.

Each CUDA device gets one context, opened on first use with the tuning
database at $CONVTUNE_DB, else the per-user default; set_database() chooses
another before that.  An unusable database is not an error: default
variants run and explain() says why.
"""

import copy
import json
import operator
import os
import shutil
import subprocess
import tempfile
import threading
import warnings
import weakref
from typing import List, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import parametrize
from torch.utils import _python_dispatch

from . import _lib

if not hasattr(torch.library, "custom_op"):  # pragma: no cover
    raise ImportError("convtune.torch needs PyTorch 2.4 or newer (torch.library.custom_op); "
                      "this is %s" % torch.__version__)

__all__ = ["conv2d", "Conv2d", "UnsupportedError", "explain", "set_database",
           "library", "context", "collect", "write_problems", "tune", "TuneError", "patch"]


class UnsupportedError(ValueError):
    """A convolution convtune does not run; the message says why."""


class TuneError(RuntimeError):
    """tune() did not tune every problem: the tuner failed (exit status
    `returncode`), or some problems failed; `result` holds the tuner's JSON
    where it printed one, `collected` collect()'s result."""

    def __init__(self, message, returncode, result, collected):
        super().__init__(message)
        self.returncode = returncode
        self.result = result
        self.collected = collected


# -------------------------------------------------------------------------
# The library and one context per device

_lock = threading.Lock()
_state = {"library": None, "db": None, "contexts": {}, "retired": []}


def library():
    """The loaded libconvtune (convtune._lib.Library), loaded once."""
    with _lock:
        if _state["library"] is None:
            _state["library"] = _lib.load()
        return _state["library"]


def set_database(path):
    """Uses the tuning database at `path` ("" for none, None for the default)
    for contexts opened from now on; contexts already open are kept for
    the calls in flight and no longer used."""
    with _lock:
        _state["db"] = path
        _retire_contexts()


def _retire_contexts():
    """Contexts opened from now on read the database afresh (they cache
    what they looked up); the open ones are kept for the calls in flight.
    Called with _lock held."""
    _state["retired"].extend(_state["contexts"].values())
    _state["contexts"] = {}


def context(device):
    """The convtune context of a CUDA device (a torch.device or index)."""
    index = torch.device(device).index if not isinstance(device, int) else device
    if index is None:
        index = torch.cuda.current_device()
    lib = library()
    with _lock:
        ctx = _state["contexts"].get(index)
        if ctx is None:
            ctx = lib.open(_state["db"], index)
            _state["contexts"][index] = ctx
        return ctx


# -------------------------------------------------------------------------
# Arguments

_PRECISIONS = ("auto", "tf32", "fp32")
_ACTS = tuple(_lib.ACTIVATIONS)  # "none", "relu", "relu6"


def _check_precision(precision):
    if precision not in _PRECISIONS:
        raise ValueError("precision must be one of %s, not %r" % (", ".join(_PRECISIONS),
                                                                   precision))
    return precision


def _check_act(act):
    if act not in _ACTS:
        raise ValueError("act must be one of %s, not %r" % (", ".join(_ACTS), act))
    return act


# Each activation in torch, for the paths that apply it outside the kernel.
_ACT_FUNCTIONS = {"none": lambda y: y, "relu": torch.relu, "relu6": F.relu6}


def _cudnn_conv_tf32():
    """Whether PyTorch lets its cuDNN convolutions use TF32:
    torch.backends.cudnn.allow_tf32 (read on every call of a Conv2d: the
    cheap read), which torch >= 2.9 refuses once its per-operator settings
    for convolutions and RNNs differ; then the convolutions' own,
    torch.backends.cudnn.conv.fp32_precision ("ieee": no; "tf32", or
    "none" left to cuDNN's default: yes)."""
    try:
        return torch.backends.cudnn.allow_tf32
    except RuntimeError:
        return torch.backends.cudnn.conv.fp32_precision != "ieee"


def _resolve_precision(precision):
    if precision == "auto":
        return "tf32" if _cudnn_conv_tf32() else "fp32"
    return precision


def _pair(value, name):
    """An int or a sequence of 1 or 2 ints as a list of 2 ints; TypeError
    for other values (a float is not truncated), as F.conv2d raises."""
    if isinstance(value, (list, tuple)):
        if len(value) == 1:
            value = (value[0], value[0])
        if len(value) != 2:
            raise ValueError("%s must be an int or a pair of ints, not %r" % (name, value))
    else:
        value = (value, value)
    try:
        return [operator.index(value[0]), operator.index(value[1])]
    except TypeError:
        raise TypeError("%s must be an int or a pair of ints, not %r" % (name, value)) from None


def _check_int_arguments(module):
    """Raises TypeError (ValueError) unless the conv module's stride,
    dilation and padding (unless a string) are ints or pairs of ints."""
    for name in ("stride", "dilation") + (() if isinstance(module.padding, str)
                                          else ("padding",)):
        _pair(getattr(module, name), name)


def _same_padding(weight, stride, dilation):
    """padding="same" as symmetric padding, where that is exact."""
    if stride != [1, 1]:
        raise ValueError("padding='same' is not supported for strided convolutions")
    pad = []
    for d, k in zip(dilation, weight.shape[2:]):
        total = d * (k - 1)
        if total % 2:
            raise UnsupportedError(
                "padding='same' with dilation %d and kernel size %d needs asymmetric "
                "padding (%d in all), which convtune does not run" % (d, k, total))
        pad.append(int(total) // 2)  # an int, also where tracing makes sizes tensors
    return pad


def _out_size(size, k, stride, pad, dil):
    return (size + 2 * pad - dil * (k - 1) - 1) // stride + 1


def _layout(t):
    """"nchw" for a contiguous 4-D tensor, "nhwc" for a channels_last one (a
    tensor that is both reads as NCHW), None for a strided view."""
    if t.is_contiguous():
        return "nchw"
    if t.is_contiguous(memory_format=torch.channels_last):
        return "nhwc"
    return None


def _made_channels_last(t):
    """A 4-D t whose strides are exactly channels_last's and not a
    contiguous tensor's (e.g. .to(memory_format=torch.channels_last) of
    one with C = 1): _layout reads such a tensor as NCHW, its sizes
    allowing both."""
    n, c, h, w = t.shape
    return t.stride() == (h * w * c, 1, w * c, c) != (c * h * w, h * w, w, 1)


def _x_layout(x, weight):
    """x's layout (_layout), except where x reads as both (C = 1, or H = W
    = 1) and x or the weight was made channels_last: then NHWC, as
    PyTorch's convolutions choose there, so that a channels_last model
    stays channels_last past a one-channel input."""
    layout = _layout(x)
    if (layout == "nchw" and x.is_contiguous(memory_format=torch.channels_last) and
            (_made_channels_last(x) or _layout(weight) == "nhwc" or
             _made_channels_last(weight))):
        return "nhwc"
    return layout


def _weight_in(weight, layout):
    """weight in the memory format of x's layout: itself, or a copy."""
    if _layout(weight) == layout:
        return weight
    return weight.contiguous(memory_format=torch.channels_last if layout == "nhwc"
                             else torch.contiguous_format)


def _check_tensors(x, weight, bias, groups, fake):
    """Raises UnsupportedError (or ValueError for malformed arguments) unless
    the tensors are what the library runs: float32, x and weight dense NCHW
    or channels_last (_layout), bias dense, on x's CUDA device (meta also
    allowed when fake), weight (K, C / groups, R, S) for x's C channels
    with groups dividing K.  Returns x's layout (_x_layout)."""
    tensors = [("x", x), ("weight", weight)] + ([("bias", bias)] if bias is not None else [])
    for name, t in tensors:
        if t.dtype != torch.float32:
            raise UnsupportedError("%s is %s: convtune runs float32 convolutions only "
                                   "(at TF32 or IEEE-fp32 accuracy)" % (name, t.dtype))
    if x.dim() != 4:
        raise ValueError("x must be 4-D (N, C, H, W), not of shape %s" % (tuple(x.shape),))
    if weight.dim() != 4:
        raise ValueError("weight must be 4-D (K, C / groups, R, S), not of shape %s"
                         % (tuple(weight.shape),))
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != weight.shape[0]):
        raise ValueError("bias must have shape (%s,), not %s"
                         % (weight.shape[0], tuple(bias.shape)))
    if weight.shape[0] % groups:
        raise ValueError("groups=%s does not divide weight's %s output channels (K = "
                         "weight.shape[0] must be a multiple of groups)"
                         % (groups, weight.shape[0]))
    if x.shape[1] != weight.shape[1] * groups:
        raise ValueError("x has %s channels but weight expects %s (weight.shape[1] = %s "
                         "channels per group x groups=%s)"
                         % (x.shape[1], weight.shape[1] * groups, weight.shape[1], groups))
    for name, t in tensors:
        if (_layout(t) if t.dim() == 4 else ("nchw" if t.is_contiguous() else None)) is None:
            raise UnsupportedError(
                "%s is neither contiguous nor channels_last (a strided view): convtune runs "
                "dense NCHW or NHWC tensors; call .contiguous() first" % name)
    kinds = ("cuda", "meta") if fake else ("cuda",)
    for name, t in tensors:
        if t.device.type not in kinds:
            raise UnsupportedError("%s is on %s: convtune runs on CUDA tensors only"
                                   % (name, t.device))
        if t.device != x.device:
            raise UnsupportedError("%s is on %s but x is on %s" % (name, t.device, x.device))
    return _x_layout(x, weight)


def _output_shape(x, weight, stride, padding, dilation):
    n, _, h, w = x.shape
    k, _, r, s = weight.shape
    P = _out_size(h, r, stride[0], padding[0], dilation[0])
    Q = _out_size(w, s, stride[1], padding[1], dilation[1])
    if P < 1 or Q < 1:
        raise ValueError("the output would be empty (%s x %s): the padded input is smaller "
                         "than the dilated kernel" % (P, Q))
    return (n, k, P, Q)


def _check_params(stride, padding, dilation):
    if len(stride) != 2 or len(padding) != 2 or len(dilation) != 2:
        raise ValueError("stride, padding and dilation must be pairs")
    if min(stride) < 1 or min(dilation) < 1 or min(padding) < 0:
        raise ValueError("stride and dilation must be >= 1 and padding >= 0, not %s, %s, %s"
                         % (stride, dilation, padding))


def _check_groups(groups):
    """groups as F.conv2d takes it, an integer >= 1 (a Python or NumPy int,
    returned as an int, or a torch.SymInt while tracing, returned as it
    is); whether it divides the channels is _check_tensors's to say."""
    if isinstance(groups, torch.SymInt):
        return groups
    try:
        value = None if isinstance(groups, bool) else operator.index(groups)
    except TypeError:
        value = None
    if value is None or value < 1:
        raise ValueError("groups must be an integer >= 1, not %r" % (groups,))
    return value


_problems = {}  # (shapes, parameters, groups, precision, act, layout, residual) -> Problem


def _problem(x, weight, bias, stride, padding, dilation, groups, precision, act="none",
             layout="nchw", residual=False):
    key = (tuple(x.shape), tuple(weight.shape), bias is not None, tuple(stride),
           tuple(padding), tuple(dilation), groups, precision, act, layout, bool(residual))
    p = _problems.get(key)
    if p is None:
        n, c, h, w = x.shape
        k, _, r, s = weight.shape
        p = _lib.Problem(n, c, h, w, k, r, s, stride[0], stride[1], padding[0], padding[1],
                         dilation[0], dilation[1], 1 if bias is not None else 0,
                         _lib.PRECISIONS[precision], _lib.ACTIVATIONS[act],
                         _lib.LAYOUTS[layout], 1 if residual else 0, groups)
        try:
            library().validate(p)
        except _lib.ConvtuneError as e:
            raise UnsupportedError("convtune cannot run this convolution: %s" % e.message)
        _problems[key] = p
    return p


# -------------------------------------------------------------------------
# The custom op

def _check_residual(residual, shape, x):
    """Raises unless residual is a float32 tensor of the output's shape on
    x's device (any strides: it is copied, or written in place only where
    _donatable)."""
    if not isinstance(residual, torch.Tensor):
        raise ValueError("residual must be a tensor, not %s" % type(residual).__name__)
    if residual.dtype != torch.float32:
        raise UnsupportedError("residual is %s: convtune runs float32 convolutions only"
                               % residual.dtype)
    if tuple(residual.shape) != tuple(shape):
        raise ValueError("residual must have the output's shape %s, not %s (it is added "
                         "element by element, without broadcasting)"
                         % (tuple(shape), tuple(residual.shape)))
    if residual.device != x.device:
        raise UnsupportedError("residual is on %s but x is on %s" % (residual.device, x.device))


def _residual_fits(residual, x, weight, stride, padding, dilation):
    """Whether a Conv2d's call can take `residual` into its kernel
    (_check_residual passes); where not (a broadcast, another dtype...) the
    module adds it after the convolution, as the model it replaced did."""
    try:
        _check_residual(residual, _output_shape(x, weight, stride, padding, dilation), x)
    except ValueError:  # UnsupportedError too
        return False
    return True


def _takes_residual(module, x, residual):
    """Whether the convolution module's call on x (batched or not) can take
    `residual` into its kernel (_residual_fits); where not, Conv2d adds it
    after the convolution and collect() lists the problem without it."""
    if x.dim() == 3:
        x = x.unsqueeze(0)
        residual = residual.unsqueeze(0) if isinstance(residual, torch.Tensor) else residual
    if x.dim() != 4:
        return False
    stride, padding, dilation = _arguments(x, module.weight, module.stride, module.padding,
                                           module.dilation, "auto")
    return _residual_fits(residual, x, module.weight, stride, padding, dilation)


def _shares_storage(a, b):
    return a is not None and a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def _apart(residual, x, weight, bias):
    """residual shares no storage with the inputs (which the kernel reads
    while it writes the output)."""
    return not any(_shares_storage(t, residual) for t in (x, weight, bias))


def _donatable(residual, layout, x, weight, bias):
    """residual can be the output itself, written in place: dense in x's
    layout and _apart from the inputs."""
    return _layout(residual) == layout and _apart(residual, x, weight, bias)


def _call_setup(x, weight, bias, stride, padding, dilation, groups, precision, act,
                residual=None, donate=False):
    """A call's checks, its output y (empty, in x's memory format; with a
    residual, holding it: residual itself where donate allows, see
    _donatable, else a copy), x's layout and the problem (None for an empty
    y: nothing to run)."""
    _check_precision(precision)
    _check_act(act)
    _check_params(stride, padding, dilation)
    _check_groups(groups)
    layout = _check_tensors(x, weight, bias, groups, fake=False)
    shape = _output_shape(x, weight, stride, padding, dilation)
    if residual is not None:
        _check_residual(residual, shape, x)
    if residual is not None and donate and _donatable(residual, layout, x, weight, bias):
        y = residual
    else:
        y = torch.empty(shape, dtype=torch.float32, device=x.device,
                        memory_format=torch.channels_last if layout == "nhwc"
                        else torch.contiguous_format)
        if residual is not None:
            y.copy_(residual)
    if y.numel() == 0:  # a batch of 0: nothing to run
        return y, layout, None
    return y, layout, _problem(x, weight, bias, stride, padding, dilation, groups,
                               _resolve_precision(precision), act, layout, residual is not None)


def _conv2d_run(x, weight, bias, stride, padding, dilation, groups, precision, act="none",
                module=None, residual=None, donate=False):
    """The op's implementation: checks, allocates y and runs ct_forward.
    With module (a Conv2d's own call, outside autograd), the call is kept
    as its _Repeat unless the weight had to be copied into x's layout.
    With a residual, y = act(conv + b + residual) (donate: written into
    residual itself where _donatable)."""
    y, layout, p = _call_setup(x, weight, bias, stride, padding, dilation, groups, precision,
                               act, residual, donate)
    if p is None:
        return y
    w = _weight_in(weight, layout)
    stream = torch.cuda.current_stream(x.device).cuda_stream
    ctx = context(x.device)
    ctx.forward(p, x.data_ptr(), w.data_ptr(), bias.data_ptr() if bias is not None else None,
                y.data_ptr(), stream)
    if module is not None:
        with _packed_lock:
            if w is weight:
                _keep_repeat(module, x, y, ctx, p, weight, bias, residual=residual)
            else:
                _forget_repeat(module)
    return y


@torch.library.custom_op("convtune::conv2d", mutates_args=())
def _conv2d_op(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor],
               stride: List[int], padding: List[int], dilation: List[int],
               precision: str, act: str = "none",
               residual: Optional[torch.Tensor] = None, groups: int = 1) -> torch.Tensor:
    return _conv2d_run(x, weight, bias, stride, padding, dilation, groups, precision, act,
                       residual=residual)


_PLAIN = (torch.Tensor, nn.Parameter)


def _needs_op(x, weight, bias, profiler=True, residual=None):
    """Whether a call must go through the registered op rather than straight
    to its implementation: when torch.compile or torch.jit.trace traces it,
    when autograd must record it, when a tensor is a subclass or
    functorch-wrapped (fake, functional, batched...), when a dispatch or
    function mode is active, and (profiler) while the profiler records, so
    that convtune::conv2d shows in it.
    Otherwise the op's dispatch costs more than the rest of the call (about
    15-20 us a call on a CPU core), so eager inference calls the
    implementation directly, with the same checks and the same result.
    residual: the call's residual, a tensor among the others (anything else
    is the implementation's to refuse)."""
    residual = residual if isinstance(residual, torch.Tensor) else None
    return (_dispatch_wanted(profiler) or _grad_wanted(x, weight, bias, residual)
            or any(t is not None and not _plain(t) for t in (x, weight, bias, residual)))


def _grad_wanted(x, weight, bias, residual=None):
    """Autograd would record the call: grad mode on and a tensor that
    requires grad."""
    return torch.is_grad_enabled() and any(
        t is not None and t.requires_grad for t in (x, weight, bias, residual))


def _dispatch_wanted(profiler=True):
    """_needs_op's conditions that depend on no tensor: tracing, a dispatch
    or function mode, (profiler) the profiler."""
    return (torch.compiler.is_compiling()
            or torch._C._get_tracing_state() is not None
            or torch._C._is_torch_function_mode_enabled()
            or _python_dispatch._get_current_dispatch_mode() is not None
            or (profiler and torch.autograd.profiler._is_profiler_enabled))


def _plain(t):
    """t is a plain tensor or Parameter, not a subclass or functorch-wrapped."""
    return type(t) in _PLAIN and not torch._C._functorch.is_functorch_wrapped_tensor(t)


@_conv2d_op.register_fake
def _conv2d_fake(x, weight, bias, stride, padding, dilation, precision, act="none",
                 residual=None, groups=1):
    _check_precision(precision)
    _check_act(act)
    _check_params(stride, padding, dilation)
    _check_groups(groups)
    layout = _check_tensors(x, weight, bias, groups, fake=True)
    shape = _output_shape(x, weight, stride, padding, dilation)
    if residual is not None:
        _check_residual(residual, shape, x)
    return torch.empty(shape, dtype=torch.float32, device=x.device,
                       memory_format=torch.channels_last
                       if layout == "nhwc" else torch.contiguous_format)


def _setup_context(ctx, inputs, output):
    x, weight, bias, stride, padding, dilation, _, act, residual, groups = inputs
    # With act=relu the gradient passes where the output is positive; with
    # act=relu6 where it is positive and below 6 (as torch's relu6).
    ctx.save_for_backward(x, weight, output if act != "none" else None)
    ctx.act = act
    ctx.bias_sizes = [weight.shape[0]] if bias is not None else None
    ctx.conv = (list(stride), list(padding), list(dilation), groups)
    ctx.residual = residual is not None


def _backward(ctx, grad_y):
    x, weight, y = ctx.saved_tensors
    if y is not None:
        grad_y = grad_y * ((y > 0) & (y < 6) if ctx.act == "relu6" else y > 0)
    stride, padding, dilation, groups = ctx.conv
    need = ctx.needs_input_grad
    mask = [need[0], need[1], bool(need[2]) and ctx.bias_sizes is not None]
    gx, gw, gb = torch.ops.aten.convolution_backward(
        grad_y, x, weight, ctx.bias_sizes, stride, padding, dilation, False, [0, 0], groups,
        mask)
    # The residual is added as it is: its gradient is y's (through the activation).
    gr = grad_y if ctx.residual and need[8] else None
    return (gx if mask[0] else None, gw if mask[1] else None, gb if mask[2] else None,
            None, None, None, None, None, gr, None)


_conv2d_op.register_autograd(_backward, setup_context=_setup_context)


# -------------------------------------------------------------------------
# The functional form and the module

def _arguments(x, weight, stride, padding, dilation, precision):
    """Checks and normalises F.conv2d-style arguments (groups is
    _check_groups's, at each entry point)."""
    _check_precision(precision)
    stride = _pair(stride, "stride")
    dilation = _pair(dilation, "dilation")
    if isinstance(padding, str):
        if padding == "valid":
            padding = [0, 0]
        elif padding == "same":
            padding = _same_padding(weight, stride, dilation)
        else:
            raise ValueError("padding must be 'valid', 'same', an int or a pair, not %r"
                             % padding)
    else:
        padding = _pair(padding, "padding")
    return stride, padding, dilation


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, *,
           precision="auto", act="none", residual=None):
    """F.conv2d computed by libconvtune on the current CUDA stream (see the
    module's docstring for what is supported).  x may be (N, C, H, W) or
    unbatched (C, H, W).  act="relu": torch.relu(F.conv2d(...)), the ReLU
    applied by the kernel as it stores each output (its gradient too);
    act="relu6": F.relu6(F.conv2d(...)) likewise (MobileNetV2's).
    residual: a float32 tensor of the output's shape (any strides) added
    after the bias, before the activation, by the kernel as it stores each output
    (a ResNet block's conv, + identity, ReLU): act(F.conv2d(...) +
    residual), in a new tensor; its gradient is the output's.  groups:
    F.conv2d's (weight of shape (K, C / groups, R, S), groups dividing C
    and K; depthwise: groups = C), with the residual and the activation
    too."""
    groups = _check_groups(groups)
    stride, padding, dilation = _arguments(x, weight, stride, padding, dilation, precision)
    _check_act(act)
    squeeze = x.dim() == 3
    if squeeze:
        x = x.unsqueeze(0)
        if isinstance(residual, torch.Tensor):
            residual = residual.unsqueeze(0)
    if x.is_cuda and not _needs_op(x, weight, bias, residual=residual):
        y = _conv2d_run(x, weight, bias, stride, padding, dilation, groups, precision, act,
                        residual=residual)
    else:
        y = _conv2d_op(x, weight, bias, stride, padding, dilation, precision, act, residual,
                       groups)
    return y.squeeze(0) if squeeze else y


def explain(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, *,
            precision="auto", act="none", residual=False):
    """What conv2d runs for these arguments and why: a dict with path
    ("tuned-cubin", "tuned-compiled", "nearest", "default"), variant,
    reason, database (its state), precision and spec (",groups=G" for
    groups > 1).  residual=True (or the residual tensor): for a call with
    a residual.  Loads the kernel if that has not happened yet (no
    launch)."""
    groups = _check_groups(groups)
    stride, padding, dilation = _arguments(x, weight, stride, padding, dilation, precision)
    if x.dim() == 3:
        x = x.unsqueeze(0)
    _check_params(stride, padding, dilation)
    layout = _check_tensors(x, weight, bias, groups, fake=False)
    prec = _resolve_precision(precision)
    if isinstance(residual, torch.Tensor):  # the tensor conv2d would take: a call with one
        residual = True
    p = _problem(x, weight, bias, stride, padding, dilation, groups, prec, _check_act(act),
                 layout, bool(residual))
    ctx = context(x.device)
    ctx.prepare(p)
    path, variant = ctx.forward_path(p)
    status, message = ctx.database_status()
    return {"path": path, "variant": variant, "reason": ctx.forward_reason(p),
            "database": "%s: %s" % (status, message), "precision": prec,
            "spec": library().format(p)}


# Conv2d(pack_weights=True): each module's packed weights, by (problem,
# device, the weight's address and version counter), each with a weak
# reference to the weight tensor packed (a hit must be that very tensor: a
# new one may take a freed one's address and version); kept beside the
# module (weakly), not in it, so that copying a module copies no device
# handle.  A module keeps its last _PACKED_MAX packings; _packed_lock
# guards the lot (modules may run on several threads).
_packed = weakref.WeakKeyDictionary()
_packed_lock = threading.Lock()
_PACKED_MAX = 4


def _settings(module):
    """What a Conv2d's call depends on besides its tensors (its class too:
    parametrizing a module changes it)."""
    return (type(module), module.training, getattr(module, "pack_weights", False),
            module.stride, module.padding, module.dilation, module.groups, module.precision,
            module.act, getattr(module, "residual_inplace", False), module.padding_mode)


class _Repeat:
    """A Conv2d's last call, which passed every check of _conv2d_run or
    _forward_packed, kept to be repeated: a call with x of the same type,
    shape, strides and device, the same weight and bias (each the same
    object at the same address and version), the same settings, the same
    context, PyTorch's TF32 setting for precision "auto", and nothing that
    _needs_op or graph capture would see, checks none of that again: it
    allocates y and launches.  At batch 1 a convolution's GPU time is
    shorter than the checked call's host time (a ResNet-50 runs 53 in a
    row), so the host time is the network's.  Guarded by _packed_lock:
    `live` is cleared when the module's packings change (_forget_repeat).
    packed: the packed weights the call ran with, else None (ct_forward,
    with the weight's address, in x's layout: no copy).  residual: the
    call's residual, else None; a repeat needs one of the same shape,
    strides and device, and writes into it where the call did (res_into:
    the module's residual_inplace, the residual dense in x's layout) and
    it shares no storage with x, weight or bias, else into a copy."""

    __slots__ = ("settings", "x_shape", "x_stride", "index", "device", "weight",
                 "w_state", "bias", "b_state", "tf32", "ctx", "y_shape", "y_format",
                 "launch", "live", "res", "res_into")
    _none = staticmethod(lambda: None)  # the weak reference of "no bias"

    def __init__(self, module, x, y, ctx, p, packed=None, residual=None):
        w, b = module._parameters["weight"], module._parameters["bias"]
        self.settings = _settings(module)
        self.x_shape, self.x_stride = x.shape, x.stride()
        self.index, self.device = x.get_device(), x.device
        # Weakly: a replaced tensor is not kept alive by this.
        self.weight, self.w_state = weakref.ref(w), (w.data_ptr(), w._version)
        self.bias = weakref.ref(b) if b is not None else self._none
        self.b_state = (b.data_ptr(), b._version) if b is not None else None
        self.tf32 = _cudnn_conv_tf32() if module.precision == "auto" else None
        self.ctx = ctx
        self.y_shape = y.shape
        self.y_format = (torch.channels_last if _layout(y) == "nhwc"
                         else torch.contiguous_format)
        self.launch = ctx.launcher(p, packed)
        self.live = True
        self.res = None if residual is None else (residual.shape, residual.stride())
        self.res_into = residual is not None and y is residual

    def __call__(self, module, x, residual=None):
        """The call's output, or None where anything differs (the caller
        then takes the checked path)."""
        params = module._parameters
        w, b = params.get("weight"), params.get("bias")
        if (residual is None) != (self.res is None):
            return None
        if residual is not None and (
                not _plain(residual) or residual.dtype != torch.float32
                or (residual.shape, residual.stride()) != self.res
                or residual.get_device() != self.index):
            return None
        if (w is None or not _plain(x) or x.shape != self.x_shape
                or x.dtype != torch.float32 or x.stride() != self.x_stride
                or x.get_device() != self.index
                or w is not self.weight() or (w.data_ptr(), w._version) != self.w_state
                or b is not self.bias()
                or (b is not None and (b.data_ptr(), b._version) != self.b_state)
                or _settings(module) != self.settings
                or (self.tf32 is not None and _cudnn_conv_tf32() != self.tf32)
                or _state["contexts"].get(self.index) is not self.ctx
                or _dispatch_wanted() or _grad_wanted(x, w, b, residual)
                or torch._C._cuda_isCurrentStreamCapturing()):
            return None
        if residual is not None and self.res_into and _apart(residual, x, w, b):
            y = residual
        else:
            y = torch.empty(self.y_shape, dtype=torch.float32, device=self.device,
                            memory_format=self.y_format)
            if residual is not None:
                y.copy_(residual)
        stream = torch._C._cuda_getCurrentRawStream(self.index)
        with _packed_lock:
            if not self.live:
                return None
            self.launch(x.data_ptr(), self.w_state[0], self.b_state and self.b_state[0],
                        y.data_ptr(), stream)
        return y


_repeats = weakref.WeakKeyDictionary()  # module -> its _Repeat


def _forget_repeat(module):
    """Drops module's _Repeat (with _packed_lock held)."""
    again = _repeats.pop(module, None)
    if again is not None:
        again.live = False


def _keep_repeat(module, x, y, ctx, p, weight, bias, packed=None, residual=None):
    """After module's checked call (with _packed_lock held): that call, with
    the weight and bias it used, becomes its _Repeat where they are its own
    parameters (not a parametrization's computed tensors) and not inference
    tensors (which have no version counter to watch)."""
    _forget_repeat(module)
    params = module._parameters
    if (params.get("weight") is weight and params.get("bias") is bias
            and not weight.is_inference() and not (bias is not None and bias.is_inference())):
        _repeats[module] = _Repeat(module, x, y, ctx, p, packed, residual)


class Conv2d(nn.Conv2d):
    """nn.Conv2d whose forward runs libconvtune (conv2d above).  Same
    constructor (plus precision, act and pack_weights), parameters,
    initialisation and state_dict; groups as nn.Conv2d takes them (grouped
    and depthwise convolutions); padding_mode other than "zeros" and dtypes
    other than float32 raise UnsupportedError here, at construction.
    act="relu": the module computes relu(conv(x)), the ReLU fused into the
    kernel (patch(fuse_relu=True) sets it where a ReLU followed); act="relu6"
    likewise relu6(conv(x)).

    pack_weights=True, for inference: in eval mode, outside autograd and
    graph capture, the weights are packed once (the library's
    ct_weights_pack: the per-call weight pass of the general families is
    done then, not in every call; the result is the same bit for bit) and
    packed again when the weight is replaced, moved or changed in place
    through torch (its version counter), and after tune() or set_database()
    (which retire the contexts: the kernel may change).  A change made
    through `weight.data` bypasses that counter: call repack() after one.
    While the profiler records, the packed call runs as it does without it,
    named convtune::conv2d in the trace.

    Outside autograd, tracing and graph capture, a call like the module's
    last one (x of the same shape, strides and device; the same weight and
    bias tensors, unchanged; the same settings, context and TF32 switch)
    repeats it without the Python checks: it allocates y and launches, the
    library checking the pointers as always.

    forward(input, residual=None): with a residual, act(conv(input) +
    residual), the residual added by the kernel (conv2d's residual) where
    it is a float32 tensor of the output's shape on input's device, else
    after the convolution by torch (a broadcast, another dtype), as the
    model patch() rewrote did.  residual_inplace=True (patch() sets it
    where the model reads the residual nowhere after): the output is
    written into the residual's own memory when it is dense in input's
    layout and shares none with the inputs, and that tensor is returned;
    eager inference only (outside autograd, tracing and graph capture).

    An input that is a strided view (neither contiguous nor channels_last,
    e.g. a channel chunk) is copied to a contiguous tensor first, as
    nn.Conv2d accepts any strides; conv2d() itself refuses one."""

    residual_inplace = False

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None, *, precision="auto", act="none", pack_weights=False):
        if padding_mode != "zeros":
            raise UnsupportedError("padding_mode=%r: convtune pads with zeros only"
                                   % padding_mode)
        if dtype is not None and dtype != torch.float32:
            raise UnsupportedError("dtype=%s: convtune runs float32 convolutions only" % dtype)
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype)
        if self.weight.dtype != torch.float32:  # torch's default dtype, where dtype is None
            raise UnsupportedError("dtype=%s (torch's default dtype): convtune runs float32 "
                                   "convolutions only" % self.weight.dtype)
        _check_int_arguments(self)  # TypeError for a float, not truncated
        self.precision = _check_precision(precision)
        self.act = _check_act(act)
        self.pack_weights = bool(pack_weights)

    @classmethod
    def from_module(cls, module, precision=None, act=None, pack_weights=None):
        """A Conv2d with the configuration and a copy of the parameters of
        the nn.Conv2d `module` (UnsupportedError where it cannot be one; a
        channels_last weight stays channels_last), then `act`.  precision,
        act and pack_weights left None are module's own where it is a
        Conv2d, else "auto", "none" and False."""
        own = isinstance(module, Conv2d)
        if precision is None:
            precision = module.precision if own else "auto"
        if act is None:
            act = module.act if own else "none"
        if pack_weights is None:
            pack_weights = module.pack_weights if own else False
        new = cls(module.in_channels, module.out_channels, module.kernel_size,
                  module.stride, module.padding, module.dilation, module.groups,
                  module.bias is not None, module.padding_mode, device=module.weight.device,
                  dtype=module.weight.dtype, precision=precision, act=act,
                  pack_weights=pack_weights)
        new.load_state_dict(module.state_dict())
        for name, param in new.named_parameters():  # frozen parameters stay frozen
            param.requires_grad_(module.get_parameter(name).requires_grad)
        if _layout(module.weight) == "nhwc":  # a channels_last model keeps its format
            new.weight.data = new.weight.data.contiguous(memory_format=torch.channels_last)
        new.train(module.training)
        return new

    def forward(self, input, residual=None):
        if not torch.compiler.is_compiling():
            again = _repeats.get(self)
            if again is not None:
                y = again(self, input, residual)
                if y is not None:
                    return y
        if self.padding_mode != "zeros":  # set after construction, which checks it
            raise UnsupportedError("padding_mode=%r: convtune pads with zeros only"
                                   % self.padding_mode)
        if (not input.is_contiguous() and  # a strided view, as nn.Conv2d takes
                (input.dim() != 4 or _layout(input) is None)):
            input = input.contiguous()
        if residual is not None and not _takes_residual(self, input, residual):
            y = conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation,
                       self.groups, precision=self.precision) + residual
            return _ACT_FUNCTIONS[self.act](y)
        # _needs_op first: under torch.compile it is true, and tracing
        # is_current_stream_capturing would break the graph.
        if (input.is_cuda and input.dim() == 4
                and not _needs_op(input, self.weight, self.bias, profiler=False,
                                  residual=residual)
                and not torch.cuda.is_current_stream_capturing()):
            profiled = torch.autograd.profiler._is_profiler_enabled
            donate = residual is not None and self.residual_inplace
            # An inference tensor has no version counter to watch: not packed.
            if (getattr(self, "pack_weights", False) and not self.training
                    and not self.weight.is_inference()):
                if not profiled:
                    return self._forward_packed(input, residual, donate)
                # The op cannot take packed weights: the profiler sees the
                # packed call itself (not the op's, which packs for each
                # call) under the op's name.
                with torch.profiler.record_function("convtune::conv2d"):
                    return self._forward_packed(input, residual, donate)
            if not profiled:
                stride, padding, dilation = _arguments(input, self.weight, self.stride,
                                                       self.padding, self.dilation,
                                                       self.precision)
                return _conv2d_run(input, self.weight, self.bias, stride, padding, dilation,
                                   self.groups, self.precision, self.act, module=self,
                                   residual=residual, donate=donate)
        return conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation,
                      self.groups, precision=self.precision, act=self.act, residual=residual)

    def repack(self):
        """Drops this module's packed weights (pack_weights=True packs them
        again at the next call): after a change through weight.data."""
        with _packed_lock:
            _forget_repeat(self)
            for _, packed in _packed.pop(self, {}).values():
                packed.free()

    def _forward_packed(self, x, residual=None, donate=False):
        """forward() through weights packed once: _conv2d_run's checks, then
        ct_forward_packed (with a residual as _conv2d_run takes it)."""
        stride, padding, dilation = _arguments(x, self.weight, self.stride, self.padding,
                                               self.dilation, self.precision)
        y, layout, p = _call_setup(x, self.weight, self.bias, stride, padding, dilation,
                                   self.groups, self.precision, self.act, residual, donate)
        if p is None:
            return y
        ctx = context(x.device)
        stream = torch.cuda.current_stream(x.device)
        # p is _problem's one object for these sizes and settings.
        key = (id(p), x.device, self.weight.data_ptr(), self.weight._version)
        with _packed_lock:
            _forget_repeat(self)  # before any packing below is freed
            mine = _packed.setdefault(self, {})
            ref, packed = mine.get(key, (None, None))
            if packed is not None and (ref() is not self.weight or packed.context is not ctx):
                # Another tensor at the same address and version, or packed on
                # a context retired since (a tune or set_database: the kernel
                # may differ): packed again.
                mine.pop(key)[1].free()
                packed = None
            if packed is None:
                weight = _weight_in(self.weight, layout)  # packed from x's memory format
                packed = ctx.pack_weights(p, weight.data_ptr(), stream.cuda_stream)
                # Done before any later call, whichever stream it is on; and
                # before `weight`, a copy when the layouts differ, may be freed.
                stream.synchronize()
                while len(mine) >= _PACKED_MAX:
                    mine.pop(next(iter(mine)))[1].free()
                mine[key] = (weakref.ref(self.weight), packed)
            ctx.forward_packed(p, x.data_ptr(), packed,
                               self.bias.data_ptr() if self.bias is not None else None,
                               y.data_ptr(), stream.cuda_stream)
            _keep_repeat(self, x, y, ctx, p, self.weight, self.bias, packed, residual)
        return y

    def extra_repr(self):
        return (super().extra_repr() + ", precision=%r" % self.precision +
                (", act=%r" % self.act if self.act != "none" else "") +
                (", residual_inplace=True" if self.residual_inplace else "") +
                (", pack_weights=True" if self.pack_weights else ""))


# -------------------------------------------------------------------------
# A model's convolutions: collect and tune

_NAME_MAX = 63  # bytes of a problem's name in a list (tuner/problems.c)


def _list_name(name):
    """name cut to at most _NAME_MAX bytes of UTF-8, on a character's
    boundary: the list reader counts a name's bytes (a character outside
    ASCII is at most as many bytes there as in UTF-8)."""
    return name.encode("utf-8")[:_NAME_MAX].decode("utf-8", "ignore")


def _conv_config_reason(module):
    """Why convtune cannot run the nn.Conv2d `module`'s configuration
    (padding mode, weight dtype, asymmetric "same" padding), or None; any
    groups nn.Conv2d accepts run."""
    if module.padding_mode != "zeros":
        return "padding_mode=%r: convtune pads with zeros only" % module.padding_mode
    try:
        _check_int_arguments(module)
    except (TypeError, ValueError) as e:
        return str(e)
    if module.weight.dtype != torch.float32:
        return "weight is %s: convtune runs float32 convolutions only" % module.weight.dtype
    if isinstance(module.padding, str) and module.padding == "same":
        try:
            _same_padding(module.weight, _pair(module.stride, "stride"),
                          _pair(module.dilation, "dilation"))
        except ValueError as e:  # UnsupportedError too
            return str(e)
    return None


def _collected_problem(module, x, precision, act="none", residual=None):
    """(spec, gflop, None) for the problem the nn.Conv2d `module` runs on
    input x (its activation fused when act is "relu" or "relu6"; residual:
    the residual it is called with, residual=1 where the kernel takes it,
    _residual_fits, and where it does not, act none: the module adds it and
    applies the activation in torch), or (None, 0, reason) where convtune cannot run it.
    The module's own reasons (_unsupported_module, its configuration among
    them) the caller checked."""
    if x.dtype != torch.float32:
        return None, 0, "input is %s: convtune runs float32 convolutions only" % x.dtype
    weight, bias = module.weight, module.bias
    fused = residual is not None and _takes_residual(module, x, residual)
    if x.dim() == 3:
        x = x.unsqueeze(0)
    if x.dim() != 4:
        return None, 0, "input of shape %s: not (N, C, H, W) or (C, H, W)" % (tuple(x.shape),)
    layout = _x_layout(x, weight) or "nchw"  # Conv2d makes a strided view contiguous
    try:
        stride, padding, dilation = _arguments(x, weight, module.stride, module.padding,
                                               module.dilation, precision)
        _check_params(stride, padding, dilation)
        n, k, P, Q = _output_shape(x, weight, stride, padding, dilation)
        if residual is not None and not fused:
            act = "none"
        p = _problem(x, weight, bias, stride, padding, dilation, module.groups, precision, act,
                     layout, fused)
    except ValueError as e:  # UnsupportedError too
        return None, 0, str(e)
    c, r, s_ = weight.shape[1:]  # c: the channels per group, each output's reduction
    return library().format(p), 2e-9 * n * k * P * Q * c * r * s_, None


def collect(model, *example_inputs, precision="auto", fold_bn=True, fuse_relu=True,
            fuse_residual=True, grouped=False, channels_last=False, **example_kwargs):
    """The conv2d problems one forward pass of `model` runs.

    Runs model(*example_inputs, **example_kwargs) once under torch.no_grad()
    in eval mode (so BatchNorm statistics stay as they are; every module's
    mode is restored after), with a forward hook on every nn.Conv2d
    (convtune.torch.Conv2d included), where the model and inputs are (shapes
    are all it records; a model holding convtune Conv2d modules runs on
    CUDA only).
    precision: "tf32", "fp32" or "auto" (tf32 where PyTorch lets cuDNN's
    convolutions use TF32, _cudnn_conv_tf32, read now).
    fold_bn, fuse_relu, fuse_residual, grouped, channels_last: the
    problems of the model as patch() runs it with the same flags (grouped:
    its grouped convolutions too, else they are skipped; channels_last:
    layout=nhwc), each BatchNorm it would fold folded into its
    convolution (a folded convolution has a bias: bias=1 in its spec),
    each addition it would fuse fused (residual=1) and each ReLU or ReLU6
    it would fuse fused (act=relu or act=relu6 in its spec); a copy is
    transformed, the model is left as it is.  ValueError when torch.fx
    cannot trace the model (then pass fold_bn=False, fuse_relu=False,
    fuse_residual=False, to patch() too).

    Returns a dict:
      "precision": the precision of the specs;
      "problems":  one entry per distinct problem, in order of first call:
                   "spec" (canonical), "name" (the first module that ran it,
                   at most 63 characters), "calls" (in this pass), "weight"
                   (calls x GFLOP, an estimate of its share of the time for
                   `tune --weighted`) and "modules" (every module name);
      "skipped":   the convolutions convtune cannot run or patch() leaves
                   alone, one entry per module: "name", "calls" and
                   "reason" (a dtype other than float32, padding_mode,
                   asymmetric "same" padding, sizes past the library's
                   limits, groups > 1 without grouped=True, forward hooks,
                   a subclass of nn.Conv2d, parametrized weights).  A call
                   on a batch of 0 runs no kernel and is not counted.
                   With grouped=True grouped and depthwise convolutions
                   are problems like any other, with ",groups=G" in their
                   spec.
    The problems part is what `convtune tune --problems` reads
    (write_problems writes it)."""
    prec = _resolve_precision(_check_precision(precision))
    relu = {}
    if (fold_bn or fuse_relu or fuse_residual) and not isinstance(model, nn.Conv2d):
        # (a lone convolution: nothing to fold or fuse)  Folded in eval
        # mode, as patch() folds a model in eval mode.
        model, _, relu, _ = _fuse(copy.deepcopy(model).eval(), fold_bn, fuse_relu,
                                  fuse_residual, grouped)
    if channels_last:
        model = _to_channels_last(copy.deepcopy(model))
    names = {m: (n or "(model)") for n, m in model.named_modules()}
    found, skipped = {}, {}

    left = {}  # each convolution's reason for patch() to leave it (in eval mode), or None

    def hook(module, args, kwargs, output):
        name = names.get(module, type(module).__name__)
        x = args[0] if args else kwargs.get("input")
        reason = left.get(module)
        if isinstance(x, torch.Tensor) and x.dim() == 4 and x.shape[0] == 0:
            return  # a batch of 0 runs no kernel
        if reason is not None:
            spec, gflop = None, 0
        elif isinstance(x, torch.Tensor):
            residual = args[1] if len(args) > 1 else kwargs.get("residual")
            spec, gflop, reason = _collected_problem(module, x, prec,
                                                     relu.get(name, ("none",))[0], residual)
        else:
            spec, gflop, reason = None, 0, "its input is not a tensor"
        if spec is None:
            e = skipped.setdefault(name, {"name": name, "calls": 0, "reason": reason})
            e["calls"] += 1
            return
        e = found.get(spec)
        if e is None:
            e = found[spec] = {"spec": spec, "name": _list_name(name), "calls": 0,
                               "weight": 0.0, "modules": []}
        e["calls"] += 1
        e["weight"] += gflop
        if name not in e["modules"]:
            e["modules"].append(name)

    convs = [m for m in model.modules() if isinstance(m, nn.Conv2d)]
    modes = [(m, m.training) for m in model.modules()]
    handles = []
    try:
        model.eval()
        left.update((m, _unsupported_module(m, grouped)) for m in convs)  # before our hooks
        handles += [m.register_forward_hook(hook, with_kwargs=True) for m in convs]
        with torch.no_grad():
            model(*example_inputs, **example_kwargs)
    finally:
        for h in handles:
            h.remove()
        for m, training in modes:
            m.training = training
    return {"precision": prec, "problems": list(found.values()),
            "skipped": list(skipped.values())}


def write_problems(collected, path):
    """Writes collect()'s result to `path` as the JSON `convtune tune
    --problems` reads (the file holds the skipped convolutions too, which
    the tuner ignores)."""
    with open(path, "w") as f:
        json.dump(collected, f, indent=1)
        f.write("\n")


def _find_cli(cli):
    """The convtune command: `cli`, else $CONVTUNE_CLI, else `convtune` on
    the PATH, else build/tuner/convtune beside the loaded library's
    build/runtime/."""
    for given, what in ((cli, "cli"), (os.environ.get("CONVTUNE_CLI"), "$CONVTUNE_CLI")):
        if given:
            found = shutil.which(given)
            if found is None:
                raise FileNotFoundError("%s=%s: no such executable" % (what, given))
            return found
    found = shutil.which("convtune")
    if found:
        return found
    lib_dir = os.path.dirname(os.path.abspath(library().path))
    beside = os.path.join(os.path.dirname(lib_dir), "tuner", "convtune")
    if os.path.basename(lib_dir) == "runtime" and os.access(beside, os.X_OK):
        return beside
    raise FileNotFoundError(
        "the convtune command was not found: pass cli=PATH, set $CONVTUNE_CLI, or put "
        "convtune on the PATH (a build has it at build/tuner/convtune)")


def tune(model, *example_inputs, budget=None, precision="auto", db=None, device=None,
         weighted=False, fresh=False, fold_bn=True, fuse_relu=True, fuse_residual=True,
         grouped=False, channels_last=False, cli=None, problems_file=None, quiet=False, args=(),
         **example_kwargs):
    """Tunes the conv2d problems of one forward pass of `model` on a GPU.

    collect(model, *example_inputs, precision=..., fold_bn=..., fuse_relu=...,
    fuse_residual=..., grouped=..., channels_last=..., **example_kwargs) (the flags
    patch() will be given: a folded convolution's problem has a bias, a
    fused one act=relu or residual=1, a channels_last model's layout=nhwc),
    then `convtune tune --problems FILE
    --json` with:
      budget    seconds per problem (--budget; None: the tuner's full
                search);
      db        the tuning database (--db; None: the one set_database()
                chose, else the tuner's default, $CONVTUNE_DB or the
                per-user one, which is also the library's);
      device    the GPU's index (--device; None: the first CUDA input's
                device, positional then keyword, else the tuner's
                default, 0);
      weighted  share the list's budget by each problem's weight (calls x
                GFLOP) instead of equally (--weighted);
      fresh     tune problems tuned before again (--fresh);
      cli       the convtune command (else $CONVTUNE_CLI, the PATH, or the
                build beside the loaded library);
      problems_file  where the list is written (else a temporary file,
                removed after);
      quiet     no progress (the tuner's progress goes to stderr);
      args      more `convtune tune` options, e.g. ("--families", "gm").
    Problems tuned before on the device are skipped, so a rerun resumes.
    The library's open contexts are retired afterwards, so the next calls
    look the new winners up.  A db other than the one those calls read
    (set_database()'s, else the default) warns: they would not see it.

    Returns {"collected": collect()'s result, "result": the tuner's JSON
    ({"problems": [...], ...}: per problem its status, winner and time)}.
    Raises FileNotFoundError when no convtune command is found, and
    TuneError (the exit status, the tuner's JSON where it printed one) when
    the tuner fails or a problem could not be tuned."""
    if weighted and budget is None:
        raise ValueError("weighted=True shares the list's budget by weight: pass budget=")
    if db is None:
        db = _state["db"]
    if db == "":
        raise ValueError("set_database('') chose no tuning database: pass db=PATH to tune into")
    if device is None:
        device = next((t.device.index for t in example_inputs + tuple(example_kwargs.values())
                       if isinstance(t, torch.Tensor) and t.is_cuda), None)
    collected = collect(model, *example_inputs, precision=precision, fold_bn=fold_bn,
                        fuse_relu=fuse_relu, fuse_residual=fuse_residual, grouped=grouped,
                        channels_last=channels_last, **example_kwargs)
    if not collected["problems"]:
        return {"collected": collected, "result": {"problems": []}}
    command = [_find_cli(cli), "tune", "--json", "--precision", collected["precision"]]
    if budget is not None:
        command += ["--budget", "%g" % budget]
    if db is not None:
        command += ["--db", db]
    if device is not None:
        command += ["--device", str(int(device))]
    if weighted:
        command.append("--weighted")
    if fresh:
        command.append("--fresh")
    if quiet:
        command.append("--quiet")
    command += [str(a) for a in args]
    temporary = problems_file is None
    if temporary:
        fd, problems_file = tempfile.mkstemp(prefix="convtune-problems-", suffix=".json")
        os.close(fd)
    try:
        write_problems(collected, problems_file)
        run = subprocess.run(command + ["--problems", problems_file], stdout=subprocess.PIPE,
                             stderr=None if not quiet else subprocess.PIPE, text=True)
    finally:
        if temporary:
            os.unlink(problems_file)
    try:
        result = json.loads(run.stdout) if run.stdout.strip() else None
    except json.JSONDecodeError:
        result = None
    with _lock:
        _retire_contexts()
    if run.returncode != 0 or result is None:
        failed = ["%s: %s" % (r.get("name") or r.get("problem"), r.get("error") or r.get("status"))
                  for r in (result or {}).get("problems", [])
                  if r.get("status") not in ("tuned", "skipped")]
        if not failed and quiet:
            failed = (run.stderr or "").strip().splitlines()[-3:]
        raise TuneError("%s exited with status %d%s" % (
            " ".join(command[:2]), run.returncode,
            (": " + " / ".join(failed)) if failed else " (its messages are above)"),
            run.returncode, result, collected)
    _warn_unread(db)
    return {"collected": collected, "result": result}


def _warn_unread(db):
    """Warns when the database tune() wrote (db; None: the default, which
    the library reads too) is not the one this process's convolutions look
    their kernels up in: they would run untuned kernels."""
    if db is None or not library().has("ct_default_database"):
        return
    reads = _state["db"] if _state["db"] is not None else library().default_database()
    if not reads or os.path.realpath(reads) != os.path.realpath(db):
        warnings.warn("convtune.torch.tune: tuned into %s, but this process's convolutions "
                      "look their kernels up in %s: call set_database(%r) to run what was "
                      "tuned" % (db, reads or "no database", db), stacklevel=3)


# -------------------------------------------------------------------------
# Patching a model for inference

def _grouped_reason(module, grouped):
    """Why patch(), collect() and tune() leave the grouped nn.Conv2d
    `module` to PyTorch (grouped=False), or None."""
    if grouped or module.groups == 1 or isinstance(module, Conv2d):
        return None
    return ("groups=%d: left to PyTorch (convtune's grouped kernels, direct, dw, dwc, tc "
            "and tc3, are not yet measured against PyTorch's); pass grouped=True to "
            "replace it" % module.groups)


def _unsupported_module(module, grouped=True):
    """Why Conv2d cannot replace the nn.Conv2d `module`, or None
    (grouped: see _grouped_reason)."""
    if parametrize.is_parametrized(module):
        return "its parameters are parametrized (e.g. weight_norm)"
    if module._forward_hooks or module._forward_pre_hooks:
        return "it has forward hooks, which a replacement would drop"
    if type(module) not in (nn.Conv2d, _ResidualConv2d) and not isinstance(module, Conv2d):
        return ("%s subclasses nn.Conv2d: its forward may not be a plain convolution"
                % type(module).__name__)
    if module.training:
        return "training mode: patch serves inference (call model.eval() first)"
    return _grouped_reason(module, grouped) or _conv_config_reason(module)


def _inputs_channels_last(module, args, kwargs):
    """A forward pre-hook: the call's 4-D tensor arguments in channels_last
    (the same values; a copy only where they are not already)."""
    def cl(t):
        if isinstance(t, torch.Tensor) and t.dim() == 4:
            return t.contiguous(memory_format=torch.channels_last)
        return t
    return tuple(cl(a) for a in args), {k: cl(v) for k, v in kwargs.items()}


def _to_channels_last(model):
    """model with its parameters in channels_last and its 4-D inputs made
    channels_last as it is called, so that its convolutions run NHWC
    (layout=nhwc) for NCHW callers too."""
    model = model.to(memory_format=torch.channels_last)
    model.register_forward_pre_hook(_inputs_channels_last, with_kwargs=True)
    return model


_RELU_FUNCTIONS = {torch.relu: "relu", torch.relu_: "relu", F.relu: "relu", F.relu_: "relu",
                   F.relu6: "relu6"}
_CLAMP_FUNCTIONS = {F.hardtanh: ("min_val", "max_val"), F.hardtanh_: ("min_val", "max_val"),
                    torch.clamp: ("min", "max"), torch.clamp_: ("min", "max"),
                    torch.clip: ("min", "max"), torch.clip_: ("min", "max"),
                    "clamp": ("min", "max"), "clamp_": ("min", "max"),
                    "clip": ("min", "max"), "clip_": ("min", "max")}


def _clamp_act(node):
    """"relu6" for a clamp node (F.hardtanh, torch.clamp / clip, their
    in-place and Tensor forms) to [0, 6], "relu" for a clamp to [0, inf)
    (torch.clamp(x, min=0); not for F.hardtanh, whose max defaults to 1),
    None for any other bounds or arguments."""
    names = _CLAMP_FUNCTIONS[node.target]
    bounds = dict(zip(names, node.args[1:]))
    if len(node.args) > 3 or set(node.kwargs) - set(names) - {"inplace"} or \
            set(bounds) & set(node.kwargs):
        return None
    bounds.update((k, v) for k, v in node.kwargs.items() if k != "inplace")
    if names[0] == "min_val":
        bounds = {"min": bounds.get("min_val", -1.0), "max": bounds.get("max_val", 1.0)}
    lo, hi = bounds.get("min"), bounds.get("max")
    number = (int, float)
    if not (isinstance(lo, number) and not isinstance(lo, bool) and lo == 0):
        return None
    if hi is None:
        return "relu"
    return "relu6" if isinstance(hi, number) and not isinstance(hi, bool) and hi == 6 else None


def _activation_source(node, modules):
    """(the node that `node` applies its activation to, "relu" or
    "relu6") where `node` is a plain ReLU (nn.ReLU without hooks,
    torch.relu / F.relu and their in-place forms, Tensor.relu / relu_, a
    clamp from 0 with no upper bound) or ReLU6 (nn.ReLU6 or nn.Hardtanh(0,
    6) without hooks, F.relu6, F.hardtanh(x, 0, 6), a clamp to [0, 6]);
    None for any other node."""
    act = None
    if node.op == "call_module":
        m = modules.get(node.target)
        if (m is None or m._forward_hooks or m._forward_pre_hooks or len(node.args) != 1 or
                node.kwargs):
            return None
        if type(m) is nn.ReLU:
            act = "relu"
        elif type(m) in (nn.ReLU6, nn.Hardtanh) and m.min_val == 0 and m.max_val == 6:
            act = "relu6"
    elif node.op == "call_function" and node.target in _RELU_FUNCTIONS:
        if len(node.args) == 1 and not set(node.kwargs) - {"inplace"}:
            act = _RELU_FUNCTIONS[node.target]
    elif node.op == "call_method" and node.target in ("relu", "relu_"):
        if len(node.args) == 1 and not node.kwargs:
            act = "relu"
    if node.op in ("call_function", "call_method") and node.target in _CLAMP_FUNCTIONS:
        act = _clamp_act(node) if node.args else None
    return (node.args[0], act) if act is not None else None


_ADD_FUNCTIONS = (operator.add, operator.iadd, torch.add)


class _ResidualConv2d(nn.Conv2d):
    """An nn.Conv2d that _fuse gave a residual: forward(input, residual)
    is the convolution plus the residual, in torch (what collect() runs;
    patch() replaces it by a Conv2d, whose kernel adds it)."""

    def forward(self, input, residual=None):
        y = super().forward(input)
        return y if residual is None else y + residual


def _add_operands(node):
    """The two operands of a plain addition node (a + b, a += b, torch.add
    and Tensor.add / add_ without alpha or out), or None."""
    add = ((node.op == "call_function" and node.target in _ADD_FUNCTIONS) or
           (node.op == "call_method" and node.target in ("add", "add_")))
    return tuple(node.args) if add and len(node.args) == 2 and not node.kwargs else None


def _fuse(model, fold_bn, fuse_relu, fuse_residual=False, grouped=True):
    """Traces `model` with torch.fx (every nn.Conv2d kept a module) and
    rewrites the graph around each plain nn.Conv2d that convtune can run
    (a grouped one only with grouped) and that is called at one place with
    its parameters read nowhere else:
      fold_bn: an eval-mode BatchNorm2d without hooks whose only input is
               that convolution's output, used by it alone, is folded into
               the convolution;
      fuse_residual: then an addition (_add_operands) of the
               convolution's output (or its folded BatchNorm's), used by it
               alone, and another node's value (the residual: a ResNet
               block's identity) becomes the convolution's call with that
               residual (Conv2d.forward's residual), placed where the
               addition was; it may write its output into the residual
               (Conv2d.residual_inplace) where that is a convolution's
               output (a tensor of the graph's own, not a view) that only
               convolutions other than this one read, all before it;
      fuse_relu: then a ReLU or ReLU6 (_activation_source) whose only
               input is the convolution's output (or its folded
               BatchNorm's, or the sum with its residual), used by it
               alone, is taken out of the graph: the convolution is to
               apply it (act=relu or act=relu6).
    Returns (the GraphModule, {conv name: bn name}, {conv name: (act, the
    activation module's name, or act for a function or method)},
    {conv name: {"residual": the residual node's name, "inplace": bool}}).
    Raises ValueError when the model cannot be traced, or has hooks that
    the traced graph would drop (on the model itself or on a module that
    tracing inlines)."""
    import torch.fx as fx
    from torch.nn.utils.fusion import fuse_conv_bn_eval

    class Tracer(fx.Tracer):
        """Keeps every convolution a module, subclasses and Conv2d too."""

        def is_leaf_module(self, m, qualname):
            return isinstance(m, nn.Conv2d) or super().is_leaf_module(m, qualname)

    hooked = [name or "the model itself" for name, m in model.named_modules()
              if (m._forward_hooks or m._forward_pre_hooks) and
              (m is model or not Tracer().is_leaf_module(m, name))]
    if hooked:
        raise ValueError("folding BatchNorms and fusing ReLUs and additions rewrites the "
                         "model's traced graph, which would drop the forward hooks of %s; "
                         "remove them, or pass fold_bn=False, fuse_relu=False, "
                         "fuse_residual=False to leave the model's graph as it is"
                         % ", ".join(hooked))
    try:
        tracer = Tracer()
        graph = tracer.trace(model)
        gm = fx.GraphModule(tracer.root, graph, type(model).__name__)
    except Exception as e:  # tracing raises many kinds (TraceError, TypeError, ...)
        raise ValueError("folding BatchNorms and fusing ReLUs and additions needs a model "
                         "that torch.fx can trace, and tracing failed (%s: %s); pass "
                         "fold_bn=False, fuse_relu=False, fuse_residual=False to leave the "
                         "model's graph as it is"
                         % (type(e).__name__, e)) from e
    modules = dict(gm.named_modules())
    calls, attrs = {}, []
    for node in gm.graph.nodes:
        if node.op == "call_module":
            calls[node.target] = calls.get(node.target, 0) + 1
        elif node.op == "get_attr":
            attrs.append(node.target)

    def conv_node(n):
        """n's value is a fresh tensor of a plain convolution (no hooks):
        nothing else holds it or a view of it."""
        m = modules.get(n.target) if n.op == "call_module" else None
        return (type(m) in (nn.Conv2d, _ResidualConv2d) or isinstance(m, Conv2d)) and \
            not m._forward_hooks and not m._forward_pre_hooks

    def sole_conv(src):
        """src is the only use of a convolution that can be rewritten."""
        if not (isinstance(src, fx.Node) and src.op == "call_module"):
            return False
        conv = modules.get(src.target)
        return (type(conv) in (nn.Conv2d, _ResidualConv2d) and
                _unsupported_module(conv, grouped) is None and
                len(src.users) == 1 and calls[src.target] == 1 and
                not any(a.startswith(src.target + ".") for a in attrs))

    def fuse_add(node, operands, residual):
        """The addition `node` of a sole convolution's output and another
        node's value, as that convolution's call with the residual, moved to
        where the addition was.  Not where the convolution applies a ReLU
        already (relu(conv) + r is not relu(conv + r)), where an in-place
        form (a += b, a.add_(b)) would update another tensor than the
        convolution's output, nor where anything but plain convolutions runs
        between the convolution and the addition (moving the convolution
        past an in-place update of its input would change what it reads;
        reading an attribute is harmless)."""
        inplace_form = node.target in (operator.iadd, "add_")
        for src, other in (operands, operands[::-1]):
            if (sole_conv(src) and src.target not in relu and isinstance(other, fx.Node)
                    and other is not src and not src.kwargs and len(src.args) == 1
                    and not (inplace_form and src is not operands[0])):
                break
        else:
            return
        between = []
        n = src.next
        while n is not node:
            between.append(n)
            n = n.next
        if not all(conv_node(b) or b.op == "get_attr" for b in between):
            return
        node.prepend(src)  # after the residual, which may come after the convolution
        src.kwargs = {"residual": other}
        modules[src.target].__class__ = _ResidualConv2d
        node.replace_all_uses_with(src)
        gm.graph.erase_node(node)
        residual[src.target] = {"residual": other.name, "inplace": False, "node": src}

    def decide_inplace(residual):
        """After every rewrite, in the final order: a convolution writes its
        output into its residual where that is a plain convolution's fresh
        output (conv_node) which it does not read as its input and which
        every other reader, each a plain convolution too (none makes a view
        of it), reads before it."""
        order = {n: i for i, n in enumerate(gm.graph.nodes)}
        for entry in residual.values():
            src = entry.pop("node")
            other = src.kwargs["residual"]
            entry["inplace"] = (conv_node(other) and src.args[0] is not other and
                                all(u is src or (conv_node(u) and order[u] < order[src])
                                    for u in other.users))

    folded, relu = {}, {}
    for node in list(gm.graph.nodes):
        if not fold_bn:
            break
        if node.op != "call_module" or not isinstance(modules.get(node.target), nn.BatchNorm2d):
            continue
        src = node.args[0] if node.args else None
        bn = modules[node.target]
        if (not sole_conv(src) or
                bn.training or not bn.track_running_stats or bn.running_mean is None or
                bn._forward_hooks or bn._forward_pre_hooks or
                calls[node.target] != 1 or len(node.args) != 1 or node.kwargs):
            continue
        fused = fuse_conv_bn_eval(modules[src.target], bn)
        parent, _, leaf = src.target.rpartition(".")
        setattr(gm.get_submodule(parent) if parent else gm, leaf, fused)
        modules[src.target] = fused
        node.replace_all_uses_with(src)
        gm.graph.erase_node(node)
        folded[src.target] = node.target
    # One pass in graph order: a ReLU after a block's addition is fused
    # before the next block's addition reads its output as the identity.
    residual = {}
    for node in list(gm.graph.nodes):
        operands = _add_operands(node) if fuse_residual else None
        if operands is not None:
            fuse_add(node, operands, residual)
            continue
        found = _activation_source(node, modules) if fuse_relu else None
        if found is None or not sole_conv(found[0]):
            continue
        src, act = found
        node.replace_all_uses_with(src)
        gm.graph.erase_node(node)
        name = node.target if node.op == "call_module" else act
        if src.target in relu:  # a second activation: relu6 after relu or the reverse is relu6
            first, first_name = relu[src.target]
            act = "relu6" if "relu6" in (first, act) else "relu"
            name = "%s, %s" % (first_name, name)
        relu[src.target] = (act, name)
    decide_inplace(residual)
    gm.graph.lint()
    gm.delete_all_unused_submodules()
    gm.recompile()
    return gm, folded, relu, residual


def patch(model, *, fold_bn=True, fuse_relu=True, fuse_residual=True, grouped=False,
          channels_last=False, precision="auto", inplace=False, pack_weights=False):
    """The model for inference on convtune's convolutions.

    Every nn.Conv2d that convtune can run is replaced by a Conv2d with its
    configuration, parameters and `precision`; the others stay PyTorch's,
    each with its reason in the report (training mode, a dtype other than
    float32, padding_mode, asymmetric "same" padding, a subclass of
    nn.Conv2d, forward hooks, parametrized weights, groups > 1 without
    grouped=True).
    Whether a problem's sizes fit is checked when it runs (Conv2d raises
    UnsupportedError then).

    grouped (off by default): grouped and depthwise convolutions are
    replaced too (groups kept), BatchNorms, ReLUs and additions after them
    folded and fused alike.  They run on convtune's FFMA families (direct,
    dw, dwc) and, NCHW with 4 or more output channels a group, on tc and
    tc3, which may be slower than PyTorch's grouped kernels: off, they stay
    PyTorch's, each with that reason in the report.

    fold_bn: each eval-mode BatchNorm2d fed by such a convolution alone is
    folded into it, once, now (weight * gamma / sqrt(var + eps), and the
    bias likewise), so Conv -> BN becomes one convtune call.  This traces
    the model with torch.fx and returns an fx.GraphModule (ValueError,
    naming fold_bn=False, fuse_relu=False, fuse_residual=False, when the
    model cannot be traced); convolutions its forward never calls are not
    in it (the report lists them).
    fuse_relu: likewise each ReLU (nn.ReLU, torch.relu, F.relu, their
    in-place forms, Tensor.relu, a clamp from 0 with no upper bound) or
    ReLU6 (nn.ReLU6, F.relu6, nn.Hardtanh and F.hardtanh with bounds 0
    and 6, torch.clamp / clip and Tensor.clamp / clip to [0, 6], in-place
    forms too) whose input is such a convolution's output (after its folded
    BatchNorm) alone is taken out of the graph and the convolution applies
    it as it stores each output (act="relu" or act="relu6"): Conv -> BN ->
    ReLU (MobileNetV2's ReLU6) becomes one convtune call.
    fuse_residual (on by default; False leaves the additions to torch):
    each addition of such a convolution's output (after its folded
    BatchNorm) alone and another value (a ResNet block's identity) becomes
    the convolution's call with that residual, which its kernel
    adds before the ReLU, fused too where one follows the addition: Conv ->
    BN -> + identity -> ReLU becomes one convtune call (residual=1 in its
    spec).  Where the identity is another convolution's output that nothing
    reads afterwards, the output is written into its memory (no copy;
    Conv2d.residual_inplace); else it is copied into the output first.  A
    residual that does not fit the kernel at run time (a broadcast, another
    dtype) is added by torch after the convolution, as before.
    Without any of the three the modules are replaced where they stand.
    Tune with the same fold_bn, fuse_relu, fuse_residual and grouped
    (tune() and collect() take them): a folded convolution's problem has a
    bias, a fused one act=relu, act=relu6 or residual=1.

    channels_last: the patched model's parameters in channels_last and a
    forward pre-hook giving its 4-D inputs that format, so that every
    convolution runs NHWC (layout=nhwc, where gm reads x and w without a
    layout pass) even for NCHW callers; its outputs keep the format the
    model's last ops give them (the same values).  Tune with it too.

    pack_weights: the Conv2d modules pack their weights once (see Conv2d):
    for a model whose weights do not change.

    inplace: patch `model` itself, without fold_bn, fuse_relu and
    fuse_residual only (they make a new GraphModule; ValueError); else a
    deep copy is patched and the model passed in is left as it was.

    Returns (patched model, report): report["replaced"] lists {"name",
    "folded_bn" (the BatchNorm's name, or None), "fused_relu" (the ReLU or
    ReLU6 module's name, "relu" or "relu6" for a function or method,
    both joined by ", " where two were fused in a row, or None),
    "fused_residual" (None, or {"residual": the graph node of the value
    added, "inplace": whether the output is written into it})},
    report["left"] {"name", "reason"}, in module order."""
    _check_precision(precision)
    # A lone convolution has no BatchNorm or ReLU after it.
    rewrite = (fold_bn or fuse_relu or fuse_residual) and not isinstance(model, nn.Conv2d)
    if inplace and rewrite:
        raise ValueError("inplace=True patches the modules where they stand and cannot fold "
                         "BatchNorms or fuse ReLUs and additions (that makes a new "
                         "GraphModule): pass fold_bn=False, fuse_relu=False, "
                         "fuse_residual=False, or inplace=False")
    if inplace and isinstance(model, nn.Conv2d) and not isinstance(model, Conv2d):
        raise ValueError("inplace=True replaces convolutions inside their model, and a lone "
                         "nn.Conv2d has no model around it: pass inplace=False and use the "
                         "module returned")
    if not inplace:
        model = copy.deepcopy(model)
    folded, relu, residual = {}, {}, {}
    report = {"replaced": [], "left": []}
    if rewrite:
        before = [n for n, m in model.named_modules() if isinstance(m, nn.Conv2d)]
        model, folded, relu, residual = _fuse(model, fold_bn, fuse_relu, fuse_residual,
                                              grouped)
        kept = {n for n, m in model.named_modules()}
        report["left"] += [{"name": n, "reason": "its model's forward never calls it: "
                                                 "not in the traced model"}
                           for n in before if n not in kept]
    made = {}  # id(nn.Conv2d) -> its Conv2d: a module held under several names stays one
    for name, module in list(model.named_modules(remove_duplicate=False)):
        if not isinstance(module, nn.Conv2d) or isinstance(module, Conv2d):
            continue
        reason = _unsupported_module(module, grouped)
        if reason is not None:
            report["left"].append({"name": name, "reason": reason})
            continue
        new = made.get(id(module))
        if new is None:
            new = made[id(module)] = Conv2d.from_module(
                module, precision=precision, act=relu.get(name, ("none",))[0],
                pack_weights=pack_weights)
            new.residual_inplace = bool(residual.get(name, {}).get("inplace"))
        if name == "":  # the model is the convolution
            model = new
        else:
            parent, _, leaf = name.rpartition(".")
            setattr(model.get_submodule(parent) if parent else model, leaf, new)
        report["replaced"].append({"name": name, "folded_bn": folded.get(name),
                                   "fused_relu": relu.get(name, (None, None))[1],
                                   "fused_residual": residual.get(name)})
    if channels_last:
        model = _to_channels_last(model)
    return model, report
