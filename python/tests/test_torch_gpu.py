"""convtune.torch on a CUDA GPU: conv2d and Conv2d against F.conv2d in
float64 under the precision contract's elementwise bound (grouped and
depthwise convolutions too), on the current stream, inside torch.compile
(fullgraph) and a CUDA graph, with autograd, patched models against the
originals, and the unsupported cases on CUDA tensors.  Skipped without
torch or CUDA.

    CONVTUNE_LIB=build/runtime/libconvtune.so python3 -m pytest python/tests
"""

import copy
import math

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device: torch.cuda.is_available() is False", allow_module_level=True)

import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import convtune.torch as ct  # noqa: E402

DEV = torch.device("cuda")

# (x shape, weight shape, stride, padding, dilation, bias)
CASES = [
    ((2, 3, 57, 55), (16, 3, 11, 11), 4, 2, 1, True),
    ((1, 1, 9, 7), (1, 1, 3, 3), 1, 0, 1, False),
    ((1, 5, 13, 11), (7, 5, 3, 3), 1, 1, 1, True),
    ((2, 16, 15, 17), (8, 16, 1, 1), 2, 0, 1, True),
    ((3, 4, 21, 19), (8, 4, 3, 3), 1, 3, 2, False),
    ((1, 6, 27, 25), (12, 6, 3, 3), (2, 1), (3, 0), (3, 1), True),
    ((2, 3, 31, 29), (5, 3, 3, 3), 5, 1, 1, True),
    ((1, 64, 28, 28), (64, 64, 3, 3), 1, 1, 1, True),
    ((1, 3, 64, 64), (32, 3, 16, 16), 16, 0, 1, True),
    ((2, 8, 12, 12), (4, 8, 4, 4), 2, 1, 1, False),
]


def bound(x, w, b, stride, padding, dilation, precision, groups=1):
    """The contract's elementwise bound (tuner/verify.h):
    (2*u_op + (L+1)*u_acc) * sum|x*w| (+|b|), L = (C/groups)*R*S (+1 with
    bias): w.shape[1] is C/groups."""
    u_op = 2.0 ** -11 if precision == "tf32" else 2.0 ** -22
    u_acc = 2.0 ** -24
    L = w.shape[1] * w.shape[2] * w.shape[3] + (1 if b is not None else 0)
    abs_sum = F.conv2d(x.double().abs(), w.double().abs(),
                       b.double().abs() if b is not None else None, stride, padding, dilation,
                       groups)
    return (2 * u_op + (L + 1) * u_acc) * abs_sum + 1e-37


def activate(y, act):
    return {"none": y, "relu": torch.relu(y), "relu6": F.relu6(y)}[act]


def reference(x, w, b, stride, padding, dilation, groups=1):
    return F.conv2d(x.double(), w.double(), b.double() if b is not None else None,
                    stride, padding, dilation, groups)


def check_close(y, x, w, b, stride, padding, dilation, precision, act="none", groups=1):
    """y against the float64 reference (through the ReLU or ReLU6 act
    names, the bound the sum's: neither moves two values further apart)."""
    ref = activate(reference(x, w, b, stride, padding, dilation, groups), act)
    assert y.shape == ref.shape and y.dtype == torch.float32
    assert torch.isfinite(y).all()
    err = (y.double() - ref).abs()
    lim = bound(x, w, b, stride, padding, dilation, precision, groups)
    worst = float((err / lim).max())
    assert worst <= 1.0, "error %.3g x the bound (max abs err %.3g)" % (worst, float(err.max()))


def make(xs, ws, bias, seed=0):
    g = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.rand(xs, generator=g).to(DEV)
    bound_w = 1 / math.sqrt(ws[1] * ws[2] * ws[3])
    w = ((torch.rand(ws, generator=g) * 2 - 1) * bound_w).to(DEV)
    b = ((torch.rand(ws[0], generator=g) * 2 - 1) * bound_w).to(DEV) if bias else None
    return x, w, b


@pytest.mark.parametrize("precision", ["tf32", "fp32"])
@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_conv2d_matches_float64(case, precision):
    xs, ws, stride, padding, dilation, bias = case
    x, w, b = make(xs, ws, bias)
    y = ct.conv2d(x, w, b, stride, padding, dilation, precision=precision)
    torch.cuda.synchronize()
    check_close(y, x, w, b, stride, padding, dilation, precision)
    info = ct.explain(x, w, b, stride, padding, dilation, precision=precision)
    assert info["path"] in ("tuned-cubin", "tuned-compiled", "nearest", "default"), info
    assert info["precision"] == precision and info["reason"]


@pytest.mark.parametrize("precision", ["tf32", "fp32"])
@pytest.mark.parametrize("case", CASES[::3], ids=[str(i) for i in range(0, len(CASES), 3)])
def test_fused_relu_matches_float64(case, precision):
    xs, ws, stride, padding, dilation, bias = case
    x, w, b = make(xs, ws, bias)
    x = x - 0.5  # outputs of both signs
    y = ct.conv2d(x, w, b, stride, padding, dilation, precision=precision, act="relu")
    torch.cuda.synchronize()
    assert (y == 0).any() and (y > 0).any()
    check_close(y, x, w, b, stride, padding, dilation, precision, act="relu")
    assert ct.explain(x, w, b, stride, padding, dilation, precision=precision,
                      act="relu")["spec"].endswith(",act=relu")


