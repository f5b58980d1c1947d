"""convtune.torch.collect, tune and patch without a GPU: the problems a
forward pass runs (specs, call counts, names, weights), the convolutions
convtune cannot run and why, the list `convtune tune --problems` reads,
tune() through the CLI on the tuner's fake GPU, and what patch() replaces,
folds and reports, with the folded weights checked in float64.  Skipped
where torch is not installed."""

import copy
import json
import os
import subprocess
import warnings

import pytest

torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import convtune.torch as ct  # noqa: E402


class Net(nn.Module):
    """Four problems (b runs twice; a grouped conv; pairs of strides,
    paddings and dilations), an asymmetric 'same' padding and a float64
    conv."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 16, 3, padding=1)
        self.b = nn.Conv2d(16, 16, 3, padding=1, bias=False)
        self.grouped = nn.Conv2d(16, 16, 3, padding=1, groups=4)
        self.even_same = nn.Conv2d(16, 8, 4, padding="same")
        self.f64 = nn.Conv2d(16, 4, 1).double()
        self.pairs = nn.Conv2d(16, 8, (1, 3), stride=(2, 1), padding=(0, 2), dilation=(1, 2))

    def forward(self, x):
        x = self.b(self.b(self.a(x)))
        y = self.grouped(x) + self.even_same(x)[:, :1]
        z = self.f64(x.double()).float()
        return self.pairs(x), y, z


def specs(collected):
    return [p["spec"] for p in collected["problems"]]


def test_collect_problems_calls_and_skips():
    net = Net()
    got = ct.collect(net, torch.randn(2, 3, 20, 22), precision="fp32", grouped=True)
    assert got["precision"] == "fp32"
    assert specs(got) == [
        "n=2,c=3,h=20,w=22,k=16,r=3,s=3,stride=1,pad=1,dil=1,bias=1,prec=fp32",
        "n=2,c=16,h=20,w=22,k=16,r=3,s=3,stride=1,pad=1,dil=1,bias=0,prec=fp32",
        "n=2,c=16,h=20,w=22,k=16,r=3,s=3,stride=1,pad=1,dil=1,bias=1,prec=fp32,groups=4",
        "n=2,c=16,h=20,w=22,k=8,r=1,s=3,stride=2x1,pad=0x2,dil=1x2,bias=1,prec=fp32",
    ]
    a, b, grouped, pairs = got["problems"]
    assert (a["name"], a["calls"], a["modules"]) == ("a", 1, ["a"])
    assert (b["name"], b["calls"]) == ("b", 2)
    assert (grouped["name"], grouped["calls"]) == ("grouped", 1)
    assert pairs["name"] == "pairs"
    # weight = calls x GFLOP: b runs 2 x 2*2*16*20*22*16*9 flops; the
    # grouped conv's outputs each sum 16/4 channels.
    assert b["weight"] == pytest.approx(2 * 2 * 2 * 16 * 20 * 22 * 16 * 9 * 1e-9)
    assert grouped["weight"] == pytest.approx(2 * 2 * 16 * 20 * 22 * 4 * 9 * 1e-9)
    reasons = {s["name"]: s["reason"] for s in got["skipped"]}
    assert set(reasons) == {"even_same", "f64"}
    assert "asymmetric" in reasons["even_same"]
    assert "float64" in reasons["f64"]
    # Without grouped=True the grouped conv is left to PyTorch, saying so.
    plain = ct.collect(net, torch.randn(2, 3, 20, 22), precision="fp32")
    assert [p for p in specs(got) if ",groups=" not in p] == specs(plain)
    reasons = {s["name"]: s["reason"] for s in plain["skipped"]}
    assert set(reasons) == {"grouped", "even_same", "f64"}
    assert reasons["grouped"].startswith("groups=4: left to PyTorch") and \
        "grouped=True" in reasons["grouped"]
    # The hooks are gone after the pass.
    assert all(not m._forward_hooks for m in net.modules())


def test_collect_precision_auto_and_unbatched():
    conv = nn.Conv2d(4, 6, 3)
    old = torch.backends.cudnn.allow_tf32
    try:
        torch.backends.cudnn.allow_tf32 = False
        got = ct.collect(conv, torch.randn(4, 9, 9))
    finally:
        torch.backends.cudnn.allow_tf32 = old
    assert specs(got) == ["n=1,c=4,h=9,w=9,k=6,r=3,s=3,stride=1,pad=0,dil=1,bias=1,prec=fp32"]
    with pytest.raises(ValueError, match="precision"):
        ct.collect(conv, torch.randn(1, 4, 9, 9), precision="fp16")


def test_collect_leaves_the_model_as_it_was():
    net = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.Dropout(0.5))
    net.train()
    net[2].eval()  # a mixed state, restored as it was
    before = {k: v.clone() for k, v in net.state_dict().items()}
    got = ct.collect(net, torch.randn(2, 3, 8, 8) * 5 + 3)
    assert len(got["problems"]) == 1
    after = net.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)  # BN statistics kept
    assert [m.training for m in net] == [True, True, False] and net.training


def test_collect_hooks_removed_when_forward_raises():
    class Broken(nn.Module):
        def __init__(self):
            super().__init__()
            self.c = nn.Conv2d(2, 2, 1)

        def forward(self, x):
            self.c(x)
            raise RuntimeError("boom")

    net = Broken()
    with pytest.raises(RuntimeError, match="boom"):
        ct.collect(net, torch.randn(1, 2, 4, 4), fold_bn=False, fuse_relu=False,
                   fuse_residual=False)
    assert not net.c._forward_hooks
    # Folding and fusing trace the model first, and say so when that fails.
    for flags in ({}, {"fold_bn": False}, {"fuse_relu": False}, {"fuse_residual": False}):
        with pytest.raises(ValueError, match="fold_bn=False, fuse_relu=False, fuse_residual=False"):
            ct.collect(net, torch.randn(1, 2, 4, 4), **flags)


def test_write_problems_is_a_tuner_list(tmp_path, lib):
    got = ct.collect(Net(), torch.randn(1, 3, 12, 12), precision="tf32")
    path = tmp_path / "net.json"
    ct.write_problems(got, str(path))
    data = json.loads(path.read_text())
    assert [p["spec"] for p in data["problems"]] == specs(got)
    cli = _cli()
    if cli is None:
        pytest.skip("no convtune command beside the library")
    # The tuner reads it: `db list --problems` names each problem.
    out = subprocess.run([cli, "db", "list", "--problems", str(path), "--db",
                          str(tmp_path / "none.db")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def _cli():
    try:
        return ct._find_cli(None)
    except FileNotFoundError:
        return None


def test_tune_through_the_cli_on_the_fake_gpu(tmp_path, monkeypatch, lib):
    cli = _cli()
    if cli is None:
        pytest.skip("no convtune command beside the library")
    monkeypatch.setenv("CONVTUNE_TEST_FAKE_GPU", "1")
    monkeypatch.setenv("CONVTUNE_TEST_FAKE_MS", "5")
    db = str(tmp_path / "t.db")
    net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 8, 1))
    opts = ("--families", "direct", "--max-variants", "2", "--final-trials", "2",
            "--finalists", "1", "--trials", "2")
    # Tuned into a database the library does not read: a warning says so.
    with pytest.warns(UserWarning, match=r"tuned into .*t\.db.*set_database\("):
        res = ct.tune(net, torch.randn(1, 3, 10, 10), precision="fp32", db=db, quiet=True,
                      args=opts)
    rows = res["result"]["problems"]
    assert len(rows) == 2
    assert all(r["status"] == "tuned" for r in rows), rows
    assert all(r["winner"].startswith("direct:") for r in rows)
    # A rerun skips both; into the database the library reads, no warning
    # (that of set_database(), or the default one).
    monkeypatch.setitem(ct._state, "db", db)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = ct.tune(net, torch.randn(1, 3, 10, 10), precision="fp32", db=db, quiet=True,
                        args=opts)
        monkeypatch.setitem(ct._state, "db", None)
        monkeypatch.setenv("CONVTUNE_DB", db)
        ct.tune(net, torch.randn(1, 3, 10, 10), precision="fp32", db=db, quiet=True, args=opts)
    assert all(r["status"] == "skipped" for r in again["result"]["problems"])
    # A failing tuner raises with its status.
    with pytest.raises(ct.TuneError) as e:
        ct.tune(net, torch.randn(1, 3, 10, 10), db=db, quiet=True, args=("--no-such-option",))
    assert e.value.returncode != 0
    assert os.path.exists(db)


def test_tune_grouped_problems_on_the_fake_gpu(tmp_path, monkeypatch, lib):
    """A depthwise and a grouped convolution tune with every family offered
    (no --families): direct runs groups, dw depthwise ones, so those are
    the winners."""
    cli = _cli()
    if cli is None:
        pytest.skip("no convtune command beside the library")
    monkeypatch.setenv("CONVTUNE_TEST_FAKE_GPU", "1")
    monkeypatch.setenv("CONVTUNE_TEST_FAKE_MS", "5")
    net = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1, groups=8),
                        nn.Conv2d(8, 16, 3, padding=1, groups=2))
    with pytest.warns(UserWarning, match="set_database"):
        res = ct.tune(net, torch.randn(1, 8, 10, 10), precision="tf32", grouped=True,
                      db=str(tmp_path / "t.db"), quiet=True,
                      args=("--max-variants", "2", "--final-trials", "2", "--finalists", "1",
                            "--trials", "2"))
    rows = res["result"]["problems"]
    assert [r["problem"].rpartition(",")[2] for r in rows] == ["groups=8", "groups=2"]
    assert all(r["status"] == "tuned" for r in rows), rows
    # The depthwise problem has dw too; the other, direct alone.
    assert rows[0]["winner"].split(":")[0] in ("direct", "dw")  # NCHW: not dwc
    assert rows[1]["winner"].startswith("direct:"), rows


def test_tune_without_a_cli(monkeypatch, lib):
    monkeypatch.setenv("CONVTUNE_CLI", "/nonexistent/convtune")
    with pytest.raises(FileNotFoundError, match="CONVTUNE_CLI"):
        ct.tune(nn.Conv2d(1, 1, 1), torch.randn(1, 1, 4, 4), quiet=True)
    with pytest.raises(FileNotFoundError, match="cli=/nonexistent/ct"):
        ct.tune(nn.Conv2d(1, 1, 1), torch.randn(1, 1, 4, 4), cli="/nonexistent/ct")
    # A model with no convolution convtune runs tunes nothing.
    res = ct.tune(nn.Conv2d(2, 2, 3, padding=1, padding_mode="reflect"),
                  torch.randn(1, 2, 4, 4))
    assert res["result"]["problems"] == [] and len(res["collected"]["skipped"]) == 1


# -------------------------------------------------------------------------
# patch (without a GPU: what is replaced, the report, the folded weights)

class ConvBN(nn.Module):
    """conv1 -> bn1 -> relu (folded, fused); conv2 used twice then bn2 (not folded:
    two call sites); a grouped conv (replaced, its groups kept); conv3 -> bn3
    with conv3's output also used elsewhere (not folded)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 1)
        self.bn2 = nn.BatchNorm2d(8)
        self.grouped = nn.Conv2d(8, 8, 3, padding=1, groups=2)
        self.conv3 = nn.Conv2d(8, 8, 3, padding=1)
        self.bn3 = nn.BatchNorm2d(8)

    def forward(self, x):
        x = torch.relu(self.bn1(self.conv1(x)))
        x = self.bn2(self.conv2(self.conv2(x)))
        x = self.grouped(x)
        y = self.conv3(x)
        return self.bn3(y) + y


