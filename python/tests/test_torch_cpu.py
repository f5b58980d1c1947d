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


@pytest.mark.parametrize("make,needle", [
    (lambda x, w: ct.conv2d(x, w, groups=3), "groups=3"),
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


def test_traces_in_torch_compile_fullgraph():
    def f(x, w, b):
        return torch.relu(ct.conv2d(x, w, b, stride=2, padding=1)) + 1

    x, w, b = meta(2, 3, 20, 20), meta(8, 3, 3, 3), meta(8)
    y = torch.compile(f, fullgraph=True, backend="aot_eager")(x, w, b)
    assert y.shape == (2, 8, 10, 10)


def test_op_registration():
    x, w, b = meta(2, 3, 20, 20), meta(8, 3, 3, 3), meta(8)
    for bias in (b, None):
        for act in ((), ("relu",)):
            result = torch.library.opcheck(torch.ops.convtune.conv2d.default,
                                           (x, w, bias, [1, 1], [1, 1], [1, 1], "auto") + act)
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


@pytest.mark.parametrize("kw,needle", [
    (dict(groups=3), "groups=3"),
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
