"""KernelBench level 1 problem 50 (conv standard 2D, square input, square
kernel) computed by convtune: ModelNew, a drop-in for KernelBench's Model.

ModelNew has Model's constructor and forward signatures and its parameters,
conv1.weight [96, 3, 11, 11] and conv1.bias [96], created and initialised
with the calls nn.Conv2d makes, so Model's state_dict loads into it and the
same seed gives the same values.  forward runs libconvtune's ct_forward
(through bench/convtune_ctypes.py, no PyTorch extension) on torch's current
stream: the tuned winner from the tuning database, else a default variant.
It is inference only (no autograd).

Where things are found:
  convtune_ctypes.py  beside this file; when the file is run from a string,
                      as KernelBench's harness does, $CONVTUNE_ROOT/bench
                      (default: ./bench)
  libconvtune.so      $CONVTUNE_LIB, else build/runtime/libconvtune.so
  tuning database     $CONVTUNE_DB, else ~/.cache/convtune/tuning.db
  precision           $CONVTUNE_PRECISION: auto (default: at each call
                      tf32 when torch.backends.cudnn.allow_tf32 is set,
                      else fp32, as the reference Model's cuDNN conv
                      chooses), tf32 or fp32

Self-check on a GPU (compares with Model and a float64 reference):
  python3 bench/kernelbench_l1_p50.py
"""

import math
import os
import sys

import torch
import torch.nn as nn


def _bench_dir():
    here = globals().get("__file__")
    if here:
        return os.path.dirname(os.path.abspath(here))
    return os.path.join(os.environ.get("CONVTUNE_ROOT", os.getcwd()), "bench")


if _bench_dir() not in sys.path:
    sys.path.insert(0, _bench_dir())

import convtune_ctypes  # noqa: E402

_LIBRARY = []    # the loaded libconvtune, once loaded
_CONTEXTS = {}   # CUDA device index -> open convtune context


def _library():
    if not _LIBRARY:
        _LIBRARY.append(convtune_ctypes.load())
    return _LIBRARY[0]


def _context(device):
    if device.index not in _CONTEXTS:
        _CONTEXTS[device.index] = _library().open(None, device.index)
    return _CONTEXTS[device.index]


class ModelNew(nn.Module):
    def __init__(self, num_classes=1000):
        super(ModelNew, self).__init__()
        in_channels, out_channels, kernel_size = 3, 96, 11
        self.stride, self.padding = 4, 2
        # What nn.Conv2d(3, 96, kernel_size=11, stride=4, padding=2) creates,
        # in its order, with its reset_parameters() calls.
        self.conv1 = nn.Module()
        self.conv1.weight = nn.Parameter(
            torch.empty(out_channels, in_channels, kernel_size, kernel_size))
        self.conv1.bias = nn.Parameter(torch.empty(out_channels))
        nn.init.kaiming_uniform_(self.conv1.weight, a=math.sqrt(5))
        fan_in = in_channels * kernel_size * kernel_size
        bound = 1 / math.sqrt(fan_in)
        nn.init.uniform_(self.conv1.bias, -bound, bound)
        self.precision = os.environ.get("CONVTUNE_PRECISION", "auto")
        if self.precision not in ("auto", "tf32", "fp32"):
            raise ValueError("$CONVTUNE_PRECISION must be auto, tf32 or fp32, not %r"
                             % self.precision)
        self._problems = {}  # (input shape, precision) -> ct_problem

    def call_precision(self):
        """The precision a call runs at now: $CONVTUNE_PRECISION, or with
        auto the one cuDNN's conv would use (TF32 when allowed)."""
        if self.precision != "auto":
            return self.precision
        return "tf32" if torch.backends.cudnn.allow_tf32 else "fp32"

    def problem(self, shape):
        """The ct_problem for an input of `shape` (N, C, H, W) at the call's
        precision, parsed and validated by libconvtune."""
        prec = self.call_precision()
        if (shape, prec) not in self._problems:
            if len(shape) != 4:
                raise ValueError("x must be 4-D (N, C, H, W), not of shape %s" % (shape,))
            k, c, r, s = self.conv1.weight.shape
            spec = ("n=%d,c=%d,h=%d,w=%d,k=%d,r=%d,s=%d,stride=%d,pad=%d,dil=1,bias=1,prec=%s"
                    % (shape[0], shape[1], shape[2], shape[3], k, r, s, self.stride,
                       self.padding, prec))
            self._problems[(shape, prec)] = _library().parse(spec)
        return self._problems[(shape, prec)]

    def forward(self, x):
        p = self.problem(tuple(x.shape))
        if not x.is_cuda:
            raise ValueError("x must be on a CUDA device, not %s" % x.device)
        _, _, _, y_shape = p.shapes()
        y = torch.empty(y_shape, dtype=torch.float32, device=x.device)
        _context(x.device).forward_tensors(p, x, self.conv1.weight, self.conv1.bias, y)
        return y