def _randomize_bn(net):
    g = torch.Generator().manual_seed(7)
    for m in net.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=g))
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            m.weight.data.copy_(torch.randn(m.num_features, generator=g))
            m.bias.data.copy_(torch.randn(m.num_features, generator=g))
    return net


def test_patch_replaces_folds_and_reports(lib):
    net = _randomize_bn(ConvBN()).eval()
    before = {k: v.clone() for k, v in net.state_dict().items()}
    patched, report = ct.patch(net, precision="fp32", grouped=True)
    # The model passed in is untouched.
    assert all(torch.equal(before[k], v) for k, v in net.state_dict().items())
    assert all(type(m) is not ct.Conv2d for m in net.modules())
    replaced = {r["name"]: r["folded_bn"] for r in report["replaced"]}
    assert replaced == {"conv1": "bn1", "conv2": None, "grouped": None, "conv3": None}
    assert {r["name"]: r["fused_relu"] for r in report["replaced"]} == \
        {"conv1": "relu", "conv2": None, "grouped": None, "conv3": None}
    assert [patched.get_submodule(n).act for n in replaced] == ["relu", "none", "none", "none"]
    assert report["left"] == []
    for name in replaced:
        m = patched.get_submodule(name)
        assert type(m) is ct.Conv2d and m.precision == "fp32" and not m.training
    assert patched.grouped.groups == 2 and torch.equal(patched.grouped.weight, net.grouped.weight)
    assert not hasattr(patched, "bn1")            # folded away
    assert isinstance(patched.bn2, nn.BatchNorm2d) and isinstance(patched.bn3, nn.BatchNorm2d)
    # Without grouped=True the grouped conv stays PyTorch's, saying so.
    kept, report = ct.patch(net, precision="fp32")
    assert [r["name"] for r in report["replaced"]] == ["conv1", "conv2", "conv3"]
    assert [r["name"] for r in report["left"]] == ["grouped"]
    assert "grouped=True" in report["left"][0]["reason"]
    assert type(kept.grouped) is nn.Conv2d
    # The folded convolution computes bn1(conv1(x)), in float64.
    x = torch.randn(2, 3, 9, 11, dtype=torch.float64)
    c1 = patched.conv1
    got = torch.nn.functional.conv2d(x, c1.weight.double(), c1.bias.double(), padding=1)
    want = net.bn1.double()(net.conv1.double()(x))
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-6)