@pytest.mark.parametrize("precision", ["tf32", "fp32"])
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("groups", [1, 16])
def test_fused_relu6_matches_float64(precision, layout, groups):
    """act="relu6": outputs below 0, between 0 and 6 and above 6 (x 16
    times wider than make's), against relu6 of the float64 reference; plain,
    depthwise, in both layouts; with a residual too."""
    x, w, b = make((2, 16, 15, 13), (32, 16 // groups, 3, 3), True, seed=5)
    x = 16 * x - 4
    if layout == "nhwc":
        x = x.to(memory_format=torch.channels_last)
    y = ct.conv2d(x, w, b, 1, 1, 1, groups, precision=precision, act="relu6")
    torch.cuda.synchronize()
    assert (y == 0).any() and (y == 6).any() and ((y > 0) & (y < 6)).any()
    check_close(y, x, w, b, 1, 1, 1, precision, act="relu6", groups=groups)
    spec = ct.explain(x, w, b, 1, 1, 1, groups, precision=precision, act="relu6")["spec"]
    assert ",act=relu6" in spec, spec
    r = 4 * torch.randn(y.shape, device=DEV)
    y = ct.conv2d(x, w, b, 1, 1, 1, groups, precision=precision, act="relu6", residual=r)
    torch.cuda.synchronize()
    check_residual(y, x, w, b, r, 1, 1, precision, "relu6", groups)


@pytest.mark.parametrize("precision", ["tf32", "fp32"])
def test_channels_last_runs_nhwc(precision):
    x, w, b = make((2, 8, 19, 17), (12, 8, 3, 3), True)
    x = x.to(memory_format=torch.channels_last)
    for weight in (w, w.to(memory_format=torch.channels_last)):
        y = ct.conv2d(x, weight, b, 2, 1, precision=precision, act="relu")
        torch.cuda.synchronize()
        assert y.is_contiguous(memory_format=torch.channels_last)
        check_close(y, x, w, b, 2, 1, 1, precision, act="relu")
    assert ct.explain(x, w, b, 2, 1, precision=precision)["spec"].endswith(",layout=nhwc")


def test_fused_relu_gradients_match():
    x, w, b = make((2, 3, 20, 18), (8, 3, 3, 3), True)
    x = (x - 0.5).requires_grad_(True)
    w.requires_grad_(True)
    b.requires_grad_(True)
    saved = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    try:
        ct.conv2d(x, w, b, 2, 1, precision="fp32", act="relu").square().sum().backward()
        got = [t.grad.clone() for t in (x, w, b)]
        for t in (x, w, b):
            t.grad = None
        torch.relu(F.conv2d(x, w, b, 2, 1)).square().sum().backward()
    finally:
        torch.backends.cudnn.allow_tf32 = saved
    for g, t in zip(got, (x, w, b)):
        assert torch.allclose(g, t.grad, atol=1e-4, rtol=1e-4)


def test_auto_precision_follows_cudnn_allow_tf32():
    x, w, b = make((1, 3, 20, 20), (4, 3, 3, 3), True)
    saved = torch.backends.cudnn.allow_tf32
    try:
        torch.backends.cudnn.allow_tf32 = False
        assert ct.explain(x, w, b)["precision"] == "fp32"
        check_close(ct.conv2d(x, w, b), x, w, b, 1, 0, 1, "fp32")
        torch.backends.cudnn.allow_tf32 = True
        assert ct.explain(x, w, b)["precision"] == "tf32"
    finally:
        torch.backends.cudnn.allow_tf32 = saved


def test_module_drop_in_for_nn_conv2d():
    torch.manual_seed(3)
    ref = nn.Conv2d(3, 24, 7, stride=2, padding=3).to(DEV)
    mine = ct.Conv2d(3, 24, 7, stride=2, padding=3, precision="fp32").to(DEV)
    mine.load_state_dict(ref.state_dict())
    x = torch.rand(2, 3, 40, 38, device=DEV)
    with torch.no_grad():
        y = mine(x)
    check_close(y, x, ref.weight.detach(), ref.bias.detach(), 2, 3, 1, "fp32")
    conv = ct.Conv2d.from_module(ref, precision="fp32")
    with torch.no_grad():
        assert torch.equal(conv(x), y)
    unbatched = ct.Conv2d(3, 4, 3).to(DEV)
    with torch.no_grad():
        assert unbatched(torch.rand(3, 10, 10, device=DEV)).shape == (4, 8, 8)


@pytest.mark.parametrize("precision", ["tf32", "fp32"])
def test_packed_weights_module(precision):
    """Conv2d(pack_weights=True) in eval mode: the output of the unpacked
    module bit for bit, NCHW and channels_last, for a layer the general
    family runs (64 channels, 3x3) and a small one; a change of the weight
    through torch is followed, one through .data after repack(), retired
    contexts (set_database) pack again; training
    mode and autograd take the ordinary path; patch(pack_weights=True)
    sets it on every module."""
    torch.manual_seed(5)
    for cin, cout, size in ((64, 64, 28), (3, 8, 17)):
        ref = ct.Conv2d(cin, cout, 3, padding=1, precision=precision).to(DEV).eval()
        mine = ct.Conv2d(cin, cout, 3, padding=1, precision=precision,
                         pack_weights=True).to(DEV).eval()
        mine.load_state_dict(ref.state_dict())
        assert "pack_weights=True" in repr(mine)
        for fmt in (torch.contiguous_format, torch.channels_last):
            x = torch.rand(2, cin, size, size, device=DEV).contiguous(memory_format=fmt)
            with torch.no_grad():
                want = ref(x)
                assert torch.equal(mine(x), want)
                assert torch.equal(mine(x), want)  # warm: the packed weights again
                assert ct._packed.get(mine), "the packed path was not taken"
            check_close(want, x, ref.weight.detach(), ref.bias.detach(), 1, 1, 1, precision)
        x = torch.rand(2, cin, size, size, device=DEV)
        with torch.no_grad():
            mine.weight.mul_(2)
            ref.weight.mul_(2)
            assert torch.equal(mine(x), ref(x))
            mine.weight.data.mul_(0.5)  # unseen by the version counter
            ref.weight.data.mul_(0.5)
            mine.repack()
            assert torch.equal(mine(x), ref(x))
        ct.set_database(ct._state["db"])  # the contexts retired: packed again
        with torch.no_grad():
            assert torch.equal(mine(x), ref(x))
        mine.train()
        y = mine(x)
        assert y.requires_grad
        y.sum().backward()
        assert mine.weight.grad is not None
    net = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Conv2d(8, 4, 1)).to(DEV).eval()
    patched, report = ct.patch(net, precision=precision, pack_weights=True)
    assert len(report["replaced"]) == 2
    assert all(m.pack_weights for m in patched.modules() if isinstance(m, ct.Conv2d))
    x = torch.rand(1, 3, 20, 20, device=DEV)
    plain, _ = ct.patch(net, precision=precision)
    with torch.no_grad():
        assert torch.equal(patched(x), plain(x))


@pytest.mark.parametrize("pack", [False, True])
def test_module_call_repeats_until_something_changes(pack, monkeypatch):
    """Conv2d repeats its last checked call (_Repeat) with the checked
    path's output bit for bit, packed or not, and each thing that call
    depends on, changed, sends the next call back through the checks (a new
    _Repeat), or through the op where it must be seen (autograd, the
    profiler; a packed call stays packed under the profiler, in the op's
    name)."""
    torch.manual_seed(7)
    ref = ct.Conv2d(16, 8, 3, padding=1).to(DEV).eval()  # precision "auto"
    mine = ct.Conv2d(16, 8, 3, padding=1, pack_weights=pack).to(DEV).eval()
    mine.load_state_dict(ref.state_dict())
    x = torch.rand(2, 16, 12, 12, device=DEV)
    with torch.no_grad():
        want = ref(x)
        assert torch.equal(mine(x), want)
        first = ct._repeats.get(mine)
        assert first is not None and first.live
        for _ in range(3):
            assert torch.equal(mine(x), want)
        assert ct._repeats.get(mine) is first  # repeated, not rebuilt

    def both(change):
        change(ref)
        change(mine)

    def set_weight(m):
        m.weight = nn.Parameter(m.weight.detach() * 0.5)  # keeps its format

    tf32 = torch.backends.cudnn.allow_tf32
    xc = x.contiguous(memory_format=torch.channels_last)

    def to_channels_last(m):  # the weight too: no copy per call
        m.weight = nn.Parameter(m.weight.detach().contiguous(memory_format=torch.channels_last))

    changes = [
        ("x's shape", None, torch.rand(3, 16, 12, 12, device=DEV)),
        ("x's format", to_channels_last, xc),
        ("weight in place", lambda m: m.weight.mul_(2), xc),
        ("a new weight", set_weight, xc),
        ("bias in place", lambda m: m.bias.add_(1), xc),
        ("stride", lambda m: setattr(m, "stride", (2, 2)), xc),
        ("act", lambda m: setattr(m, "act", "relu"), xc),
        ("allow_tf32", lambda m: setattr(torch.backends.cudnn, "allow_tf32", not tf32), xc),
        ("a new context", lambda m: ct.set_database(ct._state["db"]), xc),
    ]
    try:
        for name, change, xi in changes:
            before = ct._repeats.get(mine)
            with torch.no_grad():
                if change is not None:
                    both(change)
                got, want = mine(xi), ref(xi)
                assert torch.equal(got, want), name
                after = ct._repeats.get(mine)
                assert after is not before and not before.live and after.live, name
                assert torch.equal(mine(xi), want), name  # repeated
                assert ct._repeats.get(mine) is after, name
    finally:
        torch.backends.cudnn.allow_tf32 = tf32
    # Profiled: the op's name in the trace; a packed module's call stays
    # packed (the op itself would pack for each call).
    from convtune._lib import Context
    calls = {"forward": 0, "forward_packed": 0}
    for name in calls:
        def counted(self, *args, _name=name, _orig=getattr(Context, name), **kw):
            calls[_name] += 1
            return _orig(self, *args, **kw)
        monkeypatch.setattr(Context, name, counted)
    with torch.no_grad():
        with torch.autograd.profiler.profile() as prof:
            assert torch.equal(mine(x), ref(x))
    assert calls == ({"forward": 1, "forward_packed": 1} if pack else {"forward": 2, "forward_packed": 0})
    names = [e.name for e in prof.function_events]
    assert sum("convtune::conv2d" in n for n in names) >= 2, names
    monkeypatch.undo()
    y = mine(x)  # autograd records it
    assert y.requires_grad and y.grad_fn is not None
    mine.repack()
    assert ct._repeats.get(mine) is None and not after.live
    with torch.no_grad():  # a weight in x's other format: copied for each call, not kept
        assert torch.equal(mine(x), ref(x))  # (packed once, from x's format: kept)
    assert (ct._repeats.get(mine) is not None) == pack
    # A module made in inference mode: its parameters are inference tensors,
    # with no version counter to watch, so its calls are not kept.
    with torch.inference_mode():
        made = ct.Conv2d(16, 8, 3, padding=1, pack_weights=pack).to(DEV).eval()
        assert made.weight.is_inference()
        want = ct.conv2d(x, made.weight, made.bias, padding=1)
        assert torch.equal(made(x), want) and torch.equal(made(x), want)
    assert ct._repeats.get(made) is None


def test_runs_on_the_current_stream():
    x, w, b = make((4, 3, 67, 65), (32, 3, 11, 11), True)
    ct.conv2d(x, w, b, 4, 2, precision="fp32")  # load outside the side stream
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        y = ct.conv2d(x, w, b, 4, 2, precision="fp32")
        y2 = y * 1  # queued behind the convolution on s
    s.synchronize()
    check_close(y, x, w, b, 4, 2, 1, "fp32")
    assert torch.equal(y2, y)


def test_torch_compile_fullgraph():
    m = nn.Sequential(ct.Conv2d(3, 16, 5, padding=2, precision="fp32"), nn.ReLU(),
                      ct.Conv2d(16, 8, 3, stride=2, precision="fp32")).to(DEV)
    x = torch.rand(2, 3, 32, 32, device=DEV)
    with torch.no_grad():
        eager = m(x)
        compiled = torch.compile(m, fullgraph=True)(x)
    torch.cuda.synchronize()
    assert torch.allclose(eager, compiled, atol=1e-5, rtol=1e-5)


def test_cuda_graph_capture_and_replay():
    x, w, b = make((2, 3, 57, 55), (16, 3, 11, 11), True)
    static_x = x.clone()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):  # warm-up: the first call loads the kernel
            ct.conv2d(static_x, w, b, 4, 2, precision="tf32")
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_y = ct.conv2d(static_x, w, b, 4, 2, precision="tf32")
    x2, _, _ = make((2, 3, 57, 55), (16, 3, 11, 11), True, seed=5)
    static_x.copy_(x2)
    graph.replay()
    torch.cuda.synchronize()
    check_close(static_y, x2, w, b, 4, 2, 1, "tf32")


