"""bench/suite.py without a GPU and without torch: the suite file
(bench/suites/public.txt) and its parser read_suite, the specs against the
library's parser (groups among them), --help and --report without torch,
and the merging of rows into the suite JSON.  Where torch is installed
(CPU is enough; the tests skip without it), the float64 reference figures
of bench.py and suite.py's blocked Reference for grouped problems against
a plain float64 computation."""

import json
import math
import os
import subprocess
import sys

import pytest

import convtune
from convtune import _lib
from conftest import PYTHON_DIR, load_bench_script

REPO = os.path.dirname(PYTHON_DIR)
SUITE_PY = os.path.join(REPO, "bench", "suite.py")
PUBLIC = os.path.join(REPO, "bench", "suites", "public.txt")
PUBLIC_NHWC = os.path.join(REPO, "bench", "suites", "public-nhwc.txt")

# Running a script with torch made unimportable: `import torch` raises.
NO_TORCH = ("import runpy, sys; sys.modules['torch'] = None; sys.argv = sys.argv[1:]; "
            "runpy.run_path(sys.argv[0], run_name='__main__')")


suite = load_bench_script("suite.py", "convtune_bench_suite")


def write(tmp_path, text, name="s.txt"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_public_suite_has_30_unique_names():
    entries = suite.read_suite(PUBLIC)
    names = [n for n, _ in entries]
    assert len(names) == 30 and len(set(names)) == 30
    assert names[0] == "kb50" and "r50-stem" in names
    assert all("prec" not in suite.spec_keys(spec) for _, spec in entries)


def test_kb87_output_has_2_pow_31_elements():
    spec = dict(suite.read_suite(PUBLIC))["kb87"]
    shape = suite.output_shape(suite.parse_spec(spec))
    assert shape == (16, 128, 1024, 1024)
    assert math.prod(shape) == 2 ** 31


@pytest.mark.parametrize("path,tail", [(PUBLIC, ""), (PUBLIC_NHWC, ",layout=nhwc")])
def test_every_public_spec_parses_in_the_library(lib, path, tail):
    """Each spec of the public suite and of its NHWC twin, with each prec,
    through ct_problem_parse; its fields equal suite.py's own parse.  A spec
    the library refuses only for its 32-bit tensor limit (kb87's y has 2^31
    elements; DESIGN.md) must be well-formed otherwise: never CT_ERR_PARSE,
    and the same spec at n=1 parses."""
    fields = [name for name, _ in _lib.Problem._fields_]
    entries = suite.read_suite(path)
    if tail:  # the same shapes as public.txt, each named NAME-nhwc
        assert entries == [(n + "-nhwc", s + tail) for n, s in suite.read_suite(PUBLIC)]
    for name, spec in entries:
        for prec in suite.PRECISIONS:
            full = "%s,prec=%s" % (spec, prec)
            mine = suite.parse_spec(full)
            try:
                p = lib.parse(full)
            except convtune.ConvtuneError as e:
                assert e.status == _lib.CT_ERR_INVALID_PROBLEM, (name, str(e))
                assert "INT32_MAX" in str(e), (name, str(e))
                assert max(math.prod(s) for s in (
                    (mine["n"], mine["c"], mine["h"], mine["w"]),
                    suite.output_shape(mine))) > 2 ** 31 - 1, name
                one = ",".join("n=1" if item.startswith("n=") else item
                               for item in full.split(","))
                p = lib.parse(one)
                mine = suite.parse_spec(one)
            assert {f: getattr(p, f) for f in fields} == mine, (name, prec)
            assert lib.format(p).endswith(",prec=" + prec + tail)


def test_spec_parser_agrees_with_the_library_on_errors(lib):
    for spec in ["n=1,c=1,h=8,w=8,k=1,r=3", "n=1,c=1,h=8,w=8,k=1,r=3,s=3,bogus=1",
                 "n=1,c=1,h=8,w=8,k=1,r=3,s=3,n=2", "n=1,c=1,h=8,w=8,k=1,r=3,s=3,pad=1x",
                 "n=1,c=1,h=8,w=8,k=1,r=3,s=3,bias=2", "n=1,c=1,h=8,w=8,k=1,r=3,s=3,prec=fp16",
                 "n=1,c=1,h=8,w=8,k=1,r=3,s=3,,pad=1", "n=1,c=1,h=8,w=8,k=1,r=3,s=3,stride=0",
                 "n=1,c=1,h=2,w=8,k=1,r=3,s=3", "n=x,c=1,h=8,w=8,k=1,r=3,s=3",
                 "n=1,c=1,h=8,w=8,k=1,r=3,s=3,act=relu7"]:
        with pytest.raises(ValueError):
            suite.parse_spec(spec)
        with pytest.raises(convtune.ConvtuneError):
            lib.parse(spec)
    spec = "s=5,r=3,k=7,w=40,h=30,c=2,n=3,stride=2x1,pad=1x2,dil=1x3,bias=0,prec=fp32"
    p = lib.parse(spec)
    f = suite.parse_spec(spec)
    assert {name: getattr(p, name) for name, _ in _lib.Problem._fields_} == f
    assert suite.output_hw(f) == p.output_hw()


def test_comments_and_blank_lines_are_ignored(tmp_path):
    path = write(tmp_path, "# a header\n\n   \n"
                 "a n=1,c=1,h=8,w=8,k=1,r=3,s=3   # trailing comment\n"
                 "\t# indented comment\n"
                 "b\tn=2,c=3,h=9,w=9,k=4,r=1,s=1,bias=0\n#last")
    assert suite.read_suite(path) == [("a", "n=1,c=1,h=8,w=8,k=1,r=3,s=3"),
                                      ("b", "n=2,c=3,h=9,w=9,k=4,r=1,s=1,bias=0")]
    assert suite.read_suite(write(tmp_path, "# nothing\n", "e.txt")) == []


@pytest.mark.parametrize("text,line,needle", [
    ("# c\na n=1,c=1,h=8,w=8,k=1,r=3,s=3\nb\n", 3, "no problem spec"),
    ("a n=1,c=1,h=8,w=8,k=1,r=3,s=3\n\nb   # spec missing\n", 3, "no problem spec"),
    ("a n=1,c=1,h=8,w=8,k=1,r=3,s=3\n# x\na n=2,c=1,h=8,w=8,k=1,r=3,s=3\n", 3,
     "duplicate name 'a' (first on line 1)"),
    ("a n=1,c=1,h=8,w=8,k=1,r=3,s=3 extra\n", 1, "fields"),
    ("\n\na n=1,c=1,h=8\n", 3, "missing required key 'w'"),
    ("a n=1,c=1,h=8,w=8,k=1,r=3,s=3,prec=tf32\n", 1, "prec"),
    ("a n=1,c=1,h=8,w=8,k=1,r=3,s=3,act=relu\n", 1, "act=relu"),
    ("a n=1,c=1,h=8,w=8,k=1,r=3,s=3,act=relu6\n", 1, "act=relu6; the suite times plain"),
    ("a n=1,c=1,h=8,w=8,k=1,r=3,s=3,act=gelu\n", 1, "must be none, relu or relu6"),
    ("a n=1,c=1,h=8,w=8,k=1,r=3,s=3,layout=chwn\n", 1, "must be nchw or nhwc"),
    ("a,b n=1,c=1,h=8,w=8,k=1,r=3,s=3\n", 1, "bad name"),
    ("a n=1,c=4,h=8,w=8,k=6,r=3,s=3,groups=4\n", 1, "groups = 4 must divide both c = 4 and k = 6"),
])
def test_malformed_lines_raise_with_the_line_number(tmp_path, text, line, needle):
    path = write(tmp_path, text)
    with pytest.raises(ValueError) as e:
        suite.read_suite(path)
    assert "%s:%d:" % (path, line) in str(e.value)
    assert needle in str(e.value)


def test_only_selects_in_suite_order_and_rejects_unknown_names():
    entries = suite.read_suite(PUBLIC)
    got = suite.select_shapes(entries, "r50-stem,kb87 ,kb50")
    assert [n for n, _ in got] == ["kb50", "kb87", "r50-stem"]
    assert [n for n, _ in suite.select_shapes(entries, "r50-l4-*")] == [
        n for n, _ in entries if n.startswith("r50-l4-")]
    assert suite.select_shapes(entries, "") == entries
    with pytest.raises(ValueError) as e:
        suite.select_shapes(entries, "kb50,nope")
    assert "nope" in str(e.value) and "kb63" in str(e.value) and "r50-stem" in str(e.value)


def run_no_torch(*args, **kw):
    return subprocess.run([sys.executable, "-c", NO_TORCH, SUITE_PY] + list(args),
                          capture_output=True, text=True, timeout=120, **kw)


def test_help_exits_0_without_torch():
    r = subprocess.run([sys.executable, SUITE_PY, "--help"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "--only" in r.stdout and "--tune" in r.stdout and "--budget" in r.stdout
    r = run_no_torch("--help")
    assert r.returncode == 0, r.stderr
    assert "--precision" in r.stdout


def test_bad_arguments_are_usage_errors_without_torch():
    r = run_no_torch("--only", "kb50,no-such-shape")
    assert r.returncode == 2 and "no-such-shape" in r.stderr and "kb87" in r.stderr
    r = run_no_torch("--precision", "tf32,fp16")
    assert r.returncode == 2 and "fp16" in r.stderr


def row(shape, prec, impl, mean, **kw):
    r = {"shape": shape, "precision": prec, "impl": impl, "mean_ms": mean,
         "passes": True, "floor_ms": 0.5}
    r.update(kw)
    return r


def test_merge_replaces_same_key_and_keeps_the_rest():
    names = ["a", "b", "c"]
    old = [row("b", "tf32", "cudnn", 2.0), row("a", "tf32", "convtune", 1.0, variant="wg:X=1"),
           row("a", "fp32", "convtune", 3.0), row("zz", "tf32", "cudnn", 9.0)]
    new = [row("a", "tf32", "convtune", 0.5, variant="tc:Y=2"), row("a", "tf32", "cudnn", 1.0)]
    merged = suite.merge_rows(old, new, names)
    keys = [suite.row_key(r) for r in merged]
    assert keys == [("a", "tf32", "convtune"), ("a", "tf32", "cudnn"),
                    ("a", "fp32", "convtune"), ("b", "tf32", "cudnn"), ("zz", "tf32", "cudnn")]
    assert merged[0]["mean_ms"] == 0.5 and merged[0]["variant"] == "tc:Y=2"
    suite.annotate(merged)
    assert merged[0]["speed_vs_cudnn"] == 2.0
    assert merged[2]["speed_vs_cudnn"] is None


def test_json_written_atomically_and_report_without_torch(tmp_path):
    rows = [row("kb50", "tf32", "convtune", 0.25, variant="wgr:U=1", family="wgr",
                path="tuned-cubin"),
            row("kb50", "tf32", "cudnn", 2.0), row("kb50", "tf32", "cudnn_channels_last", 1.5),
            row("kb50", "tf32", "torch_compile", None, passes=False, error="boom"),
            row("kb55", "fp32", "convtune", 8.0, passes=False, reason="elementwise: 3x",
                variant="direct:T=1", family="direct", path="default"),
            row("kb55", "fp32", "cudnn", 4.0)]
    doc = {"gpu": "NVIDIA H200", "rows": suite.annotate(rows), "bad": float("nan")}
    path = str(tmp_path / "suite-h200.json")
    suite.write_json_atomic(path, doc)
    assert sorted(os.listdir(tmp_path)) == ["suite-h200.json"]  # no temporary left
    back = json.load(open(path))
    assert back["bad"] is None and back["rows"][0]["speed_vs_cudnn"] == 8.0
    text = suite.table(back["rows"], ["kb50", "kb55"])
    assert "8.00x" in text and "0.50x" in text and "FAIL" in text and "error" in text
    assert "boom" in text and "[default]" in text
    assert "geomean tf32: convtune 8.00x vs cudnn (over 1 shapes)" in text
    r = run_no_torch("--report", "--out", str(tmp_path), "--no-chart")
    assert r.returncode == 0, r.stderr
    assert "kb55" in r.stdout and "8.00x" in r.stdout


def test_chart_from_a_synthetic_json(tmp_path):
    pytest.importorskip("matplotlib")
    names = [n for n, _ in suite.read_suite(PUBLIC)]
    fams = ["direct", "wg", "wgr", "tc3", "s2d_wg", "newfam"]
    rows = []
    for i, name in enumerate(names):
        for prec in suite.PRECISIONS:
            rows.append(row(name, prec, "cudnn", 1.0 + i))
            rows.append(row(name, prec, "cudnn_channels_last", 0.8 + i))
            if i % 7 != 3:
                rows.append(row(name, prec, "convtune", 0.2 + 0.3 * i, passes=i % 5 != 1,
                                family=fams[i % len(fams)]))
    doc = {"gpu": "NVIDIA H200", "rows": rows, "trials": 100}
    paths = suite.plot(doc, names, str(tmp_path / "c.png"), str(tmp_path / "c.svg"))
    assert paths and all(os.path.getsize(p) > 1000 for p in paths)


# -------------------------------------------------------------------------
# Grouped convolutions (groups=G): the spec parser, and the float64
# reference figures of bench.py and suite.py's blocked Reference (CPU torch).

BEYOND = os.path.join(REPO, "bench", "suites", "beyond.txt")


def test_parse_spec_takes_groups():
    f = suite.parse_spec("n=2,c=8,h=9,w=9,k=12,r=3,s=3,groups=4")
    assert f["groups"] == 4
    assert suite.parse_spec("n=2,c=8,h=9,w=9,k=12,r=3,s=3")["groups"] == 1
    assert suite.parse_spec("groups=8,n=1,c=8,h=5,w=5,k=8,r=3,s=3,pad=1")["groups"] == 8
    assert suite.parse_spec("n=1,c=4,h=5,w=5,k=8,r=3,s=3,groups=4")["groups"] == 4  # K = 2C
    assert "groups" in suite.SPEC_KEYS


@pytest.mark.parametrize("spec,needle", [
    ("n=2,c=8,h=9,w=9,k=12,r=3,s=3,groups=3", "groups = 3 must divide both c = 8 and k = 12"),
    ("n=2,c=8,h=9,w=9,k=12,r=3,s=3,groups=6", "groups = 6 must divide both c = 8 and k = 12"),
    ("n=2,c=8,h=9,w=9,k=6,r=3,s=3,groups=4", "groups = 4 must divide both c = 8 and k = 6"),
    ("n=2,c=8,h=9,w=9,k=12,r=3,s=3,groups=0", "groups = 0 must be >= 1"),
    ("n=2,c=8,h=9,w=9,k=12,r=3,s=3,groups=-2", "groups = -2 must be >= 1"),
    ("n=2,c=8,h=9,w=9,k=12,r=3,s=3,groups=x", "not an integer"),
    ("n=2,c=8,h=9,w=9,k=12,r=3,s=3,groups=", "not an integer"),
    ("n=2,c=8,h=9,w=9,k=12,r=3,s=3,groups=2,groups=2", "duplicate key 'groups'"),
])
def test_parse_spec_refuses_bad_groups(spec, needle):
    with pytest.raises(ValueError) as e:
        suite.parse_spec(spec)
    assert needle in str(e.value)


def test_groups_agree_with_the_library(lib):
    fields = [name for name, _ in _lib.Problem._fields_]
    for spec in ["n=2,c=8,h=9,w=9,k=12,r=3,s=3,groups=4", "n=1,c=6,h=7,w=7,k=6,r=3,s=3,groups=6",
                 "n=1,c=4,h=5,w=5,k=8,r=3,s=3,pad=1,bias=0,groups=4,layout=nhwc,prec=fp32",
                 "n=1,c=4,h=5,w=5,k=8,r=3,s=3,groups=1",
                 "n=1,c=4,h=5,w=5,k=8,r=3,s=3,groups=4,act=relu6",
                 "n=1,c=4,h=5,w=5,k=8,r=3,s=3,act=relu,residual=1"]:
        p = lib.parse(spec)
        assert {f: getattr(p, f) for f in fields} == suite.parse_spec(spec), spec
    for spec in ["n=2,c=8,h=9,w=9,k=12,r=3,s=3,groups=3", "n=2,c=8,h=9,w=9,k=6,r=3,s=3,groups=4",
                 "n=2,c=8,h=9,w=9,k=12,r=3,s=3,groups=0", "n=2,c=8,h=9,w=9,k=12,r=3,s=3,groups=x"]:
        with pytest.raises(ValueError):
            suite.parse_spec(spec)
        with pytest.raises(convtune.ConvtuneError):
            lib.parse(spec)


def test_beyond_suite_parses_in_the_library_with_its_grouped_shapes(lib):
    fields = [name for name, _ in _lib.Problem._fields_]
    entries = suite.read_suite(BEYOND)
    assert len({n for n, _ in entries}) == len(entries)
    grouped = {}
    for name, spec in entries:
        for prec in suite.PRECISIONS:
            full = "%s,prec=%s" % (spec, prec)
            p = lib.parse(full)
            mine = suite.parse_spec(full)
            assert {f: getattr(p, f) for f in fields} == mine, name
            assert lib.format(p) == p.spec()
        if mine["groups"] > 1:
            grouped[name] = mine
    assert "mbv2-dw3x3-144" in grouped and "resnext50-l1-3x3-g32" in grouped
    assert all(f["groups"] == f["c"] == f["k"] for n, f in grouped.items() if "-dw" in n)


# Small grouped problems (and one plain one), each also as layout=nhwc: a
# depthwise conv (G = C), a channel multiplier (K = 2C, G = C), three groups
# of 2 input and 3 output channels with dilation and no bias, and G = 1.
GROUPED_SPECS = [
    "n=3,c=6,h=9,w=8,k=6,r=3,s=3,pad=1,groups=6",
    "n=2,c=4,h=7,w=9,k=8,r=3,s=2,stride=2x1,pad=1x0,groups=4",
    "n=2,c=6,h=8,w=10,k=9,r=3,s=3,pad=2,dil=2,bias=0,groups=3",
    "n=2,c=3,h=6,w=6,k=4,r=3,s=3,pad=1",
]
GROUPED_SPECS += [s + ",layout=nhwc" for s in GROUPED_SPECS]


@pytest.fixture(scope="module")
def rt():
    """suite.py's GPU side imported (torch, bench.py, convtune_ctypes), run
    on the CPU here."""
    pytest.importorskip("torch")
    suite._import_runtime()
    return suite


def problem_of(rt, spec):
    return rt.ct.Problem(**rt.parse_spec(spec))


def plain_conv(rt, problem, x, w, b):
    """A float64 grouped conv without F.conv2d: unfold x into its patches,
    then per group g the products of the C/G channels of g's patches with
    the K/G filters of g (an einsum)."""
    torch = rt.torch
    G, K, C = problem.groups, problem.k, problem.c
    cols = torch.nn.functional.unfold(
        x, (problem.r, problem.s), dilation=(problem.dil_h, problem.dil_w),
        padding=(problem.pad_h, problem.pad_w), stride=(problem.stride_h, problem.stride_w))
    N = x.shape[0]
    P, Q = problem.output_hw()
    cols = cols.reshape(N, G, (C // G) * problem.r * problem.s, P * Q)
    wg = w.reshape(G, K // G, (C // G) * problem.r * problem.s)
    y = torch.einsum("ngcl,gkc->ngkl", cols, wg).reshape(N, K, P, Q)
    return y if b is None else y + b.view(1, K, 1, 1)


def per_group(rt, problem, x, w, b):
    """The conv group by group: F.conv2d of group g's input channels with
    its filters (groups=1), the outputs concatenated."""
    torch, F = rt.torch, rt.F
    G = problem.groups
    cg, kg = problem.c // G, problem.k // G
    args = dict(rt.bench.conv_args(problem), groups=1)
    return torch.cat([F.conv2d(x[:, g * cg:(g + 1) * cg], w[g * kg:(g + 1) * kg],
                               None if b is None else b[g * kg:(g + 1) * kg], **args)
                      for g in range(G)], dim=1)


def close(a, b):
    """a equals b to float64 rounding (summation orders differ); raises
    with the worst element otherwise."""
    suite.torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-13)
    return True


@pytest.mark.parametrize("spec", GROUPED_SPECS)
def test_inputs_are_nn_conv2d_s_and_the_figures_use_c_over_groups(rt, spec):
    torch, bench = rt.torch, rt.bench
    p = problem_of(rt, spec)
    G = p.groups
    x, w, b = bench.make_inputs(p, 7, "cpu")
    assert tuple(w.shape) == (p.k, p.c // G, p.r, p.s)
    # The same draws as nn.Conv2d(C, K, (R, S), groups=G) after x: its weight
    # and its bias bound 1/sqrt((C/G)*R*S).
    torch.manual_seed(7)
    torch.rand(p.n, p.c, p.h, p.w)
    conv = torch.nn.Conv2d(p.c, p.k, (p.r, p.s), groups=G, bias=bool(p.bias))
    assert torch.equal(w, conv.weight.detach())
    if p.bias:
        assert torch.equal(b, conv.bias.detach())
    else:
        assert b is None
    assert bench.conv_args(p)["groups"] == G
    assert bench.reduction_length(p) == (p.c // G) * p.r * p.s + p.bias
    assert bench.reduction_length(p.copy(residual=1)) == (p.c // G) * p.r * p.s + p.bias + 1
    assert bench.is_headline_shape(p) is False
    rates = {"copy_bytes_per_s": 1e12, "tf32_flop_per_s": 4e14, "fp32_flop_per_s": 5e13}
    fl = bench.floors(p, rates)
    P, Q = p.output_hw()
    assert fl["flops"] == 2.0 * p.n * p.k * P * Q * (p.c // G) * p.r * p.s
    assert fl["bytes"] == 4 * (p.n * p.c * p.h * p.w + p.k * (p.c // G) * p.r * p.s
                               + (p.k if p.bias else 0) + p.n * p.k * P * Q)


def test_headline_shape_is_not_grouped(rt):
    p = problem_of(rt, "n=2,c=3,h=224,w=224,k=96,r=11,s=11,stride=4,pad=2")
    assert rt.bench.is_headline_shape(p)
    assert not rt.bench.is_headline_shape(p.copy(groups=3))


@pytest.mark.parametrize("spec", GROUPED_SPECS)
def test_reference_fp64_of_a_grouped_problem(rt, spec):
    """bench.reference_fp64's ref, abs_sum and sq_sum equal the unfolded
    conv's and the per-group convs' (of x, |x|, x^2 with w, |w|, w^2), on
    NCHW and on channels_last x and w."""
    torch, bench = rt.torch, rt.bench
    p = problem_of(rt, spec)
    x, w, b = bench.make_inputs(p, 3, "cpu")
    x64, w64 = x.double(), w.double()
    b64 = None if b is None else b.double()
    want = [(x64, w64, b64), (x64.abs(), w64.abs(), None if b is None else b64.abs()),
            (x64 * x64, w64 * w64, None if b is None else b64 * b64)]
    for xx, ww in ((x, w), (x.contiguous(memory_format=torch.channels_last),
                            w.contiguous(memory_format=torch.channels_last))):
        got = bench.reference_fp64(p, xx, ww, b)
        for fig, (a, c, d) in zip(got, want):
            assert tuple(fig.shape) == (p.n, p.k) + p.output_hw()
            assert close(fig, plain_conv(rt, p, a, c, d))
            assert close(fig, per_group(rt, p, a, c, d))


def chunk_sizes(p):
    """chunk_elems for Reference that give every kind of block: one block;
    one image per block; and, below one image's outputs, kb = 1, 2, K/G,
    K/G + 1, 2K/G and K - 1 output channels (blocks inside one group, or of
    whole groups, some with a remainder)."""
    P, Q = p.output_hw()
    kg = p.k // p.groups
    kbs = sorted({kb for kb in (1, 2, kg, kg + 1, 2 * kg, p.k - 1) if 1 <= kb < p.k})
    return [None, p.k * P * Q] + [kb * P * Q for kb in kbs]


@pytest.mark.parametrize("spec", GROUPED_SPECS)
def test_suite_reference_blocks_of_a_grouped_problem(rt, spec):
    """suite.Reference, stored and recomputed, at each blocking: the blocks
    tile the output once, each block's ref and abs_sum are the slices of
    the plain conv's, ||ref||^2 likewise, and A^2 = sum(sq_sum); the block's
    channels stay inside one group or span whole groups."""
    torch = rt.torch
    p = problem_of(rt, spec)
    x, w, b = rt.bench.make_inputs(p, 11, "cpu")
    x64, w64 = x.double(), w.double()
    b64 = None if b is None else b.double()
    ref = plain_conv(rt, p, x64, w64, b64)
    ab = plain_conv(rt, p, x64.abs(), w64.abs(), None if b is None else b64.abs())
    sq = plain_conv(rt, p, x64 * x64, w64 * w64, None if b is None else b64 * b64)
    kg = p.k // p.groups
    kinds = set()
    for chunk in chunk_sizes(p):
        for store in (True, False):
            for xx, ww in ((x, w), (x.contiguous(memory_format=torch.channels_last),
                                    w.contiguous(memory_format=torch.channels_last))):
                R = rt.Reference(p, xx, ww, b, store=store, chunk_elems=chunk)
                assert R.n_out == ref.numel()
                assert R.a2 == pytest.approx(float(sq.sum()), rel=1e-12)
                seen = torch.zeros(p.n, p.k, dtype=torch.int64)
                for i, (n0, n1, k0, k1) in enumerate(R.blocks):
                    seen[n0:n1, k0:k1] += 1
                    inside = k0 // kg == (k1 - 1) // kg
                    assert inside or (k0 % kg == 0 and k1 % kg == 0), (k0, k1)
                    kinds.add("inside" if inside and k1 - k0 < kg else "whole")
                    r, a, r2 = R.block(i)
                    assert close(r, ref[n0:n1, k0:k1])
                    assert close(a, ab[n0:n1, k0:k1])
                    assert r2 == pytest.approx(float((ref[n0:n1, k0:k1] ** 2).sum()), rel=1e-12)
                assert bool((seen == 1).all())
                R.free()
    assert "whole" in kinds and ("inside" in kinds or kg == 1)


@pytest.mark.parametrize("spec", GROUPED_SPECS)
def test_suite_check_equals_bench_check_on_a_grouped_problem(rt, spec):
    """check_output block by block (channels inside a group) gives
    bench.contract_check's verdict and figures, on NCHW and channels_last
    outputs: a rounded y passes, y with one group's output channel off by
    a little fails the elementwise bound in both."""
    torch, bench = rt.torch, rt.bench
    p = problem_of(rt, spec)
    x, w, b = bench.make_inputs(p, 5, "cpu")
    figs = bench.reference_fp64(p, x, w, b)
    L = bench.reduction_length(p)
    P, Q = p.output_hw()
    R = rt.Reference(p, x, w, b, store=False, chunk_elems=max(1, p.k // p.groups - 1) * P * Q)
    y = figs[0].float()
    bad = y.clone()
    bad[-1, -1, 0, 0] += 1e-3
    for out, passes in ((y, True), (bad, False)):
        for yy in (out, out.contiguous(memory_format=torch.channels_last)):
            for prec in ("tf32", "fp32"):
                want = bench.contract_check(yy, *figs, L, prec)
                got = rt.check_output(yy, R, L, prec, False)
                assert got["passes"] is want["passes"] is passes, (prec, got, want)
                for key in ("max_abs_err", "rel_err", "elem_ratio", "frob_ratio", "bias"):
                    assert got[key] == pytest.approx(want[key], rel=1e-9, abs=1e-300), key
                assert got["n_nonfinite"] == want["n_nonfinite"] == 0