def test_patch_training_mode_and_no_fold(lib):
    net = _randomize_bn(ConvBN()).train()
    patched, report = ct.patch(net)
    assert report["replaced"] == []
    assert {r["name"] for r in report["left"]} == {"conv1", "conv2", "grouped", "conv3"}
    assert all("training mode" in r["reason"] for r in report["left"])
    # Without folding, in place: the modules are swapped where they stand.
    net.eval()
    same, report = ct.patch(net, fold_bn=False, fuse_relu=False, fuse_residual=False,
                            grouped=True, inplace=True)
    assert same is net and type(net.conv1) is ct.Conv2d and isinstance(net.bn1, nn.BatchNorm2d)
    assert [r["folded_bn"] for r in report["replaced"]] == [None] * 4
    assert type(net.grouped) is ct.Conv2d and net.grouped.groups == 2
    # A lone convolution becomes a Conv2d; an unsupported one stays.
    lone, report = ct.patch(nn.Conv2d(3, 4, 3).eval())
    assert type(lone) is ct.Conv2d and report["replaced"] == [
        {"name": "", "folded_bn": None, "fused_relu": None, "fused_residual": None}]
    odd, report = ct.patch(nn.Conv2d(4, 4, 4, padding="same").eval())
    assert type(odd) is nn.Conv2d and "asymmetric" in report["left"][0]["reason"]
    with pytest.raises(ValueError, match="precision"):
        ct.patch(nn.Conv2d(3, 4, 3), precision="bf16")


def test_patch_untraceable_model(lib):
    class Branchy(nn.Module):
        def __init__(self):
            super().__init__()
            self.c = nn.Conv2d(2, 2, 1)
            self.bn = nn.BatchNorm2d(2)

        def forward(self, x):
            if x.sum() > 0:  # data-dependent control flow: torch.fx cannot trace it
                return self.bn(self.c(x))
            return x

    net = Branchy().eval()
    with pytest.raises(ValueError, match="fold_bn=False, fuse_relu=False, fuse_residual=False"):
        ct.patch(net)
    patched, report = ct.patch(net, fold_bn=False, fuse_relu=False, fuse_residual=False)
    assert type(patched.c) is ct.Conv2d and report["left"] == []


class _Tied(nn.Module):
    """conv's weight is also read directly: folding would change that use."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, bias=False)
        self.bn = nn.BatchNorm2d(4)

    def forward(self, x):
        return self.bn(self.conv(x)) + torch.nn.functional.conv2d(x, self.conv.weight)


class _StdConv(nn.Conv2d):
    """A subclass with its own forward (weight standardisation)."""

    def forward(self, x):
        w = self.weight
        w = (w - w.mean(dim=(1, 2, 3), keepdim=True)) / (w.std(dim=(1, 2, 3), keepdim=True) + 1e-5)
        return self._conv_forward(x, w, self.bias)


class _Mixed(nn.Module):
    def __init__(self):
        super().__init__()
        self.std = _StdConv(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.hooked = nn.Conv2d(4, 4, 1)
        self.normed = torch.nn.utils.parametrizations.weight_norm(nn.Conv2d(4, 4, 1))
        self.unused = nn.Conv2d(4, 4, 1)
        self.hooked.register_forward_hook(lambda m, a, o: o * 2)

    def forward(self, x):
        return self.normed(self.hooked(self.bn(self.std(x))))


def test_patch_leaves_what_it_cannot_replace_faithfully(lib):
    # A weight read elsewhere: not folded (the conv is still replaced).
    tied = _randomize_bn(_Tied()).eval()
    patched, report = ct.patch(tied)
    assert report["replaced"] == [{"name": "conv", "folded_bn": None, "fused_relu": None,
                                   "fused_residual": None}]
    assert isinstance(patched.bn, nn.BatchNorm2d)
    # Subclasses, hooks, parametrizations and unused convs stay PyTorch's,
    # with and without folding; the subclass's BatchNorm is not folded.
    for fold in (True, False):
        net = _randomize_bn(_Mixed()).eval()
        patched, report = ct.patch(net, fold_bn=fold, fuse_relu=fold, fuse_residual=fold)
        # Unused, it is dropped by the trace; else a plain conv, replaced.
        assert report["replaced"] == ([] if fold else [{"name": "unused", "folded_bn": None,
                                                        "fused_relu": None,
                                                        "fused_residual": None}])
        reasons = {r["name"]: r["reason"] for r in report["left"]}
        assert "subclasses nn.Conv2d" in reasons["std"]
        assert "forward hooks" in reasons["hooked"]
        assert "parametrized" in reasons["normed"]
        if fold:
            assert "never calls it" in reasons["unused"]
            assert isinstance(patched.bn, nn.BatchNorm2d)
        assert all(type(m) is not ct.Conv2d for n, m in patched.named_modules() if n != "unused")
        x = torch.randn(2, 3, 8, 8)
        with torch.no_grad():
            assert torch.equal(patched(x), net(x))
    with pytest.raises(ValueError, match="inplace=True"):
        ct.patch(_randomize_bn(ConvBN()).eval(), inplace=True)


def test_collect_folds_as_patch_does(lib):
    net = _randomize_bn(ConvBN()).eval()
    x = torch.randn(1, 3, 12, 12)
    folded = ct.collect(net, x, precision="tf32")
    plain = ct.collect(net, x, precision="tf32", fold_bn=False, fuse_relu=False,
                       fuse_residual=False)
    # conv1 has no bias, but bn1 folds into it: bias=1 when folded; its
    # ReLU is fused: act=relu.
    assert folded["problems"][0]["spec"] == \
        plain["problems"][0]["spec"].replace("bias=0", "bias=1") + ",act=relu"
    assert [p["spec"] for p in folded["problems"][1:]] == \
        [p["spec"] for p in plain["problems"][1:]]
    # The model itself is not folded.
    assert isinstance(net.bn1, nn.BatchNorm2d) and net.conv1.bias is None


def test_collect_keyword_and_channels_last_inputs(lib):
    class Kw(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Conv2d(3, 4, 3)
            self.b = nn.Conv2d(4, 4, 1)

        def forward(self, x):
            y = self.a(input=x)
            z = self.b(y.contiguous(memory_format=torch.channels_last))
            return self.b(z[:, :, ::2])

    got = ct.collect(Kw(), torch.randn(2, 3, 9, 9), fold_bn=False, fuse_relu=False,
                     fuse_residual=False)
    # The strided view is the problem of the contiguous copy Conv2d makes.
    assert [(p["name"], p["spec"].endswith(",layout=nhwc"), p["spec"].split(",")[2:4])
            for p in got["problems"]] == \
        [("a", False, ["h=9", "w=9"]), ("b", True, ["h=7", "w=7"]),
         ("b", False, ["h=4", "w=7"])]
    assert got["skipped"] == []


def test_tune_argument_errors(monkeypatch, lib):
    net = nn.Conv2d(3, 4, 3)
    x = torch.randn(1, 3, 8, 8)
    with pytest.raises(ValueError, match="budget="):
        ct.tune(net, x, weighted=True)
    monkeypatch.setitem(ct._state, "db", "")
    with pytest.raises(ValueError, match="db=PATH"):
        ct.tune(net, x)


def test_tune_error_names_the_failed_problem(tmp_path, monkeypatch, lib):
    if _cli() is None:
        pytest.skip("no convtune command beside the library")
    monkeypatch.setenv("CONVTUNE_TEST_FAKE_GPU", "1")
    monkeypatch.setenv("CONVTUNE_TEST_FAKE_MS", "5")
    # gm is tf32 only: an fp32 tune limited to it has no variant.
    with pytest.raises(ct.TuneError) as e:
        ct.tune(nn.Conv2d(3, 4, 3), torch.randn(1, 3, 8, 8), precision="fp32",
                db=str(tmp_path / "t.db"), quiet=True, args=("--families", "gm"))
    assert e.value.returncode == 1
    assert e.value.result is not None
    assert "(its messages are above)" not in str(e.value)
    print(str(e.value))


class _Relus(nn.Module):
    """A ReLU after a convolution in each form patch() fuses (a shared
    nn.ReLU, F.relu in place after a folded BatchNorm, Tensor.relu_), and
    two it must leave: one whose convolution's output is used again, and a
    hooked nn.ReLU."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = nn.Conv2d(8, 8, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(8)
        self.c3 = nn.Conv2d(8, 8, 3, padding=1)
        self.c4 = nn.Conv2d(8, 8, 1)
        self.c5 = nn.Conv2d(8, 8, 1)
        self.relu = nn.ReLU(inplace=True)
        self.hooked = nn.ReLU()
        self.hooked.register_forward_hook(lambda m, a, o: o + 1)

    def forward(self, x):
        x = self.relu(self.c1(x))
        x = torch.nn.functional.relu(self.bn2(self.c2(x)), inplace=True)
        x = self.c3(x).relu_()
        y = self.c4(x)
        x = self.relu(y) + y
        return self.hooked(self.c5(x))