def test_gradients_match_f_conv2d():
    """The backward pass is PyTorch's own (cuDNN), here without TF32."""
    x, w, b = make((2, 3, 20, 18), (8, 3, 3, 3), True)
    x.requires_grad_(True)
    w.requires_grad_(True)
    b.requires_grad_(True)
    saved = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    try:
        ct.conv2d(x, w, b, 2, 1, precision="fp32").square().sum().backward()
        got = [t.grad.clone() for t in (x, w, b)]
        for t in (x, w, b):
            t.grad = None
        F.conv2d(x, w, b, 2, 1).square().sum().backward()
    finally:
        torch.backends.cudnn.allow_tf32 = saved
    for g, t in zip(got, (x, w, b)):
        assert torch.allclose(g, t.grad, atol=1e-4, rtol=1e-4)


def test_opcheck_on_cuda():
    x, w, b = make((2, 3, 20, 20), (8, 3, 3, 3), True)
    result = torch.library.opcheck(torch.ops.convtune.conv2d.default,
                                   (x, w, b, [1, 1], [1, 1], [1, 1], "fp32"))
    assert all(v == "SUCCESS" for v in result.values()), result


@pytest.mark.parametrize("make_call,needle", [
    (lambda x, w: ct.conv2d(x.half(), w.half()), "float16"),
    (lambda x, w: ct.conv2d(x[..., ::2], w), "strided view"),
    (lambda x, w: ct.conv2d(x.cpu(), w), "on cpu"),
    (lambda x, w: ct.conv2d(x, w.cpu()), "weight is on cpu"),
    (lambda x, w: ct.conv2d(x.double(), w.double()), "float64"),
])
def test_unsupported_on_cuda(make_call, needle):
    x, w, _ = make((2, 3, 16, 16), (4, 3, 3, 3), False)
    with pytest.raises(ct.UnsupportedError, match=needle):
        make_call(x, w)


