"""bench/suite.py without a GPU and without torch: the suite file
(bench/suites/public.txt) and its parser read_suite, the specs against the
library's parser, --help and --report without torch, and the merging of
rows into the suite JSON."""

import importlib.util
import json
import math
import os
import subprocess
import sys

import pytest

import convtune
from convtune import _lib
from conftest import PYTHON_DIR

REPO = os.path.dirname(PYTHON_DIR)
SUITE_PY = os.path.join(REPO, "bench", "suite.py")
PUBLIC = os.path.join(REPO, "bench", "suites", "public.txt")
PUBLIC_NHWC = os.path.join(REPO, "bench", "suites", "public-nhwc.txt")

# Running a script with torch made unimportable: `import torch` raises.
NO_TORCH = ("import runpy, sys; sys.modules['torch'] = None; sys.argv = sys.argv[1:]; "
            "runpy.run_path(sys.argv[0], run_name='__main__')")


def load_suite_module():
    spec = importlib.util.spec_from_file_location("convtune_bench_suite", SUITE_PY)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


suite = load_suite_module()


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
                 "n=1,c=1,h=2,w=8,k=1,r=3,s=3", "n=x,c=1,h=8,w=8,k=1,r=3,s=3"]:
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
    ("a n=1,c=1,h=8,w=8,k=1,r=3,s=3,act=gelu\n", 1, "must be none or relu"),
    ("a n=1,c=1,h=8,w=8,k=1,r=3,s=3,layout=chwn\n", 1, "must be nchw or nhwc"),
    ("a,b n=1,c=1,h=8,w=8,k=1,r=3,s=3\n", 1, "bad name"),
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