def _cpu_conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, *,
                precision="auto", act="none", residual=None):
    """What convtune.torch.conv2d computes, on the CPU (F.conv2d, plus the
    residual, then the activation act names)."""
    y = torch.nn.functional.conv2d(x, weight, bias, stride, padding, dilation, groups)
    if residual is not None:
        y = y + residual
    return {"none": y, "relu": torch.relu(y), "relu6": F.relu6(y)}[act]


class _Blocks(nn.Module):
    """Residual additions in each form patch() fuses: a block with a
    downsampling convolution (out += identity, then an nn.ReLU: in place
    into the downsample's output), a block whose identity is the block
    before's output (torch.add, then Tensor.relu: in place, b1 having read
    it before), one whose identity is the model's input (a + b with the
    convolution second: copied), one whose identity a view reads later
    (Tensor.add: copied) and a broadcast addition of a parameter (fused,
    but at run time torch adds it: residual=1 nowhere); and one it must
    leave: a convolution whose output is used twice."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(8, 8, 3, padding=1)
        self.a1 = nn.Conv2d(8, 8, 3, stride=2, padding=1)
        self.a2 = nn.Conv2d(8, 16, 1, bias=False)
        self.a_bn = nn.BatchNorm2d(16)
        self.down = nn.Conv2d(8, 16, 1, stride=2)
        self.down_bn = nn.BatchNorm2d(16)
        self.b1 = nn.Conv2d(16, 16, 3, padding=1)
        self.b2 = nn.Conv2d(16, 16, 1)
        self.relu = nn.ReLU(inplace=True)
        self.d = nn.Conv2d(16, 16, 1)
        self.e = nn.Conv2d(16, 16, 1)
        self.f = nn.Conv2d(16, 16, 1)
        self.g = nn.Conv2d(16, 16, 1)
        self.scale = nn.Parameter(torch.randn(16, 1, 1))

    def forward(self, x):
        head = x + self.c(x)
        out = self.a_bn(self.a2(torch.relu(self.a1(head))))
        identity = self.down_bn(self.down(head))
        out += identity
        out = self.relu(out)
        out = torch.add(self.b2(self.relu(self.b1(out))), out).relu()
        v = self.d(out)
        flat = v.flatten(1)
        out = self.e(out).add(v)
        twice = self.f(out)
        out = twice + twice
        return self.g(out) + self.scale, flat


def test_patch_fuses_residuals_and_computes_the_same(monkeypatch, lib):
    net = _randomize_bn(_Blocks()).eval()
    patched, report = ct.patch(net)  # fuse_residual is on by default
    fused = {r["name"]: r["fused_residual"] for r in report["replaced"]}
    assert fused == {"c": {"residual": "x", "inplace": False},
                     "a1": None,
                     "down": None,
                     "a2": {"residual": "down", "inplace": True},
                     "b1": None,
                     "b2": {"residual": "a2", "inplace": True},
                     "d": None,
                     "e": {"residual": "d", "inplace": False},
                     "f": None,
                     "g": {"residual": "scale", "inplace": False}}, fused
    relu = {r["name"]: r["fused_relu"] for r in report["replaced"]}
    assert relu["a2"] == "relu" and relu["b2"] == "relu" and relu["e"] is None
    assert [patched.get_submodule(n).residual_inplace for n in ("a2", "b2", "c", "e")] == \
        [True, True, False, False]
    assert "residual_inplace=True" in repr(patched.a2)
    adds = [n for n in patched.graph.nodes if ct._add_operands(n) is not None]
    assert len(adds) == 1  # twice + twice
    _kernel_on_cpu(monkeypatch)
    x = torch.randn(2, 8, 12, 10)
    with torch.no_grad():
        want = net(x)
        got = patched(x)
    assert all(torch.allclose(g, w, rtol=1e-4, atol=1e-5) for g, w in zip(got, want))
    # With fuse_residual=False the additions stay.
    kept, report = ct.patch(net, fuse_residual=False)
    assert all(r["fused_residual"] is None for r in report["replaced"])
    with torch.no_grad():
        assert all(torch.allclose(g, w, rtol=1e-4, atol=1e-5) for g, w in zip(kept(x), want))


def _kernel_on_cpu(monkeypatch):
    """Patched models run on the CPU as the kernels compute: conv2d as
    _cpu_conv2d, and a Conv2d's call with a residual as act(conv + b + r),
    written into r itself where residual_inplace (as the GPU path does),
    so that a wrong in-place decision shows in the output."""
    monkeypatch.setattr(ct, "conv2d", _cpu_conv2d)
    forward = ct.Conv2d.forward

    def forward_residual(self, x, residual=None):
        if residual is None or not ct._takes_residual(self, x, residual):
            return forward(self, x, residual)
        y = _cpu_conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation,
                        self.groups, act=self.act, residual=residual)
        if self.residual_inplace:
            residual.copy_(y)
            return residual
        return y

    monkeypatch.setattr(ct.Conv2d, "forward", forward_residual)


class _Traps(nn.Module):
    """Additions patch() must not fuse as they stand, or not in place: a
    ReLU before the addition (relu(conv) + x), an in-place addition into
    another tensor than the convolution's (a.add_(conv)), a convolution
    whose input is updated in place before the addition, a residual read
    by a convolution that a later fusion moves past another donation, and
    a residual whose convolution a hook keeps."""

    def __init__(self):
        super().__init__()
        self.c1, self.c2, self.c3 = (nn.Conv2d(4, 4, 3, padding=1) for _ in range(3))
        self.a, self.b, self.c = (nn.Conv2d(4, 4, 1) for _ in range(3))
        self.d, self.e = nn.Conv2d(4, 4, 1), nn.Conv2d(4, 4, 1)
        self.h, self.k = nn.Conv2d(4, 4, 1), nn.Conv2d(4, 4, 1)
        self.kept = []
        self.h.register_forward_hook(lambda m, args, out: self.kept.append(out))
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        y = torch.nn.functional.relu(self.c1(x)) + x
        t = self.c2(y)
        t.add_(self.c3(y))
        a = self.a(t)
        b = self.b(a)
        c = self.c(t)
        z = b + (c + a)
        h0 = self.d(z)
        out = self.e(h0)
        h0 = self.relu(h0)
        z = out + h0
        hk = self.h(z)
        return self.k(z) + hk


def test_patch_residual_traps(monkeypatch, lib):
    net = _Traps().eval()
    patched, report = ct.patch(net, fuse_residual=True)
    fused = {r["name"]: r["fused_residual"] for r in report["replaced"]}
    relu = {r["name"]: r["fused_relu"] for r in report["replaced"]}
    assert relu["c1"] == "relu" and fused["c1"] is None  # relu(conv) + x stays an addition
    assert fused["c3"] is None  # t.add_(c3(y)) updates t, not c3's output
    assert fused["e"] is None  # its input is updated in place before the addition
    assert fused["k"] == {"residual": "h", "inplace": False}  # the hook keeps h's output
    assert fused["b"] is not None and fused["c"] is not None
    # c (moved to c + a) and b (moved to b + ...) both read a's output; the one
    # that runs first may not overwrite it.
    assert not (fused["c"]["inplace"] and fused["c"]["residual"] == "a")
    _kernel_on_cpu(monkeypatch)
    x = torch.randn(2, 4, 9, 7)
    with torch.no_grad():
        want = net(x)
        net.kept.clear()
        got = patched(x)
    assert torch.allclose(got, want, rtol=1e-4, atol=1e-5), float((got - want).abs().max())


def test_collect_fuses_residuals_as_patch_does(lib):
    net = _randomize_bn(_Blocks()).eval()
    got = ct.collect(net, torch.randn(2, 8, 12, 10), precision="fp32")  # fused by default
    res = {m: p["spec"] for p in got["problems"] for m in p["modules"]}
    assert res["a2"].endswith(",act=relu,residual=1")
    assert res["b2"].endswith(",act=relu,residual=1")
    assert res["e"].endswith(",residual=1") and "act=" not in res["e"]
    assert not res["g"].endswith("residual=1")  # a broadcast: torch adds it
    assert not res["down"].endswith("residual=1") and not res["f"].endswith("residual=1")
    plain = ct.collect(net, torch.randn(2, 8, 12, 10), precision="fp32", fuse_residual=False)
    assert not any("residual=" in p["spec"] for p in plain["problems"])


def test_patch_fuses_relus_and_computes_the_same(monkeypatch, lib):
    net = _randomize_bn(_Relus()).eval()
    patched, report = ct.patch(net)
    fused = {r["name"]: r["fused_relu"] for r in report["replaced"]}
    assert fused == {"c1": "relu", "c2": "relu", "c3": "relu", "c4": None, "c5": None}
    assert {r["name"]: r["folded_bn"] for r in report["replaced"]}["c2"] == "bn2"
    assert [patched.get_submodule(n).act for n in fused] == ["relu"] * 3 + ["none"] * 2
    assert "act='relu'" in repr(patched.c1)
    # Two ReLUs stay in the graph: c4's (its output is used again) and the hooked one.
    relus = [n for n in patched.graph.nodes
             if n.op == "call_module" and isinstance(patched.get_submodule(n.target), nn.ReLU)]
    assert [n.target for n in relus] == ["relu", "hooked"]
    monkeypatch.setattr(ct, "conv2d", _cpu_conv2d)
    x = torch.randn(2, 3, 10, 12)
    with torch.no_grad():
        assert torch.allclose(patched(x), net(x), rtol=1e-4, atol=1e-5)
    # Without fuse_relu the convolutions keep act="none" and the ReLUs stay.
    kept, report = ct.patch(net, fuse_relu=False)
    assert all(r["fused_relu"] is None for r in report["replaced"])
    assert all(m.act == "none" for m in kept.modules() if isinstance(m, ct.Conv2d))
    with torch.no_grad():
        assert torch.allclose(kept(x), net(x), rtol=1e-4, atol=1e-5)


class _Relu6s(nn.Module):
    """A ReLU6 after a convolution in each form patch() fuses (nn.ReLU6
    in place, F.relu6, nn.Hardtanh(0, 6), F.hardtanh(x, 0, 6),
    torch.clamp(x, 0, 6), Tensor.clamp(min=0, max=6)), two clamps it fuses
    as a ReLU (torch.clip(x, min=0), Tensor.clamp_(0)), and four it must
    leave: nn.Hardtanh() (bounds -1 and 1), F.hardtanh(x, 0, 5),
    torch.clamp(x, max=6), Tensor.clamp(0.5, 6).  The outputs are scaled by
    4 after each so that the convolutions' sums pass 6."""

    def __init__(self):
        super().__init__()
        for i in range(12):
            setattr(self, "c%d" % i, nn.Conv2d(3 if i == 0 else 8, 8, 3, padding=1))
        self.r6 = nn.ReLU6(inplace=True)
        self.ht = nn.Hardtanh(0.0, 6.0)
        self.unit = nn.Hardtanh()

    def forward(self, x):
        x = self.r6(self.c0(x)) * 4
        x = F.relu6(self.c1(x)) * 4
        x = self.ht(self.c2(x)) * 4
        x = F.hardtanh(self.c3(x), 0.0, 6.0) * 4
        x = torch.clamp(self.c4(x), 0, 6) * 4
        x = self.c5(x).clamp(min=0, max=6) * 4
        x = torch.clip(self.c6(x), min=0)
        x = self.c7(x).clamp_(0)
        x = self.unit(self.c8(x)) * 4
        x = F.hardtanh(self.c9(x), 0, 5) * 4
        x = torch.clamp(self.c10(x), max=6)
        return self.c11(x).clamp(0.5, 6)