def test_batch_of_zero():
    x = torch.empty(0, 3, 16, 16, device=DEV)
    w = torch.rand(4, 3, 3, 3, device=DEV)
    assert ct.conv2d(x, w).shape == (0, 4, 14, 14)


def randomize_bn(net):
    """net with its BatchNorms' statistics and affine parameters drawn at
    random, so that folding them changes the weights."""
    for m in net.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-1, 1)
            m.running_var.uniform_(0.5, 2)
            m.weight.data.uniform_(0.5, 2)
            m.bias.data.uniform_(-1, 1)
    return net


def test_patch_folded_model_matches_the_original():
    """patch() on a Conv -> BN -> ReLU -> Conv -> BN model: every conv is
    convtune's, both BatchNorms folded, and the output matches the
    original model's in float64 (fp32: the folded weights' rounding
    only)."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16),
                        nn.ReLU(), nn.Conv2d(16, 8, 1), nn.BatchNorm2d(8)).to(DEV)
    randomize_bn(net).eval()
    x = torch.rand(2, 3, 19, 23, device=DEV)
    patched, report = ct.patch(net, precision="fp32")
    assert [r["folded_bn"] for r in report["replaced"]] == ["1", "4"] and not report["left"]
    assert [r["fused_relu"] for r in report["replaced"]] == ["2", None]
    # The same model run NHWC (layout=nhwc) for this NCHW input.
    nhwc, _ = ct.patch(net, precision="fp32", channels_last=True)
    with torch.no_grad():
        ref = copy.deepcopy(net).double()(x.double())
        for model in (patched, nhwc):
            y = model(x)
            assert y.dtype == torch.float32 and torch.isfinite(y).all()
            rel = ((y.double() - ref).norm() / ref.norm()).item()
            assert rel < 1e-5, rel
            assert torch.allclose(y.double(), ref, rtol=1e-4, atol=1e-4)


def test_eager_inference_runs_the_op_implementation_directly():
    x, w, b = make((2, 5, 17, 19), (7, 5, 3, 3), True)
    with torch.no_grad():
        assert not ct._needs_op(x, w, b)
        direct = ct.conv2d(x, w, b, 1, 1, 1, precision="fp32")
        via_op = torch.ops.convtune.conv2d(x, w, b, [1, 1], [1, 1], [1, 1], "fp32")
    torch.cuda.synchronize()
    assert torch.equal(direct, via_op)
    check_close(direct, x, w, b, 1, 1, 1, "fp32")
    with pytest.raises(ct.UnsupportedError, match="strided view"):
        with torch.no_grad():
            ct.conv2d(x[..., ::2], w, b)


def test_forward_tensors_follows_the_problems_layout():
    x, w, b = make((2, 8, 13, 11), (6, 8, 3, 3), True)
    lib = ct.library()
    p = lib.parse("n=2,c=8,h=13,w=11,k=6,r=3,s=3,pad=1,prec=fp32,layout=nhwc")
    xc, wc = (t.contiguous(memory_format=torch.channels_last) for t in (x, w))
    y = torch.full((2, 6, 13, 11), float("nan"), device=DEV).contiguous(
        memory_format=torch.channels_last)
    ct.context(DEV).forward_tensors(p, xc, wc, b, y)
    torch.cuda.synchronize()
    check_close(y, x, w, b, 1, 1, 1, "fp32")
    with pytest.raises(ValueError, match="must be channels_last"):
        ct.context(DEV).forward_tensors(p, x, wc, b, y)


def check_residual(y, x, w, b, r, stride, padding, precision, act, groups=1):
    """y against act(conv + b + r) in float64, under the contract's bound
    with the residual one more term."""
    ref = activate(reference(x, w, b, stride, padding, 1, groups) + r.double(), act)
    assert y.shape == ref.shape and torch.isfinite(y).all()
    u = 2.0 ** -11 if precision == "tf32" else 2.0 ** -22
    lim = bound(x, w, b, stride, padding, 1, precision, groups) + \
        (2 * u + 2.0 ** -22) * r.double().abs()
    worst = float(((y.double() - ref).abs() / lim).max())
    assert worst <= 1.0, "error %.3g x the bound" % worst


@pytest.mark.parametrize("precision", ["tf32", "fp32"])
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_residual_matches_float64(precision, layout):
    """conv2d(..., residual=r): act(conv + b + r) in a new tensor, r left as
    it was, for a 1x1 and a 3x3, r in the output's layout, in the other one
    and a strided view."""
    fmt = torch.channels_last if layout == "nhwc" else torch.contiguous_format
    for xs, ws, stride, padding in (((2, 32, 14, 12), (48, 32, 1, 1), 1, 0),
                                    ((2, 16, 15, 13), (24, 16, 3, 3), 2, 1)):
        x, w, b = make(xs, ws, True)
        x = (x - 0.5).contiguous(memory_format=fmt)
        shape = reference(x, w, b, stride, padding, 1).shape
        g = torch.Generator(device="cpu").manual_seed(3)
        base = (torch.rand((shape[0], shape[1], shape[2], 2 * shape[3]), generator=g) * 2 - 1)
        for r in (base[..., ::2].contiguous().to(DEV), base[..., ::2].to(DEV),
                  base[..., ::2].contiguous().to(DEV).to(memory_format=torch.channels_last)):
            kept = r.clone()
            for act in ("none", "relu"):
                y = ct.conv2d(x, w, b, stride, padding, precision=precision, act=act, residual=r)
                torch.cuda.synchronize()
                assert y.data_ptr() != r.data_ptr() and torch.equal(r, kept)
                assert y.is_contiguous(memory_format=fmt)
                check_residual(y, x, w, b, r, stride, padding, precision, act)
    spec = ct.explain(x, w, b, stride, padding, precision=precision, act="relu",
                      residual=True)["spec"]
    assert spec.endswith(",act=relu,residual=1" if layout == "nchw"
                         else ",act=relu,layout=nhwc,residual=1")
    with pytest.raises(ValueError, match="output's shape"):
        ct.conv2d(x, w, b, stride, padding, residual=r[:, :1])
    with pytest.raises(ct.UnsupportedError, match="residual is torch.float64"):
        ct.conv2d(x, w, b, stride, padding, residual=r.double())


def test_residual_gradients_match():
    x, w, b = make((2, 8, 12, 10), (16, 8, 3, 3), True)
    r = torch.rand(2, 16, 12, 10, device=DEV) * 2 - 1
    ts = [(x - 0.5).requires_grad_(True), w.requires_grad_(True), b.requires_grad_(True),
          r.requires_grad_(True)]
    saved = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    try:
        ct.conv2d(ts[0], ts[1], ts[2], 1, 1, precision="fp32", act="relu",
                  residual=ts[3]).square().sum().backward()
        got = [t.grad.clone() for t in ts]
        for t in ts:
            t.grad = None
        torch.relu(F.conv2d(ts[0], ts[1], ts[2], 1, 1) + ts[3]).square().sum().backward()
    finally:
        torch.backends.cudnn.allow_tf32 = saved
    for g, t in zip(got, ts):
        assert torch.allclose(g, t.grad, atol=1e-4, rtol=1e-4)


def test_residual_op_checks_and_compiles():
    x, w, b = make((2, 3, 20, 20), (8, 3, 3, 3), True)
    r = torch.rand(2, 8, 20, 20, device=DEV)
    result = torch.library.opcheck(torch.ops.convtune.conv2d.default,
                                   (x, w, b, [1, 1], [1, 1], [1, 1], "fp32", "relu", r))
    assert all(v == "SUCCESS" for v in result.values()), result
    m = ct.Conv2d(3, 8, 3, padding=1, precision="fp32", act="relu").to(DEV)
    with torch.no_grad():
        eager = m(x, r)
        compiled = torch.compile(m, fullgraph=True)(x, r)
    torch.cuda.synchronize()
    assert torch.allclose(eager, compiled, atol=1e-5, rtol=1e-5)
    check_residual(eager, x, m.weight, m.bias, r, 1, 1, "fp32", "relu")


class _Bottlenecks(nn.Module):
    """Two ResNet bottlenecks (the first with a downsampling convolution)."""

    def __init__(self):
        super().__init__()

        def cbn(c, k, r, stride=1):
            return nn.Sequential(nn.Conv2d(c, k, r, stride, r // 2, bias=False),
                                 nn.BatchNorm2d(k))
        self.a = nn.ModuleList([cbn(16, 8, 1), cbn(8, 8, 3, 2), cbn(8, 32, 1)])
        self.down = cbn(16, 32, 1, 2)
        self.b = nn.ModuleList([cbn(32, 8, 1), cbn(8, 8, 3), cbn(8, 32, 1)])
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        out = self.relu(self.a[1](self.relu(self.a[0](x))))
        out = self.a[2](out)
        out += self.down(x)
        x = self.relu(out)
        out = self.relu(self.b[1](self.relu(self.b[0](x))))
        out = self.b[2](out)
        out += x
        return self.relu(out)


@pytest.mark.parametrize("pack", [False, True])
def test_patch_fuses_residuals_and_matches_the_original(pack):
    """patch() on two bottlenecks: both additions and their ReLUs fused into
    the last convolution of each block, writing into the identity's memory,
    and the output matches the original model in float64, NCHW and NHWC."""
    torch.manual_seed(0)
    net = _Bottlenecks().to(DEV)
    randomize_bn(net).eval()
    x = torch.rand(2, 16, 17, 15, device=DEV)
    patched, report = ct.patch(net, precision="fp32", pack_weights=pack, fuse_residual=True)
    fused = {r["name"]: r["fused_residual"] for r in report["replaced"]}
    assert fused["a.2.0"] == {"residual": "down_0", "inplace": True}
    assert fused["b.2.0"] == {"residual": "a_2_0", "inplace": True}
    assert {r["name"]: r["fused_relu"] for r in report["replaced"]}["b.2.0"] == "relu"
    nhwc, _ = ct.patch(net, precision="fp32", channels_last=True, pack_weights=pack,
                       fuse_residual=True)
    # The two fused convolutions write into their residual's memory.
    donated = []
    for model in (patched, nhwc):
        for name in ("a.2.0", "b.2.0"):
            model.get_submodule(name).register_forward_hook(
                lambda m, args, kwargs, out: donated.append(
                    out.data_ptr() == kwargs["residual"].data_ptr()), with_kwargs=True)
    with torch.no_grad():
        ref = copy.deepcopy(net).double()(x.double())
        for model in (patched, nhwc):
            for _ in range(2):  # the second: the modules' repeated calls
                y = model(x)
                assert torch.isfinite(y).all()
                rel = ((y.double() - ref).norm() / ref.norm()).item()
                assert rel < 1e-5, rel
                assert torch.allclose(y.double(), ref, rtol=1e-4, atol=1e-4)
    assert donated == [True] * 8, donated
    # The second calls were the first ones repeated (_Repeat), residual included.
    assert all(ct._repeats.get(model.get_submodule(name)) is not None
               for model in (patched, nhwc) for name in ("a.2.0", "b.2.0"))


# -------------------------------------------------------------------------
# Grouped and depthwise convolutions (the library's direct family runs them)

# (x shape, weight shape (K, C/groups, R, S), stride, padding, groups, bias)
GROUPED_CASES = [
    ((2, 8, 15, 13), (12, 4, 3, 3), 1, 1, 2, True),       # groups=2
    ((2, 32, 16, 14), (32, 1, 3, 3), 1, 1, 32, True),     # depthwise
    ((2, 32, 17, 15), (32, 1, 3, 3), 2, 1, 32, False),    # depthwise, stride 2
    ((1, 16, 12, 13), (32, 1, 3, 3), 1, 1, 16, True),     # depthwise, K = 2C
    ((2, 24, 9, 11), (48, 8, 1, 1), 1, 0, 3, True),       # grouped 1x1, K = 2C
    ((1, 12, 14, 14), (12, 2, 5, 3), (2, 1), (2, 1), 6, True),
]
GROUPED_IDS = ["g2", "dw", "dw-s2", "dw-x2", "g3-1x1-x2", "g6-5x3"]


def formats(layout):
    return torch.channels_last if layout == "nhwc" else torch.contiguous_format


def grouped_spec_tail(groups, act="none", layout="nchw", residual=False):
    """The canonical spec's end: act, layout, residual, then groups."""
    return ((",act=relu" if act == "relu" else "") + (",layout=nhwc" if layout == "nhwc" else "")
            + (",residual=1" if residual else "") + ",groups=%d" % groups)


