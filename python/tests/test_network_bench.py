"""bench/network.py without a GPU: its arguments (--impls, --no-compile,
--tune), the accuracy check's figures (bias among them), the floor of a
model's convolutions, and how rows of runs in parts merge and get their
ratios."""


import pytest

from conftest import load_bench_script

torch = pytest.importorskip("torch")

@pytest.fixture(scope="module")
def net():
    mod = load_bench_script("network.py", "convtune_bench_network")
    mod.torch = torch
    return mod


def test_impls_choose_the_rows_and_eager_always_runs(net):
    a = net.parse_args([])
    assert a.impls == set(net.IMPLS)
    assert net.parse_args(["--impls", "torch_compile"]).impls == {"eager", "torch_compile"}
    assert net.parse_args(["--no-compile"]).impls == set(net.IMPLS) - {"torch_compile"}
    assert net.parse_args(["--compile-mode", "default"]).compile_mode == "default"
    assert not a.grouped and net.parse_args(["--grouped"]).grouped
    assert not a.no_fuse_residual and net.parse_args(["--no-fuse-residual"]).no_fuse_residual
    for bad in (["--impls", "cudnn"], ["--impls", "eager", "--tune"], ["--models", "resnet50"],
                ["--precision", "fp16"], ["--trials", "0"]):
        with pytest.raises(SystemExit):
            net.parse_args(bad)


def test_check_separates_a_shrink_from_noise(net):
    torch.manual_seed(0)
    ref = torch.randn(4096, dtype=torch.float64)
    finite, _, rel, bias = net.check((ref * (1 - 1e-6)).float(), ref)
    assert finite and rel == pytest.approx(1e-6, rel=0.1) and bias == pytest.approx(-1e-6, rel=0.1)
    noisy = (ref + 1e-6 * torch.randn(4096, dtype=torch.float64)).float()
    finite, _, rel, bias = net.check(noisy, ref)
    assert finite and rel > 5e-7 and abs(bias) < 0.1 * rel
    y = ref.clone().float()
    y[3] = float("nan")
    finite, _, _, bias = net.check(y, ref)
    assert not finite and bias is None


def test_rows_of_runs_in_parts_merge_and_get_ratios(net):
    def row(impl, prec, ms, passes=True):
        return {"model": "resnet50", "batch": 32, "impl": impl, "precision": prec,
                "mean_ms": ms, "rel_err": 1e-4, "passes": passes}

    first = [row("eager", "tf32", 6.0), row("convtune", "tf32", 5.0),
             row("eager_channels_last", "tf32", 4.0, passes=False)]
    later = [row("eager", "tf32", 6.2), row("torch_compile", "tf32", 3.0)]
    rows = net.merge(first, later)
    assert sorted(r["impl"] for r in rows) == sorted(
        ["eager", "convtune", "eager_channels_last", "torch_compile"])
    net.add_ratios(rows)
    by = {r["impl"]: r for r in rows}
    assert by["eager"]["mean_ms"] == 6.2
    # a failing PyTorch row is no one's baseline
    assert by["convtune"]["speed_vs_best_pytorch"] == pytest.approx(3.0 / 5.0)
    assert "torch_compile" in net.table(rows)


def test_models_of_runs_in_parts_keep_each_precisions_tune(net):
    old = {"resnet50:1": {"replaced": 53, "tune": {"fp32": {"wall_s": 60.0}}},
           "vgg16_bn:8": {"replaced": 13, "tune": {"tf32": {"wall_s": 20.0}}}}
    new = {"resnet50:1": {"replaced": 53, "tune": {"tf32": {"wall_s": 50.0}}}}
    models = net.merge_models(old, new)
    assert models["resnet50:1"]["tune"] == {"fp32": {"wall_s": 60.0}, "tf32": {"wall_s": 50.0}}
    assert models["vgg16_bn:8"] == old["vgg16_bn:8"]
    again = net.merge_models(models, {"resnet50:1": {"tune": {"fp32": {"wall_s": 70.0}}}})
    assert again["resnet50:1"]["tune"]["fp32"] == {"wall_s": 70.0}  # a re-run replaces


def test_conv_floor_sums_each_convolution_floor_times_its_calls(net):
    """conv_floor_ms: bench.floors of every problem collect() lists, times
    its calls, at the row's precision (a shared convolution counted twice,
    the BatchNorm folded into a bias)."""
    pytest.importorskip("torchvision")
    net._import_runtime(None)
    nn = torch.nn

    class Twice(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Conv2d(3, 8, 3, padding=1, bias=False)
            self.bn = nn.BatchNorm2d(8)
            self.b = nn.Conv2d(8, 8, 1)

        def forward(self, x):
            y = torch.relu(self.bn(self.a(x)))
            return self.b(self.b(y))

    model = Twice().eval()
    x = torch.randn(2, 3, 16, 16)
    rates = {"copy_bytes_per_s": 1e12, "tf32_flop_per_s": 4e14, "fp32_flop_per_s": 5e13}

    def floor(c, k, r, prec):  # x, y, w, b bytes; 2 N K P Q C R S FLOPs
        nbytes = 4 * (2 * c * 256 + 2 * k * 256 + k * c * r * r + k)
        flops = 2.0 * 2 * k * 256 * c * r * r
        mem = nbytes / rates["copy_bytes_per_s"] * 1e3
        tf32 = flops / rates["tf32_flop_per_s"] * 1e3
        fp32 = flops / rates["fp32_flop_per_s"] * 1e3
        return max(mem, tf32) if prec == "tf32" else max(mem, min(fp32, 3 * tf32))

    for prec in ("tf32", "fp32"):
        want = floor(3, 8, 3, prec) + 2 * floor(8, 8, 1, prec)
        assert net.conv_floor_ms(model, x, prec, rates) == pytest.approx(want, rel=1e-12)


def test_tune_summary_counts_statuses_and_winning_families(net):
    result = {"problems": [
        {"problem": "n=1,c=64,h=56,w=56,k=64,r=1,s=1", "calls": 3, "status": "tuned",
         "winner": "pw:BM=128,BN=64,BK=32,STAGES=6", "winner_mean_ms": 0.02},
        {"problem": "n=1,c=64,h=56,w=56,k=64,r=3,s=3,pad=1", "calls": 2, "status": "skipped",
         "winner": "gm:BM=128,BN=64,BK=32,STAGES=8", "winner_mean_ms": 0.05},
        {"problem": "n=1,c=256,h=56,w=56,k=64,r=1,s=1", "calls": 1, "status": "tuned",
         "winner": "pw:BM=128,BN=128,BK=32,STAGES=4", "winner_mean_ms": 0.03},
        {"problem": "n=1,c=3,h=9,w=9,k=1,r=1,s=1", "calls": 1, "status": "failed",
         "winner": None, "winner_mean_ms": None},
    ]}
    got = net.tune_summary(result)
    assert (got["problems"], got["tuned"], got["skipped"]) == (4, 2, 1)
    assert got["families"] == {"pw": 2, "gm": 1}
    assert list(got["families"]) == ["pw", "gm"]
    assert [w["winner"] for w in got["winners"]] == [r["winner"] for r in result["problems"]]
    assert got["winners"][1]["calls"] == 2
    assert net.tune_summary({})["problems"] == 0