def test_patch_fuses_relu6_forms_and_computes_the_same(monkeypatch, lib):
    torch.manual_seed(6)
    net = _Relu6s().eval()
    patched, report = ct.patch(net)
    fused = {r["name"]: r["fused_relu"] for r in report["replaced"]}
    assert fused == {"c0": "r6", "c1": "relu6", "c2": "ht", "c3": "relu6", "c4": "relu6",
                     "c5": "relu6", "c6": "relu", "c7": "relu", "c8": None, "c9": None,
                     "c10": None, "c11": None}, fused
    assert [patched.get_submodule("c%d" % i).act for i in range(12)] == \
        ["relu6"] * 6 + ["relu"] * 2 + ["none"] * 4
    assert "act='relu6'" in repr(patched.c0)
    monkeypatch.setattr(ct, "conv2d", _cpu_conv2d)
    x = 4 * torch.randn(2, 3, 9, 11)
    seen = []
    handles = [getattr(net, "c%d" % i).register_forward_hook(
        lambda m, a, o: seen.append(bool((o > 6).any()))) for i in range(6)]
    with torch.no_grad():
        want = net(x)
        assert torch.allclose(patched(x), want, rtol=1e-4, atol=1e-5)
    assert all(seen) and len(seen) == 6  # each fused ReLU6 clamps outputs above 6
    for h in handles:
        h.remove()
    got = ct.collect(net, x, precision="fp32")
    acts = {m: p["spec"] for p in got["problems"] for m in p["modules"]}
    assert [acts["c%d" % i].endswith(",act=relu6") for i in range(12)] == [True] * 6 + [False] * 6
    assert acts["c6"].endswith(",act=relu") and "act=" not in acts["c8"]