@pytest.mark.parametrize("precision", ["tf32", "fp32"])
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("case", GROUPED_CASES, ids=GROUPED_IDS)
def test_grouped_matches_float64(case, layout, precision):
    """conv2d(..., groups=G), with and without the ReLU, NCHW and
    channels_last (the weight in either format), against F.conv2d in
    float64 with the same groups, under the contract's bound with
    L = (C/G)*R*S; the spec says groups=G and the kernel is of a family
    that runs groups (direct, or dw / dwc for a depthwise one)."""
    xs, ws, stride, padding, groups, bias = case
    x, w, b = make(xs, ws, bias)
    x = (x - 0.5).contiguous(memory_format=formats(layout))  # outputs of both signs
    weights = (w, w.contiguous(memory_format=torch.channels_last)) if layout == "nhwc" else (w,)
    for weight in weights:
        for act in ("none", "relu"):
            y = ct.conv2d(x, weight, b, stride, padding, 1, groups, precision=precision, act=act)
            torch.cuda.synchronize()
            assert y.is_contiguous(memory_format=formats(layout))
            check_close(y, x, w, b, stride, padding, 1, precision, act=act, groups=groups)
    info = ct.explain(x, w, b, stride, padding, 1, groups, precision=precision, act="relu")
    assert info["spec"].endswith(grouped_spec_tail(groups, "relu", layout)), info
    assert info["variant"].split(":")[0] in ("direct", "dw", "dwc"), info
    # Unbatched, as F.conv2d takes it.
    y = ct.conv2d(x[0], w, b, stride, padding, 1, groups, precision=precision)
    check_close(y.unsqueeze(0), x[:1], w, b, stride, padding, 1, precision, groups=groups)


