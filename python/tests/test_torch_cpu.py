"""convtune.torch without a GPU: argument checks and their messages, the
custom op's fake (meta) implementation against F.conv2d's shapes, tracing
under torch.compile, the op's registration (opcheck), and Conv2d as a
drop-in for nn.Conv2d.  Skipped where torch is not installed."""

import pytest

torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import convtune.torch as ct  # noqa: E402


def meta(*shape):
    return torch.empty(*shape, device="meta")


@pytest.mark.parametrize("kw", [
    dict(),
    dict(stride=2),
    dict(stride=(3, 1), padding=(1, 2)),
    dict(padding=4, dilation=2),
    dict(stride=5, padding=1, dilation=(2, 3)),
    dict(padding="valid"),
    dict(padding="same"),
    dict(padding="same", dilation=2),
])
def test_fake_shapes_match_f_conv2d(kw):
    x, w, b = meta(2, 3, 29, 31), meta(8, 3, 3, 5), meta(8)
    assert ct.conv2d(x, w, b, **kw).shape == F.conv2d(x, w, b, **kw).shape
    assert ct.conv2d(x[0], w, None, **kw).shape == F.conv2d(x[0], w, None, **kw).shape


@pytest.mark.parametrize("c,k,groups,kw", [
    (8, 12, 2, dict(padding=1)),                 # grouped
    (32, 32, 32, dict(padding=1)),               # depthwise
    (32, 32, 32, dict(stride=2, padding=1)),     # depthwise, strided
    (16, 32, 16, dict(padding="same", dilation=2)),  # depthwise, channel multiplier 2
    (6, 6, 3, dict(stride=(2, 1), padding=(0, 2))),
])
def test_fake_shapes_match_f_conv2d_with_groups(c, k, groups, kw):
    x, w, b = meta(2, c, 17, 15), meta(k, c // groups, 3, 3), meta(k)
    want = F.conv2d(x, w, b, groups=groups, **kw).shape
    assert ct.conv2d(x, w, b, groups=groups, **kw).shape == want
    assert ct.conv2d(x, w, b, groups=groups, act="relu", residual=meta(*want), **kw).shape == want
    xc = x.to(memory_format=torch.channels_last)
    y = ct.conv2d(xc, w, b, groups=groups, **kw)
    assert y.shape == want and y.is_contiguous(memory_format=torch.channels_last)
    assert ct.conv2d(x[0], w, None, groups=groups, **kw).shape == \
        F.conv2d(x[0], w, None, groups=groups, **kw).shape


@pytest.mark.parametrize("make,needle", [
    (lambda x, w: ct.conv2d(x.double(), w.double()), "float64"),
    (lambda x, w: ct.conv2d(x.half(), w), "float16"),
    (lambda x, w: ct.conv2d(x, w), "on cpu"),
    (lambda x, w: ct.conv2d(x.to(memory_format=torch.channels_last), w), "on cpu"),
    (lambda x, w: ct.conv2d(x[:, :, ::2], w), "x is neither contiguous nor channels_last"),
    (lambda x, w: ct.conv2d(x, w.transpose(2, 3)),
     "weight is neither contiguous nor channels_last"),
    (lambda x, w: ct.conv2d(x, w[:, :, :2, :2].contiguous(), padding="same"),
     "asymmetric"),
])
def test_unsupported_cases_name_the_reason(make, needle):
    x, w = torch.randn(2, 3, 16, 16), torch.randn(4, 3, 3, 3)
    with pytest.raises(ct.UnsupportedError) as e:
        make(x, w)
    assert needle in str(e.value)


def test_malformed_arguments():
    x, w = meta(2, 3, 16, 16), meta(4, 3, 3, 3)
    with pytest.raises(ValueError, match="channels"):
        ct.conv2d(meta(2, 5, 16, 16), w)
    with pytest.raises(ValueError, match="empty"):
        ct.conv2d(meta(1, 3, 2, 2), w)
    with pytest.raises(ValueError, match="bias"):
        ct.conv2d(x, w, meta(5))
    with pytest.raises(ValueError, match="precision"):
        ct.conv2d(x, w, precision="fp16")
    with pytest.raises(ValueError, match="act must be one of none, relu"):
        ct.conv2d(x, w, act="gelu")
    with pytest.raises(ValueError, match="stride"):
        ct.conv2d(x, w, stride=0)
    with pytest.raises(ValueError, match="padding"):
        ct.conv2d(x, w, padding="full")
    with pytest.raises(ct.UnsupportedError, match="bias is on cpu"):
        ct.conv2d(x, w, torch.randn(4))


def test_malformed_groups():
    x = meta(2, 8, 16, 16)
    # groups must divide K (the weight's output channels) ...
    with pytest.raises(ValueError, match=r"groups=4 does not divide weight's 6 output channels"):
        ct.conv2d(x, meta(6, 2, 3, 3), groups=4)
    # ... and the weight must hold C / groups channels per group.
    with pytest.raises(ValueError, match=r"x has 8 channels but weight expects 12 "
                                         r"\(weight.shape\[1\] = 3 channels per group x "
                                         r"groups=4\)"):
        ct.conv2d(x, meta(8, 3, 3, 3), groups=4)
    with pytest.raises(ValueError, match=r"x has 8 channels but weight expects 5 "
                                         r"\(weight.shape\[1\] = 5 channels per group x "
                                         r"groups=1\)"):
        ct.conv2d(x, meta(8, 5, 3, 3))
    with pytest.raises(ValueError, match=r"x has 8 channels but weight expects 16"):
        ct.conv2d(x, meta(8, 8, 3, 3), groups=2)  # F.conv2d's weight, groups=1's
    # groups itself: an integer >= 1 (a NumPy one too, as F.conv2d takes).
    for bad in (0, -2, 2.0, "2", None, True):
        with pytest.raises(ValueError, match="groups must be an integer >= 1"):
            ct.conv2d(x, meta(8, 4, 3, 3), groups=bad)
    np = pytest.importorskip("numpy")
    assert ct.conv2d(x, meta(8, 4, 3, 3), groups=np.int64(2)).shape == (2, 8, 14, 14)
    # The same checks at the op (the fake implementation) and in explain.
    with pytest.raises(ValueError, match="groups=3 does not divide"):
        torch.ops.convtune.conv2d(x, meta(8, 8, 3, 3), None, [1, 1], [0, 0], [1, 1], "auto",
                                  groups=3)
    with pytest.raises(ValueError, match="groups must be an integer >= 1, not 0"):
        torch.ops.convtune.conv2d(x, meta(8, 8, 3, 3), None, [1, 1], [0, 0], [1, 1], "auto",
                                  groups=0)
    with pytest.raises(ValueError, match="x has 8 channels but weight expects 4"):
        ct.explain(x, meta(8, 2, 3, 3), groups=2)


def test_traces_in_torch_compile_fullgraph():
    def f(x, w, b):
        return torch.relu(ct.conv2d(x, w, b, stride=2, padding=1)) + 1

    x, w, b = meta(2, 3, 20, 20), meta(8, 3, 3, 3), meta(8)
    y = torch.compile(f, fullgraph=True, backend="aot_eager")(x, w, b)
    assert y.shape == (2, 8, 10, 10)

    def depthwise(x, w, b):
        return ct.conv2d(x, w, b, stride=2, padding=1, groups=16, act="relu") + 1

    y = torch.compile(depthwise, fullgraph=True, backend="aot_eager")(
        meta(2, 16, 20, 20), meta(16, 1, 3, 3), meta(16))
    assert y.shape == (2, 16, 10, 10)

    # groups from the input's shape, traced with dynamic shapes (a SymInt).
    def by_shape(x, w):
        return ct.conv2d(x, w, padding=1, groups=x.shape[1])

    compiled = torch.compile(by_shape, fullgraph=True, dynamic=True, backend="aot_eager")
    assert compiled(meta(2, 16, 20, 20), meta(16, 1, 3, 3)).shape == (2, 16, 20, 20)
    assert compiled(meta(3, 24, 9, 7), meta(24, 1, 3, 3)).shape == (3, 24, 9, 7)


def test_op_registration():
    x, w, b = meta(2, 3, 20, 20), meta(8, 3, 3, 3), meta(8)
    for bias in (b, None):
        for act in ((), ("relu",), ("relu6",)):
            result = torch.library.opcheck(torch.ops.convtune.conv2d.default,
                                           (x, w, bias, [1, 1], [1, 1], [1, 1], "auto") + act)
            assert all(v == "SUCCESS" for v in result.values()), result
    # Grouped (groups is the op's last argument), with a residual.
    x, w, r = meta(2, 8, 20, 20), meta(12, 2, 3, 3), meta(2, 12, 20, 20)
    result = torch.library.opcheck(torch.ops.convtune.conv2d.default,
                                   (x, w, meta(12), [1, 1], [1, 1], [1, 1], "auto", "relu", r,
                                    4))
    assert all(v == "SUCCESS" for v in result.values()), result


def test_backward_shapes_on_meta():
    x = torch.empty(2, 3, 20, 20, device="meta", requires_grad=True)
    w = torch.empty(8, 3, 3, 3, device="meta", requires_grad=True)
    b = torch.empty(8, device="meta", requires_grad=True)
    ct.conv2d(x, w, b, stride=2, padding=1).sum().backward()
    assert x.grad.shape == x.shape and w.grad.shape == w.shape and b.grad.shape == b.shape
    x.grad = w.grad = b.grad = None
    ct.conv2d(x, w, b, stride=2, padding=1, act="relu").sum().backward()
    assert x.grad.shape == x.shape and w.grad.shape == w.shape and b.grad.shape == b.shape
    # Grouped: the backward pass is convolution_backward with the same groups.
    x = torch.empty(2, 8, 20, 20, device="meta", requires_grad=True)
    w = torch.empty(16, 2, 3, 3, device="meta", requires_grad=True)
    ct.conv2d(x, w, None, padding=1, groups=4).sum().backward()
    assert x.grad.shape == x.shape and w.grad.shape == w.shape


def test_grouped_backward_matches_f_conv2d():
    """The op's backward (torch's convolution_backward with the op's groups)
    on CPU tensors: the same gradients as F.conv2d's, in float64."""
    x = torch.randn(2, 6, 9, 8, dtype=torch.float64, requires_grad=True)
    w = torch.randn(9, 2, 3, 3, dtype=torch.float64, requires_grad=True)
    b = torch.randn(9, dtype=torch.float64, requires_grad=True)
    y = F.conv2d(x, w, b, 2, 1, 1, 3)
    g = torch.randn_like(y)
    want = torch.autograd.grad(y, (x, w, b), g)

    class Ctx:  # what autograd gives _setup_context and _backward
        needs_input_grad = (True, True, True) + (False,) * 7

        def save_for_backward(self, *tensors):
            self.saved_tensors = tensors

    ctx = Ctx()
    inputs = (x.detach(), w.detach(), b.detach(), [2, 2], [1, 1], [1, 1], "fp32", "none",
              None, 3)
    ct._setup_context(ctx, inputs, y.detach())
    got = ct._backward(ctx, g)
    assert len(got) == len(inputs)
    for a, e in zip(got[:3], want):
        assert torch.allclose(a, e, rtol=1e-10, atol=1e-10)


def test_activation_backward_matches_torch():
    """The op's backward through act="relu" and act="relu6" (from its
    saved output): torch's relu / relu6 gradients, in float64, with outputs
    below 0, between 0 and 6 and above 6."""
    torch.manual_seed(3)
    x = (8 * torch.randn(2, 4, 7, 6, dtype=torch.float64)).requires_grad_()
    w = torch.randn(5, 4, 3, 3, dtype=torch.float64, requires_grad=True)
    b = torch.randn(5, dtype=torch.float64, requires_grad=True)

    class Ctx:
        needs_input_grad = (True, True, True) + (False,) * 7

        def save_for_backward(self, *tensors):
            self.saved_tensors = tensors

    for act, fn in (("relu", torch.relu), ("relu6", F.relu6)):
        conv = F.conv2d(x, w, b, 1, 1)
        assert (conv < 0).any() and ((conv > 0) & (conv < 6)).any() and (conv > 6).any()
        y = fn(conv)
        g = torch.randn_like(y)
        want = torch.autograd.grad(y, (x, w, b), g)
        ctx = Ctx()
        ct._setup_context(ctx, (x.detach(), w.detach(), b.detach(), [1, 1], [1, 1], [1, 1],
                                "fp32", act, None, 1), y.detach())
        got = ct._backward(ctx, g)
        for a, e in zip(got[:3], want):
            assert torch.allclose(a, e, rtol=1e-10, atol=1e-10), act


def test_conv2d_module_is_a_drop_in():
    for kw in (dict(), dict(stride=4, padding=2), dict(bias=False, dilation=2),
               dict(padding="same")):
        torch.manual_seed(7)
        ref = nn.Conv2d(3, 16, 5, **kw)
        torch.manual_seed(7)
        mine = ct.Conv2d(3, 16, 5, **kw)
        assert isinstance(mine, nn.Conv2d)
        assert list(mine.state_dict()) == list(ref.state_dict())
        for k, v in ref.state_dict().items():
            assert torch.equal(mine.state_dict()[k], v), k
        mine.load_state_dict(ref.state_dict())
        conv = ct.Conv2d.from_module(ref, precision="fp32")
        assert conv.precision == "fp32" and conv.stride == ref.stride
        assert all(torch.equal(a, b) for a, b in zip(conv.parameters(), ref.parameters()))
        assert "precision='fp32'" in repr(conv)
    m = ct.Conv2d(3, 16, 3, padding=1, device="meta")
    assert m(meta(2, 3, 8, 8)).shape == (2, 16, 8, 8)


@pytest.mark.parametrize("c,k,groups", [(8, 12, 4), (16, 16, 16), (16, 32, 16)])
def test_grouped_conv2d_module_is_a_drop_in(c, k, groups):
    torch.manual_seed(7)
    ref = nn.Conv2d(c, k, 3, stride=2, padding=1, groups=groups)
    torch.manual_seed(7)
    mine = ct.Conv2d(c, k, 3, stride=2, padding=1, groups=groups, act="relu")
    assert mine.groups == groups and mine.weight.shape == (k, c // groups, 3, 3)
    for key, v in ref.state_dict().items():
        assert torch.equal(mine.state_dict()[key], v), key
    conv = ct.Conv2d.from_module(ref, precision="fp32")
    assert conv.groups == groups and torch.equal(conv.weight, ref.weight)
    assert "groups=%d" % groups in repr(conv)
    m = ct.Conv2d(c, k, 3, padding=1, groups=groups, device="meta")
    assert m(meta(2, c, 8, 8)).shape == (2, k, 8, 8)
    assert m(meta(2, c, 8, 8), meta(2, k, 8, 8)).shape == (2, k, 8, 8)  # a residual


@pytest.mark.parametrize("kw,needle", [
    (dict(padding_mode="reflect"), "padding_mode"),
    (dict(dtype=torch.float64), "float64"),
])
def test_conv2d_module_refuses_at_construction(kw, needle):
    with pytest.raises(ct.UnsupportedError, match=needle):
        ct.Conv2d(3, 6, 3, **kw)
    with pytest.raises(ct.UnsupportedError, match=needle):
        ct.Conv2d.from_module(nn.Conv2d(3, 6, 3, **kw))


def test_conv2d_module_on_cpu_says_why():
    m = ct.Conv2d(3, 8, 3)
    with pytest.raises(ct.UnsupportedError, match="CUDA tensors only"):
        m(torch.randn(1, 3, 8, 8))


def test_eager_inference_skips_the_op_dispatch_only_when_nothing_needs_it():
    x, w, b = torch.randn(2, 3, 8, 8), nn.Parameter(torch.randn(4, 3, 3, 3)), torch.randn(4)
    with torch.no_grad():
        assert not ct._needs_op(x, w, b)
        assert not ct._needs_op(x, w, None)
    # autograd must record the call
    assert ct._needs_op(x, w, b)
    assert not ct._needs_op(x, w.detach(), b)
    assert ct._needs_op(x.requires_grad_(), w.detach(), None)
    x = x.detach()
    with torch.no_grad():
        # the profiler shows convtune::conv2d
        with torch.autograd.profiler.profile():
            assert ct._needs_op(x, w, b)
        # modes and tensor subclasses see the op
        with torch.device("cpu"):
            assert ct._needs_op(x, w, b)

        class Mode(torch.utils._python_dispatch.TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                return func(*args, **(kwargs or {}))

        with Mode():
            assert ct._needs_op(x, w, b)
        from torch._subclasses.fake_tensor import FakeTensorMode
        with FakeTensorMode(allow_non_fake_inputs=True):
            fx = torch.empty(2, 3, 8, 8)
        assert ct._needs_op(fx, w, b)
        torch.func.vmap(lambda a: (_assert(ct._needs_op(a, w, b)), a)[1])(
            torch.randn(3, 2, 3, 8, 8))
        # torch.compile and torch.jit.trace trace the op
        traced = torch.compile(lambda t: t + ct._needs_op(t, w, b), backend="eager")
        assert traced(x).eq(x + 1).all()
        seen = []
        torch.jit.trace(lambda t: (seen.append(ct._needs_op(t, w, b)), t + 1)[1], x,
                        check_trace=False)
        assert seen and all(seen)
        assert not ct._needs_op(x, w, b)


def _assert(cond):
    assert cond


def test_channels_last_runs_nhwc():
    x = meta(2, 8, 20, 22).to(memory_format=torch.channels_last)
    for w in (meta(4, 8, 3, 3), meta(4, 8, 3, 3).to(memory_format=torch.channels_last)):
        y = ct.conv2d(x, w, meta(4), padding=1)
        assert y.shape == (2, 4, 20, 22)
        assert y.is_contiguous(memory_format=torch.channels_last) and not y.is_contiguous()
    # NCHW in, NCHW out, whatever the weight's memory format.
    y = ct.conv2d(meta(2, 8, 20, 22), meta(4, 8, 3, 3).to(memory_format=torch.channels_last))
    assert y.is_contiguous()
    assert ct._weight_in(torch.randn(4, 8, 3, 3), "nhwc").is_contiguous(
        memory_format=torch.channels_last)
    w = torch.randn(4, 8, 3, 3)
    assert ct._weight_in(w, "nchw") is w


def test_from_module_keeps_a_channels_last_weight():
    conv = nn.Conv2d(8, 4, 3).to(memory_format=torch.channels_last)
    new = ct.Conv2d.from_module(conv)
    assert new.weight.is_contiguous(memory_format=torch.channels_last)
    assert torch.equal(new.weight, conv.weight)
    assert ct.Conv2d.from_module(nn.Conv2d(8, 4, 3)).weight.is_contiguous()


def test_list_names_fit_the_readers_bytes():
    """collect's names are cut to the list reader's 63 bytes on a
    character's boundary, whatever the characters."""
    for name in ("layer1.0.conv1", "a" * 80, "\u00e9" * 40, "x" + "\U0001F600" * 20):
        cut = ct._list_name(name)
        assert len(cut.encode("utf-8")) <= ct._NAME_MAX and name.startswith(cut)
    assert ct._list_name("layer1.0.conv1") == "layer1.0.conv1"
    assert ct._list_name("\U0001F600" * 20) == "\U0001F600" * 15  # 60 bytes, not a cut character