def test_collect_fuses_as_patch_does(lib):
    net = _randomize_bn(_Relus()).eval()
    got = ct.collect(net, torch.randn(2, 3, 10, 12), precision="fp32")
    acts = {p["name"]: p["spec"].endswith(",act=relu") for p in got["problems"]}
    assert acts == {"c1": True, "c2": True, "c3": True, "c4": False}  # c5 has c4's problem
    assert got["problems"][-1]["modules"] == ["c4", "c5"]
    plain = ct.collect(net, torch.randn(2, 3, 10, 12), precision="fp32", fuse_relu=False)
    assert not any("act=" in p["spec"] for p in plain["problems"])


def test_channels_last_patch_and_collect_run_nhwc(monkeypatch, lib):
    net = _randomize_bn(_Relus()).eval()
    x = torch.randn(2, 3, 10, 12)
    got = ct.collect(net, x, precision="tf32", channels_last=True)
    assert got["problems"] and all(p["spec"].endswith(",layout=nhwc") for p in got["problems"])
    patched, _ = ct.patch(net, channels_last=True)
    assert all(m.weight.is_contiguous(memory_format=torch.channels_last)
               for m in patched.modules() if isinstance(m, ct.Conv2d))
    seen = []

    def cpu_conv2d(x, weight, *args, **kwargs):
        seen.append(x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous())
        return _cpu_conv2d(x, weight, *args, **kwargs)

    monkeypatch.setattr(ct, "conv2d", cpu_conv2d)
    with torch.no_grad():
        assert torch.allclose(patched(x), net(x), rtol=1e-4, atol=1e-5)
    assert len(seen) == 5 and all(seen)
    # The model passed in is left as it was.
    assert not net._forward_pre_hooks and net.c1.weight.is_contiguous()


class _Separable(nn.Module):
    """Grouped convolutions as MobileNets and ResNeXts have them: a
    depthwise 3x3 -> BN -> ReLU, then a 1x1 -> BN plus the block's input
    (an inverted residual); a depthwise 3x3 with a channel multiplier of 2
    (K = 2C, stride 2); a grouped 3x3 (groups=4) -> BN plus its own input,
    then a ReLU."""

    def __init__(self):
        super().__init__()
        self.dw = nn.Conv2d(16, 16, 3, padding=1, groups=16, bias=False)
        self.dw_bn = nn.BatchNorm2d(16)
        self.pw = nn.Conv2d(16, 16, 1, bias=False)
        self.pw_bn = nn.BatchNorm2d(16)
        self.mult = nn.Conv2d(16, 32, 3, stride=2, padding=1, groups=16)
        self.grouped = nn.Conv2d(32, 32, 3, padding=1, groups=4, bias=False)
        self.grouped_bn = nn.BatchNorm2d(32)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        y = self.relu(self.dw_bn(self.dw(x)))
        x = self.pw_bn(self.pw(y)) + x
        x = self.mult(x)
        return self.relu(self.grouped_bn(self.grouped(x)) + x)


SEPARABLE_SPECS = {
    "dw": "n=2,c=16,h=12,w=10,k=16,r=3,s=3,stride=1,pad=1,dil=1,bias=1,prec=fp32,act=relu"
          ",groups=16",
    "pw": "n=2,c=16,h=12,w=10,k=16,r=1,s=1,stride=1,pad=0,dil=1,bias=1,prec=fp32,residual=1",
    "mult": "n=2,c=16,h=12,w=10,k=32,r=3,s=3,stride=2,pad=1,dil=1,bias=1,prec=fp32,groups=16",
    "grouped": "n=2,c=32,h=6,w=5,k=32,r=3,s=3,stride=1,pad=1,dil=1,bias=1,prec=fp32,act=relu"
               ",residual=1,groups=4",
}


def test_collect_grouped_and_depthwise(lib):
    """Grouped and depthwise convolutions are problems like any other:
    ",groups=G" last in their spec (after act, layout and residual), their
    BatchNorms folded, ReLUs and additions fused; weight = calls x GFLOP
    with C/groups channels per output."""
    net = _randomize_bn(_Separable()).eval()
    x = torch.randn(2, 16, 12, 10)
    got = ct.collect(net, x, precision="fp32", fuse_residual=True, grouped=True)
    assert got["skipped"] == []
    assert {p["name"]: p["spec"] for p in got["problems"]} == SEPARABLE_SPECS
    weight = {p["name"]: p["weight"] for p in got["problems"]}
    assert weight["dw"] == pytest.approx(2 * 2 * 16 * 12 * 10 * 1 * 9 * 1e-9)
    assert weight["mult"] == pytest.approx(2 * 2 * 32 * 6 * 5 * 1 * 9 * 1e-9)
    assert weight["grouped"] == pytest.approx(2 * 2 * 32 * 6 * 5 * 8 * 9 * 1e-9)
    for p in got["problems"]:  # the library reads each spec back as it is
        assert lib.format(lib.parse(p["spec"])) == p["spec"]
    nhwc = ct.collect(net, x, precision="fp32", fuse_residual=True, grouped=True,
                      channels_last=True)
    assert {p["name"]: p["spec"] for p in nhwc["problems"]}["grouped"] == \
        SEPARABLE_SPECS["grouped"].replace(",residual=1", ",layout=nhwc,residual=1")
    plain = ct.collect(net, x, precision="fp32", fold_bn=False, fuse_relu=False, grouped=True)
    assert {p["name"]: p["spec"] for p in plain["problems"]}["dw"] == \
        "n=2,c=16,h=12,w=10,k=16,r=3,s=3,stride=1,pad=1,dil=1,bias=0,prec=fp32,groups=16"
    # By default the grouped convolutions are left to PyTorch, their
    # BatchNorms unfolded and their ReLUs unfused: the 1x1 alone is a
    # problem, its addition fused.
    default = ct.collect(net, x, precision="fp32", fuse_residual=True)
    assert [p["spec"] for p in default["problems"]] == [SEPARABLE_SPECS["pw"]]
    assert [(e["name"], e["reason"].split(":")[0]) for e in default["skipped"]] == [
        ("dw", "groups=16"), ("mult", "groups=16"), ("grouped", "groups=4")]