@pytest.mark.parametrize("precision", ["tf32", "fp32"])
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("case", GROUPED_CASES[:4], ids=GROUPED_IDS[:4])
def test_grouped_residual_matches_float64(case, layout, precision):
    """conv2d(..., groups=G, residual=r): act(conv + b + r), r left as it
    was, r in the output's layout or the other one."""
    xs, ws, stride, padding, groups, bias = case
    x, w, b = make(xs, ws, bias)
    x = (x - 0.5).contiguous(memory_format=formats(layout))
    shape = reference(x, w, b, stride, padding, 1, groups).shape
    g = torch.Generator(device="cpu").manual_seed(3)
    base = (torch.rand(shape, generator=g) * 2 - 1).to(DEV)
    for r in (base, base.contiguous(memory_format=torch.channels_last)):
        kept = r.clone()
        for act in ("none", "relu"):
            y = ct.conv2d(x, w, b, stride, padding, 1, groups, precision=precision, act=act,
                          residual=r)
            torch.cuda.synchronize()
            assert y.data_ptr() != r.data_ptr() and torch.equal(r, kept)
            assert y.is_contiguous(memory_format=formats(layout))
            check_residual(y, x, w, b, r, stride, padding, precision, act, groups=groups)
    spec = ct.explain(x, w, b, stride, padding, 1, groups, precision=precision, act="relu",
                      residual=True)["spec"]
    assert spec.endswith(grouped_spec_tail(groups, "relu", layout, residual=True)), spec