batch_size = 256
num_classes = 1000


def get_inputs():
    return [torch.rand(batch_size, 3, 224, 224)]


def get_init_inputs():
    return [num_classes]


def _self_check(seed=0):
    """Model and ModelNew from one state dict, on get_inputs() on the GPU:
    each against a float64 reference under its precision contract
    (tuner/verify.h), and KernelBench's fp32 comparison of the two
    (allclose, atol = rtol = 1e-4).  Returns 0 when ModelNew meets its
    contract, else 1."""
    import bench

    torch.manual_seed(seed)
    model = bench.Model(*get_init_inputs())
    torch.manual_seed(seed)
    model_new = ModelNew(*get_init_inputs())
    same_init = all(torch.equal(a, b) for a, b in
                    zip(model.state_dict().values(), model_new.state_dict().values()))
    model_new.load_state_dict(model.state_dict())
    model, model_new = model.cuda(), model_new.cuda()
    torch.manual_seed(seed + 1)
    x = get_inputs()[0].cuda()
    with torch.no_grad():
        y_model = model(x)
        y_new = model_new(x)
    torch.cuda.synchronize()

    p = model_new.problem(tuple(x.shape))
    figs = bench.reference_fp64(p, x, model_new.conv1.weight.detach(),
                                model_new.conv1.bias.detach())
    L = bench.reduction_length(p)
    path, variant = _context(x.device).forward_path(p)
    print("GPU        %s" % torch.cuda.get_device_name(x.device))
    print("problem    %s" % _library().format(p))
    print("kernel     %s, variant %s%s" % (path, variant, "  (nothing tuned: default variant)"
                                           if path == "default" else ""))
    print("init       ModelNew's parameters %s Model's under the same seed"
          % ("equal" if same_init else "DIFFER FROM"))
    verdicts = {}
    model_prec = "tf32" if torch.backends.cudnn.allow_tf32 else "fp32"
    for name, y, prec in (("Model", y_model, model_prec),
                          ("ModelNew", y_new, model_new.call_precision())):
        r = bench.contract_check(y, *figs, L, prec, headline=bench.is_headline_shape(p))
        verdicts[name] = r["passes"]
        print("%-10s %s contract: %s  max abs err %.3g, rel err %.3g, elem ratio %.3g, "
              "frob ratio %.3g%s" % (name, prec, "ok" if r["passes"] else "FAIL",
                                     r["max_abs_err"], r["rel_err"], r["elem_ratio"],
                                     r["frob_ratio"], "  (" + r["reason"] + ")" if r["reason"]
                                     else ""))
    diff = float((y_new - y_model).abs().max())
    close = torch.allclose(y_new, y_model, atol=1e-4, rtol=1e-4)
    print("KernelBench allclose(ModelNew, Model, atol=rtol=1e-4): %s (max |diff| %.3g; "
          "Model runs cuDNN with TF32 allowed = %s)"
          % (close, diff, torch.backends.cudnn.allow_tf32))
    return 0 if verdicts["ModelNew"] and same_init else 1


if __name__ == "__main__":
    sys.exit(_self_check())