def test_patch_grouped_and_depthwise(monkeypatch, lib):
    """patch() replaces grouped and depthwise convolutions (groups kept),
    folds their BatchNorms (a per-output-channel scale of the (K, C/groups,
    R, S) weight: checked in float64), fuses their ReLUs and additions, and
    the patched model computes what the model did."""
    net = _randomize_bn(_Separable()).eval()
    patched, report = ct.patch(net, precision="fp32", fuse_residual=True, grouped=True)
    assert report["left"] == []
    assert [(r["name"], r["folded_bn"], r["fused_relu"], r["fused_residual"])
            for r in report["replaced"]] == [
        ("dw", "dw_bn", "relu", None),
        ("pw", "pw_bn", None, {"residual": "x", "inplace": False}),
        ("mult", None, None, None),
        # Its residual is its own input: not overwritten, copied.
        ("grouped", "grouped_bn", "relu", {"residual": "mult", "inplace": False})]
    assert [(patched.get_submodule(n).groups, patched.get_submodule(n).act)
            for n in ("dw", "pw", "mult", "grouped")] == \
        [(16, "relu"), (1, "none"), (16, "none"), (4, "relu")]
    assert all(type(m) is ct.Conv2d for m in (patched.dw, patched.pw, patched.mult,
                                               patched.grouped))
    # The folded depthwise and grouped convolutions compute bn(conv(x)), in float64.
    for conv, bn, c in (("dw", "dw_bn", 16), ("grouped", "grouped_bn", 32)):
        m, ref = patched.get_submodule(conv), net.get_submodule(conv)
        assert m.weight.shape == ref.weight.shape
        x = torch.randn(2, c, 9, 7, dtype=torch.float64)
        got = torch.nn.functional.conv2d(x, m.weight.double(), m.bias.double(), padding=1,
                                         groups=m.groups)
        want = copy.deepcopy(net.get_submodule(bn)).double()(
            torch.nn.functional.conv2d(x, ref.weight.double(), None, padding=1,
                                       groups=ref.groups))
        assert torch.allclose(got, want, rtol=1e-5, atol=1e-6)
    _kernel_on_cpu(monkeypatch)
    x = torch.randn(2, 16, 12, 10)
    nhwc, _ = ct.patch(net, precision="fp32", fuse_residual=True, grouped=True,
                       channels_last=True)
    # By default the grouped convolutions stay PyTorch's, with their
    # BatchNorms and ReLUs, and the model still computes what it did.
    default, report = ct.patch(net, precision="fp32", fuse_residual=True)
    assert [r["name"] for r in report["replaced"]] == ["pw"]
    assert [r["name"] for r in report["left"]] == ["dw", "mult", "grouped"]
    assert type(default.dw) is nn.Conv2d and isinstance(default.dw_bn, nn.BatchNorm2d)
    with torch.no_grad():
        want = net(x)
        for model in (patched, nhwc, default):
            assert torch.allclose(model(x), want, rtol=1e-4, atol=1e-5)


def test_relu_and_relu6_in_a_row_fuse_as_relu6(monkeypatch, lib):
    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.c = nn.Conv2d(3, 8, 3, padding=1)
            self.d = nn.Conv2d(3, 8, 3, padding=1)

        def forward(self, x):
            return torch.relu(F.relu6(self.c(x))), F.relu6(F.relu(self.d(x)))

    net = Two().eval()
    x = torch.randn(2, 3, 6, 5) * 10  # outputs well past 6
    patched, report = ct.patch(net)
    assert (patched.c.act, patched.d.act) == ("relu6", "relu6")
    assert [r["fused_relu"] for r in report["replaced"]] == ["relu6, relu", "relu, relu6"]
    assert [p["spec"].endswith(",act=relu6") for p in ct.collect(net, x)["problems"]] == [True]
    _kernel_on_cpu(monkeypatch)
    with torch.no_grad():
        for got, want in zip(patched(x), net(x)):
            assert torch.allclose(got, want, rtol=1e-4, atol=1e-5)


def test_fusing_refuses_hooks_the_traced_graph_would_drop(lib):
    net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8)).eval()
    handle = net.register_forward_hook(lambda m, a, o: o - 100)
    for call in (lambda: ct.patch(net), lambda: ct.collect(net, torch.randn(1, 3, 8, 8))):
        with pytest.raises(ValueError, match="forward hooks of the model itself"):
            call()
    handle.remove()
    outer = nn.Sequential(nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU())).eval()
    outer[0].register_forward_pre_hook(lambda m, a: None)
    with pytest.raises(ValueError, match="forward hooks of 0;"):
        ct.patch(outer)
    patched, report = ct.patch(outer, fold_bn=False, fuse_relu=False, fuse_residual=False)
    assert [r["name"] for r in report["replaced"]] == ["0.0"] and patched[0]._forward_pre_hooks
    # A hook on a module the graph keeps (a BatchNorm) stays, its BatchNorm unfolded.
    leaf = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8)).eval()
    leaf[1].register_forward_hook(lambda m, a, o: o)
    patched, report = ct.patch(leaf)
    assert report["replaced"][0]["folded_bn"] is None
    assert patched.get_submodule("1")._forward_hooks


def test_a_strided_view_input_runs_as_its_contiguous_copy(monkeypatch, lib):
    class Chunk(nn.Module):
        def __init__(self):
            super().__init__()
            self.c = nn.Conv2d(4, 6, 3, padding=1)

        def forward(self, x):
            return self.c(x.chunk(2, dim=1)[1])

    net = Chunk().eval()
    x = torch.randn(2, 8, 7, 5)
    got = ct.collect(net, x, precision="fp32")
    assert specs(got) == ["n=2,c=4,h=7,w=5,k=6,r=3,s=3,stride=1,pad=1,dil=1,bias=1,prec=fp32"]
    assert got["skipped"] == []
    patched, _ = ct.patch(net)
    seen = []

    def conv2d(x, *args, **kwargs):
        seen.append(x.is_contiguous())
        return _cpu_conv2d(x, *args, **kwargs)

    monkeypatch.setattr(ct, "conv2d", conv2d)
    with torch.no_grad():
        assert torch.allclose(patched(x), net(x), rtol=1e-4, atol=1e-5)
    assert seen == [True]