@pytest.mark.parametrize("pack", [False, True])
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_grouped_module(pack, layout):
    """ct.Conv2d(groups=G) and from_module of a grouped nn.Conv2d: the
    float64 reference's values, packed weights (direct's plain copy) bit
    for bit the unpacked call's, repeated calls too, a residual, and (the
    depthwise layer) torch.compile."""
    torch.manual_seed(11)
    fmt = formats(layout)
    for c, k, groups in ((32, 32, 32), (16, 32, 16), (24, 36, 4)):
        ref = nn.Conv2d(c, k, 3, stride=2, padding=1, groups=groups).to(DEV).eval()
        ref = ref.to(memory_format=fmt)
        plain = ct.Conv2d.from_module(ref, precision="fp32")
        mine = ct.Conv2d.from_module(ref, precision="fp32", pack_weights=pack)
        assert mine.groups == groups and "groups=%d" % groups in repr(mine)
        x = torch.rand(2, c, 15, 13, device=DEV).contiguous(memory_format=fmt)
        w, b = ref.weight.detach(), ref.bias.detach()
        with torch.no_grad():
            want = plain(x)
            check_close(want, x, w, b, 2, 1, 1, "fp32", groups=groups)
            for _ in range(3):  # the first call, then its repeats
                assert torch.equal(mine(x), want)
            assert (ct._packed.get(mine) is not None) == pack
            r = torch.rand_like(want) * 2 - 1
            got = mine(x, r)
            check_residual(got, x, w, b, r, 2, 1, "fp32", "none", groups=groups)
            if c == k == groups and not pack:
                compiled = torch.compile(plain, fullgraph=True)(x)
                assert torch.allclose(compiled, want, atol=1e-5, rtol=1e-5)


def test_grouped_gradients_match_f_conv2d():
    """The backward pass of a grouped call is convolution_backward with its
    groups: the gradients F.conv2d gives (without TF32)."""
    x, w, b = make((2, 16, 14, 12), (32, 4, 3, 3), True)
    r = torch.rand(2, 32, 7, 6, device=DEV) * 2 - 1
    ts = [(x - 0.5).requires_grad_(True), w.requires_grad_(True), b.requires_grad_(True),
          r.requires_grad_(True)]
    saved = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    try:
        ct.conv2d(ts[0], ts[1], ts[2], 2, 1, 1, 4, precision="fp32", act="relu",
                  residual=ts[3]).square().sum().backward()
        got = [t.grad.clone() for t in ts]
        for t in ts:
            t.grad = None
        torch.relu(F.conv2d(ts[0], ts[1], ts[2], 2, 1, 1, 4) + ts[3]).square().sum().backward()
    finally:
        torch.backends.cudnn.allow_tf32 = saved
    for g, t in zip(got, ts):
        assert torch.allclose(g, t.grad, atol=1e-4, rtol=1e-4)


def test_grouped_argument_errors_on_cuda():
    x, w, _ = make((2, 8, 16, 16), (8, 2, 3, 3), False)
    with pytest.raises(ValueError, match="groups=3 does not divide weight's 8 output channels"):
        ct.conv2d(x, w, groups=3)
    with pytest.raises(ValueError, match="x has 8 channels but weight expects 4"):
        ct.conv2d(x, w, groups=2)
    with pytest.raises(ValueError, match="groups must be an integer >= 1"):
        ct.conv2d(x, w, groups=0)


class _DepthwiseSeparable(nn.Module):
    """A MobileNet block: a depthwise 3x3 -> BN -> ReLU, then a 1x1 -> BN
    -> ReLU; then a grouped 3x3 (groups=4) -> BN, plus the 1x1's output,
    -> ReLU (a grouped convolution carrying a residual)."""

    def __init__(self, c=32, k=64):
        super().__init__()
        self.dw = nn.Conv2d(c, c, 3, padding=1, groups=c, bias=False)
        self.dw_bn = nn.BatchNorm2d(c)
        self.pw = nn.Conv2d(c, k, 1, bias=False)
        self.pw_bn = nn.BatchNorm2d(k)
        self.g = nn.Conv2d(k, k, 3, padding=1, groups=4, bias=False)
        self.g_bn = nn.BatchNorm2d(k)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        y = self.relu(self.dw_bn(self.dw(x)))
        y = self.relu(self.pw_bn(self.pw(y)))
        return self.relu(self.g_bn(self.g(y)) + y)


@pytest.mark.parametrize("pack", [False, True])
@pytest.mark.parametrize("fuse_residual", [False, True])
def test_patch_depthwise_separable_matches_the_original(pack, fuse_residual):
    """patch() on a depthwise-separable block: every convolution is
    convtune's (groups kept), each BatchNorm folded and ReLU fused, the
    grouped convolution's addition fused with fuse_residual, and the output
    matches the original model's in float64, NCHW and channels_last."""
    torch.manual_seed(0)
    net = _DepthwiseSeparable().to(DEV)
    randomize_bn(net).eval()
    x = torch.rand(2, 32, 19, 17, device=DEV)
    patched, report = ct.patch(net, precision="fp32", pack_weights=pack,
                               fuse_residual=fuse_residual, grouped=True)
    assert report["left"] == []
    assert [(r["name"], r["folded_bn"], r["fused_relu"]) for r in report["replaced"]] == [
        ("dw", "dw_bn", "relu"), ("pw", "pw_bn", "relu"),
        ("g", "g_bn", "relu" if fuse_residual else None)]
    fused = report["replaced"][2]["fused_residual"]
    # g's residual is its own input: copied into its output, not overwritten.
    assert fused == ({"residual": "pw", "inplace": False} if fuse_residual else None)
    assert [patched.get_submodule(n).groups for n in ("dw", "pw", "g")] == [32, 1, 4]
    nhwc, _ = ct.patch(net, precision="fp32", pack_weights=pack, fuse_residual=fuse_residual,
                       channels_last=True, grouped=True)
    with torch.no_grad():
        ref = copy.deepcopy(net).double()(x.double())
        for model in (patched, nhwc):
            for _ in range(2):  # the second: the modules' repeated calls
                y = model(x)
                assert y.dtype == torch.float32 and torch.isfinite(y).all()
                rel = ((y.double() - ref).norm() / ref.norm()).item()
                assert rel < 1e-5, rel
                assert torch.allclose(y.double(), ref, rtol=1e-4, atol=1e-4)