def test_a_conv_under_two_names_is_one_convtune_module(lib):
    class Alias(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Conv2d(3, 3, 1)
            self.b = self.a

        def forward(self, x):
            return self.b(self.a(x))

    patched, report = ct.patch(Alias().eval(), fold_bn=False, fuse_relu=False,
                               fuse_residual=False)
    assert isinstance(patched.b, ct.Conv2d) and patched.b is patched.a
    assert [r["name"] for r in report["replaced"]] == ["a", "b"]


def test_collect_lists_what_patch_runs(lib):
    # A model in training mode: its problems are those of patch(model.eval()).
    net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8),
                        nn.ReLU())
    x = torch.randn(2, 3, 8, 8)
    train = ct.collect(net.train(), x, precision="fp32")
    assert all(m.training for m in net.modules())
    assert specs(train) == specs(ct.collect(net.eval(), x, precision="fp32"))
    assert specs(train)[0].endswith(",bias=1,prec=fp32,act=relu")

    # What patch() leaves is skipped, with its reason.
    class Sub(nn.Conv2d):
        pass

    net = nn.Sequential(nn.Conv2d(3, 4, 1), Sub(4, 4, 1), nn.Conv2d(4, 4, 1)).eval()
    net[0].register_forward_hook(lambda m, a, o: o)
    plain = dict(fold_bn=False, fuse_relu=False, fuse_residual=False)
    got = ct.collect(net, torch.randn(1, 3, 5, 5), **plain)
    _, report = ct.patch(net, **plain)
    assert [p["modules"] for p in got["problems"]] == [["2"]]
    assert [(s["name"], s["reason"]) for s in got["skipped"]] == \
        [(e["name"], e["reason"]) for e in report["left"]] and len(report["left"]) == 2

    # A batch of 0 runs no kernel: nothing to tune, nothing skipped.
    got = ct.collect(nn.Conv2d(3, 4, 3).eval(), torch.randn(0, 3, 8, 8))
    assert got["problems"] == [] and got["skipped"] == []


def test_conv_arguments_must_be_integers(lib):
    x, w = torch.empty(2, 3, 16, 16, device="meta"), torch.empty(4, 3, 3, 3, device="meta")
    for kw in ({"stride": 1.7}, {"padding": (1.5, 1)}, {"stride": "2"}, {"dilation": [1, 2.0]}):
        with pytest.raises(TypeError, match="must be an int or a pair of ints"):
            ct.conv2d(x, w, **kw)
    with pytest.raises(TypeError, match="stride must be an int"):
        ct.Conv2d(3, 4, 3, stride=1.5)
    odd = nn.Conv2d(3, 4, 3, stride=1.5).eval()  # nn.Conv2d takes it
    patched, report = ct.patch(nn.Sequential(odd))
    assert [e["reason"] for e in report["left"]] == ["stride must be an int or a pair of ints, "
                                                     "not (1.5, 1.5)"]


def test_inplace_needs_a_model_around_the_convolution(lib):
    with pytest.raises(ValueError, match="lone nn.Conv2d"):
        ct.patch(nn.Conv2d(3, 4, 3).eval(), fold_bn=False, fuse_relu=False,
                 fuse_residual=False, inplace=True)


@pytest.mark.skipif(not hasattr(getattr(torch.backends.cudnn, "conv", None), "fp32_precision"),
                    reason="this torch has no per-operator TF32 settings (torch < 2.9)")
def test_precision_auto_reads_the_per_operator_tf32_setting():
    conv, rnn = torch.backends.cudnn.conv, torch.backends.cudnn.rnn
    old = conv.fp32_precision, rnn.fp32_precision
    x = torch.randn(1, 4, 9, 9)
    try:
        for setting, want in (("ieee", "fp32"), ("tf32", "tf32")):
            conv.fp32_precision = setting  # RNNs' differ: allow_tf32 would raise
            rnn.fp32_precision = "tf32" if setting == "ieee" else "ieee"
            assert ct.collect(nn.Conv2d(4, 6, 3), x)["precision"] == want
    finally:
        conv.fp32_precision, rnn.fp32_precision = old


def test_conv2d_module_edges(lib):
    # padding="same" traces (its padding an int, not a traced size).
    m = ct.Conv2d(4, 6, 3, padding="same", device="meta")
    traced = torch.jit.trace(m, torch.empty(2, 4, 9, 7, device="meta"), check_trace=False)
    assert traced(torch.empty(2, 4, 9, 7, device="meta")).shape == (2, 6, 9, 7)
    # An unbatched strided view is copied, as a batched one is.
    seen = []

    def conv2d(x, *args, **kwargs):
        seen.append(x.is_contiguous())
        return _cpu_conv2d(x, *args, **kwargs)

    m = ct.Conv2d(4, 6, 3, padding=1)
    x = torch.randn(8, 8, 8)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ct, "conv2d", conv2d)
        with torch.no_grad():
            assert torch.allclose(m(x[::2]), F.conv2d(x[::2], m.weight, m.bias, padding=1),
                                  rtol=1e-5, atol=1e-6)
    assert seen == [True]
    # A padding_mode changed after construction is refused at the call.
    m.padding_mode = "reflect"
    with pytest.raises(ct.UnsupportedError, match="padding_mode='reflect'"):
        m(x)
    # A float64 default dtype is refused at construction, as dtype=torch.float64 is.
    old = torch.get_default_dtype()
    try:
        torch.set_default_dtype(torch.float64)
        with pytest.raises(ct.UnsupportedError, match="float32 convolutions only"):
            ct.Conv2d(3, 6, 3)
    finally:
        torch.set_default_dtype(old)
    # from_module keeps frozen parameters frozen.
    plain = nn.Conv2d(3, 6, 3)
    plain.weight.requires_grad_(False)
    new = ct.Conv2d.from_module(plain)
    assert (new.weight.requires_grad, new.bias.requires_grad) == (False, True)
    assert (new.precision, new.act, new.pack_weights) == ("auto", "none", False)
    # A Conv2d's settings carry over unless given.
    ours = ct.Conv2d(3, 6, 3, precision="fp32", act="relu6", pack_weights=True)
    again = ct.Conv2d.from_module(ours)
    assert (again.precision, again.act, again.pack_weights) == ("fp32", "relu6", True)
    assert ct.Conv2d.from_module(ours, act="none").act == "none"


def test_one_channel_input_follows_a_channels_last_weight(lib):
    x = torch.empty(2, 1, 16, 16, device="meta")  # reads as NCHW and as NHWC
    w = torch.empty(8, 1, 3, 3, device="meta")
    assert ct.conv2d(x, w, padding=1).is_contiguous()
    cl = w.to(memory_format=torch.channels_last)  # strides (9, 1, 3, 1)
    y = ct.conv2d(x, cl, padding=1)
    assert y.is_contiguous(memory_format=torch.channels_last) and not y.is_contiguous()
    # patch(channels_last=True) stays channels_last past a one-channel input,
    # its second layer reading its own weights' format (no copy a call).
    m = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.Conv2d(8, 8, 3, padding=1)).eval()
    p, _ = ct.patch(m, channels_last=True, fold_bn=False, fuse_relu=False, fuse_residual=False)
    p = p.to("meta")
    h = p[0](x)
    assert not h.is_contiguous() and ct._layout(h) == ct._layout(p[1].weight) == "nhwc"
    got = ct.collect(m, torch.randn(2, 1, 16, 16), channels_last=True, fold_bn=False,
                     fuse_relu=False, fuse_residual=False)
    assert [s.endswith(",layout=nhwc") for s in specs(got)] == [True, True]
