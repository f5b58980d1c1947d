#!/usr/bin/env python3
"""suite.py — convtune beside cuDNN over a suite of conv2d shapes, on one GPU.

For each shape of a suite file (bench/suites/public.txt unless --suite says
otherwise) and each precision, in one process and on the same fresh inputs:
convtune through libconvtune (after `convtune tune` with --tune), cuDNN
through F.conv2d on NCHW tensors, cuDNN on tensors already in channels_last,
and torch.compile(F.conv2d).  Every row is checked against a float64
reference under its precision contract (tuner/verify.h, bench.py's
formulas; a spec's groups=G goes to every row and to the reference),
timed with the KernelBench protocol (bench.py's time_call) and set against
the shape's memory and compute floors (bench.py's rates and floors).
Prints a line per shape and a table at the end; writes <out>/suite-<gpu>.json
after every shape (merging with the rows already there) and
<out>/suite-<gpu>.png and .svg at the end.  Exits 1 when a
convtune row of this run fails its contract or cannot run.

    python3 bench/suite.py [--suite FILE] [--only NAMES] [--precision tf32,fp32]
                           [--tune] [--budget S] [--out DIR] ...
    python3 bench/suite.py --report [--out DIR]    # table and chart from the JSON

bench/README.md ("The suite") says what each option, row and field means.
--help, --report and read_suite() need neither torch nor a GPU: torch is
imported only once the arguments say that a GPU run is wanted.
"""

import argparse
import collections
import datetime
import fnmatch
import gc
import glob
import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DEFAULT_SUITE = os.path.join(HERE, "suites", "public.txt")
DEFAULT_CONVTUNE = os.path.join(REPO, "build", "tuner", "convtune")
DEFAULT_OUT = os.path.join(HERE, "results")

PRECISIONS = ("tf32", "fp32")
IMPLS = ("convtune", "cudnn", "cudnn_channels_last", "torch_compile")
LEGEND = {
    "convtune": "ct_forward (libconvtune through ctypes) into a preallocated NCHW y, on "
                "torch's current stream; the kernel the library picks (ct_forward_path)",
    "cudnn": "F.conv2d on NCHW x, w (with the spec's groups); torch.backends.cudnn.allow_tf32 "
             "= True for tf32 rows, False for fp32 rows",
    "cudnn_channels_last": "F.conv2d on x and w already in channels_last (converted before "
                           "timing): only the conv is timed, not converting x to "
                           "channels_last nor y back to NCHW; allow_tf32 as for cudnn",
    "torch_compile": "torch.compile(F.conv2d), default mode (inductor), compiled once per "
                     "shape; allow_tf32 as for cudnn",
}

# Families in the order the chart's legend lists them (README.md, "Families").
FAMILY_COLORS = {
    "direct": "#7f7f7f", "tc": "#1f77b4", "tc3": "#aec7e8", "wg": "#2ca02c",
    "wg3": "#98df8a", "wgs": "#9467bd", "wgr": "#d62728", "s2d_wg": "#ff7f0e",
    "s2d_wg3": "#ffbb78", "gm": "#17becf", "gm3": "#9edae5", "gmk": "#5254a3",
    "gmk3": "#6b6ecf", "pw": "#8c6d31", "pw3": "#e7ba52", "pwq": "#bd9e39",
    "tap": "#843c39",
    "tap3": "#d6616b", "gmp": "#393b79", "gmp3": "#9c9ede",
}
OTHER_COLORS = ["#8c564b", "#e377c2", "#bcbd22", "#17becf", "#c49c94", "#f7b6d2"]

GIB = 1 << 30
MEM_CAP_GIB = 100            # total GPU memory the run aims to stay under
CHUNK_ELEMS = 1 << 26        # outputs per reference block (16 B each stored)
X_CHUNK_BYTES = 2 * GIB      # float64 input slices (x and |x|) per reference block

# Filled by _import_runtime(): torch, torch.nn.functional, bench.py, convtune_ctypes.
torch = F = bench = ct = None


# -------------------------------------------------------------------------
# The suite file and problem specs (no torch, no library)

SPEC_KEYS = ("n", "c", "h", "w", "k", "r", "s", "stride", "pad", "dil", "bias", "prec", "act",
             "layout", "residual", "groups")
ACTS = ("none", "relu", "relu6")
LAYOUTS = ("nchw", "nhwc")
REQUIRED_KEYS = SPEC_KEYS[:7]
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")
_INT_RE = re.compile(r"-?[0-9]+")


def _spec_int(key, text):
    if not _INT_RE.fullmatch(text):
        raise ValueError("%s: %r is not an integer" % (key, text))
    return int(text)


def parse_spec(spec):
    """The ct_problem fields of a problem spec (README.md, "Problem specs"),
    by ct_problem_parse's syntax: comma-separated key=value, keys n c h w k r
    s required, stride / pad / dil as A or AxB, bias 0 or 1, prec tf32 or
    fp32, act none, relu or relu6, layout nchw or nhwc, residual 0 or 1, groups an
    integer (default 1); unknown, duplicate or missing keys are errors.
    Also checks what needs no library: sizes >= 1, stride >= 1, pad >= 0,
    dil >= 1, groups >= 1 dividing both c and k (w is then
    (K, C/groups, R, S), PyTorch's grouped convolution; groups = c is a
    depthwise one) and a non-empty output.  The 32-bit limits are the
    library's (ct_problem_parse refuses a larger tensor; PyTorch runs it).
    Returns a dict of Problem's fields (precision 0 = tf32, 1 = fp32; act
    0 = none, 1 = relu, 2 = relu6; layout 0 = nchw, 1 = nhwc; groups 1 when the spec
    leaves it out); raises ValueError."""
    if not isinstance(spec, str) or not spec:
        raise ValueError("empty problem spec")
    f = {"stride_h": 1, "stride_w": 1, "pad_h": 0, "pad_w": 0, "dil_h": 1, "dil_w": 1,
         "bias": 1, "precision": 0, "act": 0, "layout": 0, "residual": 0, "groups": 1}
    seen = set()
    for item in spec.split(","):
        if not item:
            raise ValueError("empty item in %r" % spec)
        key, eq, val = item.partition("=")
        if not eq:
            raise ValueError("item %r is not key=value" % item)
        if key not in SPEC_KEYS:
            raise ValueError("unknown key %r" % key)
        if key in seen:
            raise ValueError("duplicate key %r" % key)
        seen.add(key)
        if key in REQUIRED_KEYS or key == "groups":
            f[key] = _spec_int(key, val)
        elif key in ("stride", "pad", "dil"):
            a, x, b = val.partition("x")
            f[key + "_h"] = _spec_int(key, a)
            f[key + "_w"] = _spec_int(key, b) if x else f[key + "_h"]
        elif key in ("bias", "residual"):
            if val not in ("0", "1"):
                raise ValueError("%s: %r must be 0 or 1" % (key, val))
            f[key] = int(val)
        elif key == "act":
            if val not in ACTS:
                raise ValueError("act: %r must be none, relu or relu6" % val)
            f["act"] = ACTS.index(val)
        elif key == "layout":
            if val not in LAYOUTS:
                raise ValueError("layout: %r must be nchw or nhwc" % val)
            f["layout"] = LAYOUTS.index(val)
        else:
            if val not in PRECISIONS:
                raise ValueError("prec: %r must be tf32 or fp32" % val)
            f["precision"] = PRECISIONS.index(val)
    missing = [k for k in REQUIRED_KEYS if k not in seen]
    if missing:
        raise ValueError("missing required key %r" % missing[0])
    for k in ("n", "c", "h", "w", "k", "r", "s", "stride_h", "stride_w", "dil_h", "dil_w",
              "groups"):
        if f[k] < 1:
            raise ValueError("%s = %d must be >= 1" % (k, f[k]))
    for k in ("pad_h", "pad_w"):
        if f[k] < 0:
            raise ValueError("%s = %d must be >= 0" % (k, f[k]))
    if f["c"] % f["groups"] or f["k"] % f["groups"]:
        raise ValueError("groups = %d must divide both c = %d and k = %d"
                         % (f["groups"], f["c"], f["k"]))
    P, Q = output_hw(f)
    if P < 1 or Q < 1:
        raise ValueError("empty output: P = %d, Q = %d" % (P, Q))
    return f


def spec_keys(spec):
    """The keys a spec names, in its order."""
    return [item.partition("=")[0] for item in spec.split(",")]


def output_hw(f):
    """(P, Q) of parse_spec's fields, PyTorch's formula (floor division)."""
    P = (f["h"] + 2 * f["pad_h"] - f["dil_h"] * (f["r"] - 1) - 1) // f["stride_h"] + 1
    Q = (f["w"] + 2 * f["pad_w"] - f["dil_w"] * (f["s"] - 1) - 1) // f["stride_w"] + 1
    return P, Q


def output_shape(f):
    """y's shape (N, K, P, Q) of parse_spec's fields."""
    P, Q = output_hw(f)
    return (f["n"], f["k"], P, Q)


def read_suite(path):
    """The suite file at path as a list of (name, spec) in file order.  A
    line is NAME SPEC separated by white space; `#` starts a comment; blank
    lines are skipped.  NAME: letters, digits and . _ + - (no commas: --only
    takes a comma list).  SPEC: a problem spec without prec (the suite runs
    each precision asked for).  Raises ValueError naming the file and line
    for a name without a spec, extra fields, a bad or duplicate name, a
    spec that does not parse (parse_spec), names prec or fuses a ReLU or a
    residual.  A
    layout=nhwc spec runs convtune on channels_last tensors (compare it with
    cudnn_channels_last); a groups=G spec is a grouped convolution (every
    row, cuDNN's and torch.compile's too, runs it with groups=G)."""
    entries, first_line = [], {}
    with open(path, encoding="utf-8") as f:
        for lineno, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].strip().lstrip("\ufeff")
            if not line:
                continue
            where = "%s:%d" % (path, lineno)
            fields = line.split()
            if len(fields) == 1:
                raise ValueError("%s: %r has no problem spec (a line is NAME SPEC)"
                                 % (where, fields[0]))
            if len(fields) > 2:
                raise ValueError("%s: %d fields; a line is NAME SPEC (a spec has no spaces)"
                                 % (where, len(fields)))
            name, spec = fields
            if not NAME_RE.fullmatch(name):
                raise ValueError("%s: bad name %r (letters, digits and . _ + - only)"
                                 % (where, name))
            if name in first_line:
                raise ValueError("%s: duplicate name %r (first on line %d)"
                                 % (where, name, first_line[name]))
            try:
                parse_spec(spec)
            except ValueError as e:
                raise ValueError("%s: %s: bad spec %r: %s" % (where, name, spec, e)) from None
            if "prec" in spec_keys(spec):
                raise ValueError("%s: %s: the spec names prec; suite specs leave it out "
                                 "(--precision chooses)" % (where, name))
            fields = parse_spec(spec)
            if fields["act"] or fields["residual"]:
                raise ValueError("%s: %s: %s; the suite times plain convolutions "
                                 "against cuDNN's"
                                 % (where, name, "act=" + ACTS[fields["act"]]
                                    if fields["act"] else "residual=1"))
            first_line[name] = lineno
            entries.append((name, spec))
    return entries


def select_shapes(suite, only):
    """The entries of `suite` whose names `only` lists (a comma list of names
    or fnmatch patterns such as r50-l1-*), in suite order; all when `only` is
    empty.  Raises ValueError for a name or pattern that matches nothing,
    listing the valid names."""
    if not only:
        return list(suite)
    want = [w.strip() for w in only.split(",") if w.strip()]
    names = [n for n, _ in suite]
    unknown = [w for w in want if not any(fnmatch.fnmatchcase(n, w) for n in names)]
    if unknown:
        raise ValueError("unknown shape%s %s; the suite's shapes are: %s"
                         % ("s" if len(unknown) > 1 else "", ", ".join(unknown),
                            " ".join(names)))
    return [(n, s) for n, s in suite if any(fnmatch.fnmatchcase(n, w) for w in want)]


# -------------------------------------------------------------------------
# Rows, merging, the JSON file (no torch)

def row_key(r):
    return (r.get("shape"), r.get("precision"), r.get("impl"))


def family_of(variant):
    """"wg3:TP=1,..." -> "wg3"; None without a variant."""
    return variant.split(":", 1)[0] if variant else None


def shape_order(rows, suite_names=()):
    """Shape names: the suite's order first, then others by first appearance."""
    order = [n for n in suite_names]
    seen = set(order)
    for r in rows:
        if r.get("shape") not in seen:
            seen.add(r.get("shape"))
            order.append(r.get("shape"))
    present = {r.get("shape") for r in rows}
    return [n for n in order if n in present]


def sort_rows(rows, suite_names=()):
    order = {n: i for i, n in enumerate(shape_order(rows, suite_names))}

    def key(r):
        p, i = r.get("precision"), r.get("impl")
        return (order.get(r.get("shape"), len(order)),
                PRECISIONS.index(p) if p in PRECISIONS else len(PRECISIONS),
                IMPLS.index(i) if i in IMPLS else len(IMPLS))
    return sorted(rows, key=key)


def merge_rows(old, new, suite_names=()):
    """old's rows with each (shape, precision, impl) that `new` has replaced
    by new's; sorted in suite order (then precision, then impl)."""
    keys = {row_key(r) for r in new}
    return sort_rows([r for r in old if row_key(r) not in keys] + list(new), suite_names)


def annotate(rows):
    """Sets each convtune row's speed_vs_cudnn and speed_vs_cudnn_channels_last
    (baseline mean / convtune mean, > 1: convtune faster) from the rows of the
    same shape and precision; None where either mean is missing."""
    mean = {row_key(r): r.get("mean_ms") for r in rows}
    for r in rows:
        if r.get("impl") != "convtune":
            continue
        m = r.get("mean_ms")
        for base in ("cudnn", "cudnn_channels_last"):
            b = mean.get((r.get("shape"), r.get("precision"), base))
            r["speed_vs_" + base] = b / m if m and b else None
    return rows


def gpu_slug(name):
    """"NVIDIA H200" -> "h200": lowercased, vendor dropped, non-alphanumeric
    runs -> '-' (the results files' names; here for the reason
    finite_or_none is)."""
    s = name.lower()
    for vendor in ("nvidia", "amd", "intel"):
        if s.startswith(vendor):
            s = s[len(vendor):]
    return re.sub(r"[^a-z0-9]+", "-", s).strip("-") or "gpu"


def finite_or_none(v):
    """JSON has no Infinity or NaN: such figures become null.  Here, not in
    bench.py, which imports torch: --report runs without it, and bench.py
    takes it from here."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: finite_or_none(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [finite_or_none(x) for x in v]
    return v


def write_json_atomic(path, doc, indent=1):
    """Writes doc to path through a temporary file in the same folder and a
    rename, so that a reader (or a run killed midway) sees the old file or
    the new one, never half of one."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, ".%s.tmp-%d" % (os.path.basename(path), os.getpid()))
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(finite_or_none(doc), f, indent=indent, allow_nan=False)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def load_doc(path, move_bad=True):
    """The suite JSON at path, or None when there is none.  A file that is
    not a suite JSON is moved aside (path.bad-TIME) with a warning, so that
    a run never fails on it nor silently loses it (move_bad=False: only the
    warning)."""
    if not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        if not isinstance(doc, dict) or not isinstance(doc.get("rows"), list):
            raise ValueError("no 'rows' list")
        return doc
    except (OSError, ValueError) as e:
        if not move_bad:
            print("suite: %s is not a suite JSON (%s)" % (path, e), file=sys.stderr)
            return None
        aside = "%s.bad-%s" % (path, time.strftime("%Y%m%d-%H%M%S"))
        os.replace(path, aside)
        print("suite: %s is not a suite JSON (%s); moved it to %s and starting afresh"
              % (path, e, aside), file=sys.stderr)
        return None


# -------------------------------------------------------------------------
# The table and the chart (no torch)

def fmt_ms(v):
    if v is None:
        return "-"
    return "%.3f" % v if v >= 1 else ("%.4f" % v if v >= 0.001 else "%.3g" % v)


def fmt_x(v):
    return "-" if v is None else "%.2fx" % v


def one_line(text, limit=300):
    """text with its white space runs (newlines included) made single spaces."""
    t = " ".join(str(text).split())
    return t if len(t) <= limit else t[:limit - 3] + "..."


def verdict(r):
    if r is None:
        return "-"
    return "error" if r.get("error") else ("ok" if r.get("passes") else "FAIL")


def geomean(values):
    v = [x for x in values if x and x > 0]
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else None


def summary(rows):
    """Per precision: geomeans of convtune's speed vs cudnn and vs
    cudnn_channels_last over the shapes where convtune passed and both ran,
    and how many shapes that is of how many."""
    out = {}
    for prec in PRECISIONS:
        ct_rows = [r for r in rows if r.get("impl") == "convtune" and r.get("precision") == prec]
        if not ct_rows:
            continue
        ok = [r for r in ct_rows if r.get("passes") and not r.get("error")]
        out[prec] = {
            "shapes": len(ct_rows), "passed": len(ok),
            "geomean_vs_cudnn": geomean(r.get("speed_vs_cudnn") for r in ok),
            "n_vs_cudnn": sum(1 for r in ok if r.get("speed_vs_cudnn")),
            "geomean_vs_cudnn_channels_last": geomean(
                r.get("speed_vs_cudnn_channels_last") for r in ok),
            "n_vs_cudnn_channels_last": sum(1 for r in ok if r.get("speed_vs_cudnn_channels_last")),
        }
    return out


def table(rows, suite_names=()):
    """The results as text: a line per shape and precision, then the
    geomeans, the legend and every failure or error."""
    rows = annotate(sort_rows(rows, suite_names))
    by = {row_key(r): r for r in rows}
    head = ["shape", "prec", "convtune", "cudnn", "cudnn_cl", "compile", "vs cudnn",
            "vs cudnn_cl", "x floor", "pass", "variant"]
    body, notes = [], []
    for name in shape_order(rows, suite_names):
        for prec in PRECISIONS:
            cells = {i: by.get((name, prec, i)) for i in IMPLS}
            if not any(cells.values()):
                continue
            c = cells["convtune"]

            def ms(i):
                r = cells[i]
                if r is None:
                    return "-"
                if r.get("error"):
                    return "error"
                return fmt_ms(r.get("mean_ms")) + ("" if r.get("passes") else "!")
            floor = c.get("floor_ms") if c else None
            xf = c["mean_ms"] / floor if c and c.get("mean_ms") and floor else None
            var = (c.get("variant") or "") if c else ""
            if c and c.get("path") and c["path"] != "tuned-cubin":
                var = ("%s [%s]" % (var, c["path"])).strip()
            body.append([name, prec, ms("convtune"), ms("cudnn"), ms("cudnn_channels_last"),
                         ms("torch_compile"), fmt_x(c.get("speed_vs_cudnn") if c else None),
                         fmt_x(c.get("speed_vs_cudnn_channels_last") if c else None),
                         fmt_x(xf), verdict(c), var])
            for i in IMPLS:
                r = cells[i]
                if r and r.get("error"):
                    notes.append("%s %s %s: error: %s" % (name, prec, i, one_line(r["error"])))
                elif r and not r.get("passes"):
                    notes.append("%s %s %s: FAILS its %s contract: %s"
                                 % (name, prec, i, prec, r.get("reason") or "?"))
                if r and r.get("tune", {}).get("error"):
                    notes.append("%s %s tune: %s" % (name, prec, one_line(r["tune"]["error"])))
    if not body:
        return "(no rows)"
    widths = [max(len(x) for x in col) for col in zip(head, *body)]

    def line(cells):  # names left-aligned, figures right-aligned, variant left
        return "  ".join(x.ljust(w) if i < 2 or i == len(cells) - 1 else x.rjust(w)
                         for i, (x, w) in enumerate(zip(cells, widths))).rstrip()
    out = [line(head), line(["-" * w for w in widths])] + [line(b) for b in body]
    out.append("")
    for prec, s in summary(rows).items():
        out.append("geomean %s: convtune %s vs cudnn (over %d shapes), %s vs cudnn_channels_last "
                   "(%d); convtune passed on %d of %d shapes"
                   % (prec, fmt_x(s["geomean_vs_cudnn"]), s["n_vs_cudnn"],
                      fmt_x(s["geomean_vs_cudnn_channels_last"]), s["n_vs_cudnn_channels_last"],
                      s["passed"], s["shapes"]))
    out.append("")
    out.append("mean ms, KernelBench protocol; '!' = fails its precision contract; vs X = X's "
               "mean / convtune's mean (> 1: convtune faster);")
    out.append("x floor = convtune's mean / max(memory floor, TF32 floor (tf32) or 3xTF32 "
               "floor (fp32)); [path] = not a tuned cubin (ct_forward_path).")
    out.append("cudnn = F.conv2d on NCHW; cudnn_cl = F.conv2d on x, w already channels_last, "
               "only the conv timed (no layout conversion); compile = torch.compile(F.conv2d).")
    if notes:
        out.append("")
        out.extend(notes)
    return "\n".join(out)


def plot(doc, suite_names, png_path, svg_path=None):
    """Bars of convtune's speed against cuDNN NCHW (cudnn mean / convtune
    mean) per shape in suite order, log-scale y, coloured by convtune's
    family, a line at 1.0x, one panel per precision; cudnn_channels_last and
    torch_compile against cuDNN NCHW as markers.  Returns the paths written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    rows = annotate(sort_rows(doc["rows"], suite_names))
    by = {row_key(r): r for r in rows}
    names = shape_order(rows, suite_names)
    precs = [p for p in PRECISIONS if any(r.get("precision") == p for r in rows)]
    if not names or not precs:
        return []
    families = []
    for r in rows:
        fam = r.get("family") if r.get("impl") == "convtune" else None
        if fam and fam not in families:
            families.append(fam)
    known = [f for f in FAMILY_COLORS if f in families]
    families = known + [f for f in families if f not in FAMILY_COLORS]
    colors = dict(FAMILY_COLORS)
    for i, f in enumerate(f for f in families if f not in FAMILY_COLORS):
        colors[f] = OTHER_COLORS[i % len(OTHER_COLORS)]

    fig, axes = plt.subplots(len(precs), 1, figsize=(max(9.0, 0.36 * len(names) + 2.5),
                                                     3.9 * len(precs) + 1.6),
                             sharex=True, squeeze=False)
    xs = list(range(len(names)))
    stats = summary(rows)
    for ax, prec in zip(axes[:, 0], precs):
        shown = [1.0]
        for x, name in zip(xs, names):
            c = by.get((name, prec, "convtune"))
            base = by.get((name, prec, "cudnn"))
            bmean = base.get("mean_ms") if base else None
            speed = c.get("speed_vs_cudnn") if c else None
            if speed:
                failed = not c.get("passes")
                ax.bar(x, speed - 1.0, bottom=1.0, width=0.75,
                       color=colors.get(c.get("family"), "#cccccc"),
                       edgecolor="#d62728" if failed else "black",
                       linewidth=1.2 if failed else 0.4, hatch="xx" if failed else None)
                ax.text(x, speed * (1.06 if speed >= 1 else 1 / 1.06),
                        "%.2f" % speed, rotation=90,
                        ha="center", va="bottom" if speed >= 1 else "top", fontsize=6.5,
                        color="#d62728" if failed else "black")
                shown.append(speed)
            elif c is not None or base is not None:
                why = "error" if c is None or c.get("error") else "no cudnn"
                ax.text(x, 1.0, why, rotation=90, ha="center", va="bottom", fontsize=6.5,
                        color="#d62728")
            for impl, marker, color in (("cudnn_channels_last", "_", "black"),
                                        ("torch_compile", ".", "#555555")):
                r = by.get((name, prec, impl))
                if r and r.get("mean_ms") and bmean:
                    s = bmean / r["mean_ms"]
                    ax.plot([x], [s], marker=marker, color=color, markersize=9, mew=1.5,
                            linestyle="none", zorder=3)
                    shown.append(s)
        ax.axhline(1.0, color="black", linewidth=0.9)
        ax.set_yscale("log")
        lo, hi = min(shown), max(shown)
        ax.set_ylim(lo / 2.5, hi * 3.5)  # room for the labels
        s = stats.get(prec, {})
        ax.set_title("%s: geomean %s over %d shapes (convtune passed on %d of %d)"
                     % (prec, fmt_x(s.get("geomean_vs_cudnn")), s.get("n_vs_cudnn", 0),
                        s.get("passed", 0), s.get("shapes", 0)), fontsize=9)
        ax.set_ylabel("speed vs cuDNN NCHW\n(cuDNN mean / mean, log)", fontsize=8)
        ax.grid(axis="y", which="both", linewidth=0.3, alpha=0.5)
        ax.tick_params(axis="y", labelsize=8)
    last = axes[-1, 0]
    last.set_xticks(xs)
    last.set_xticklabels(names, rotation=60, ha="right", fontsize=7.5)
    last.set_xlim(-0.7, len(names) - 0.3)
    handles = [Patch(facecolor=colors[f], edgecolor="black", linewidth=0.4, label=f)
               for f in families]
    handles += [Patch(facecolor="white", edgecolor="#d62728", hatch="xx",
                      label="fails its contract"),
                Line2D([], [], marker="_", color="black", linestyle="none", markersize=9,
                       mew=1.5, label="cudnn_channels_last (conv only)"),
                Line2D([], [], marker=".", color="#555555", linestyle="none", markersize=9,
                       label="torch.compile")]
    fig.legend(handles=handles, loc="lower center", ncol=min(6, len(handles)), fontsize=7.5,
               frameon=False)
    v = doc.get("versions", {})
    trials = sorted({r.get("trials") for r in rows if r.get("trials")})
    trials = "?" if not trials else str(trials[0]) if len(trials) == 1 else \
        "%d to %d" % (trials[0], trials[-1])
    fig.suptitle("convtune against cuDNN NCHW on %s (torch %s, cuDNN %s): bars are convtune, "
                 "coloured by family\nmean of %s trials each, KernelBench protocol; > 1: faster "
                 "than cuDNN" % (doc.get("gpu", "?"), v.get("torch", "?"), v.get("cudnn", "?"),
                                 trials), fontsize=9)
    fig.tight_layout(rect=(0, 0.035 + 0.012 * math.ceil(len(handles) / 6), 1, 1))
    written = []
    fig.savefig(png_path, dpi=130)
    written.append(png_path)
    if svg_path:
        fig.savefig(svg_path)
        written.append(svg_path)
    plt.close(fig)
    return written


def report(doc, suite_names, out_dir, slug, chart=True):
    """Prints the table of doc and writes the chart; returns the paths written."""
    print(table(doc["rows"], suite_names))
    if not chart:
        return []
    base = os.path.join(out_dir, "suite-%s" % slug)
    try:
        paths = plot(doc, suite_names, base + ".png", base + ".svg")
    except ImportError as e:
        print("suite: no chart (%s); pip install matplotlib, then run --report" % e,
              file=sys.stderr)
        return []
    for p in paths:
        print("wrote    %s" % p)
    return paths


# -------------------------------------------------------------------------
# convtune tune, as a subprocess

def run_tune(exe, spec, prec, budget, db, device, timeout_s, verbose=False):
    """`convtune tune --problem SPEC,prec=P --precision P --budget S --json`
    (with --db when given).  Its progress lines (stderr) are kept, the last
    few shown on failure (all of them with verbose); SIGTERM at timeout_s
    (the tuner stops cleanly, keeping what it finished), SIGKILL 30 s later.
    Returns a summary dict; "error" is set when no winner came of it."""
    cmd = [exe, "tune", "--problem", "%s,prec=%s" % (spec, prec), "--precision", prec,
           "--budget", "%g" % budget, "--device", str(device), "--json"]
    if db:
        cmd += ["--db", db]
    t0 = time.time()
    res = {"command": " ".join(cmd)}
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, errors="replace")
    except OSError as e:
        res["error"] = "cannot run %s: %s" % (exe, e)
        return res
    tail, out, n_lines = collections.deque(maxlen=6), [], [0]

    def read_err():
        for line in proc.stderr:
            line = line.rstrip("\n")
            tail.append(line)
            n_lines[0] += 1
            if verbose:
                print("      | " + line, flush=True)

    def read_out():
        out.append(proc.stdout.read())
    threads = [threading.Thread(target=read_err, daemon=True),
               threading.Thread(target=read_out, daemon=True)]
    for t in threads:
        t.start()
    timed_out = False
    try:
        try:
            rc = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            proc.send_signal(signal.SIGTERM)
            try:
                rc = proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                rc = proc.wait()
    except BaseException:  # interrupted: stop the tuner cleanly, then go
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        raise
    for t in threads:
        t.join(timeout=10)
    res["rc"] = rc
    res["wall_s"] = round(time.time() - t0, 1)
    text = "".join(out)
    j = None
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            try:
                j = json.loads(line)
            except ValueError:
                pass
            break
    if j:
        for k in ("search", "variants", "screened", "resumed", "compiled", "cached",
                  "restarts", "interrupted", "winner", "winner_mean_ms"):
            if k in j:
                res[k] = j[k]
        statuses = collections.Counter(t.get("status") for t in j.get("trials", []))
        res["trials"] = dict(statuses)
    if timed_out:
        res["error"] = "timed out after %.0f s: stopped with SIGTERM (finished trials are " \
                       "kept in the database)" % timeout_s
    elif rc != 0 or not res.get("winner"):
        last = " | ".join(t.strip() for t in tail if t.strip()) or "(no output)"
        res["error"] = "convtune tune exited %s: %s" % (rc, last[-600:])
    if res.get("error") and not verbose:
        for line in tail:
            print("      | " + line, flush=True)
    return res


def tune_text(t):
    if t.get("error"):
        return "FAILED (%s s): %s" % (t.get("wall_s", "?"), one_line(t["error"], 200))
    return "%s, %s ms, %s of %s screened, %.1f s" % (
        t.get("winner"), fmt_ms(t.get("winner_mean_ms")), t.get("screened", "?"),
        t.get("variants", "?"), t.get("wall_s", 0.0))


# -------------------------------------------------------------------------
# The GPU side: everything below needs torch (imported by _import_runtime)

def _import_runtime():
    """Imports torch, bench.py and convtune_ctypes (bench/ on sys.path)."""
    global torch, F, bench, ct
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    import torch as torch_
    import torch.nn.functional as F_

    import bench as bench_
    import convtune_ctypes as ct_
    torch, F, bench, ct = torch_, F_, bench_, ct_


def cuda_device(index):
    """Makes device `index` current and returns it as a torch.device."""
    torch.cuda.set_device(index)
    return torch.device("cuda", index)


def is_oom(e):
    return isinstance(e, getattr(torch.cuda, "OutOfMemoryError", ())) or \
        "out of memory" in str(e).lower()


def free_memory():
    gc.collect()
    torch.cuda.empty_cache()


def channel_blocks(K, groups, kb):
    """Output-channel ranges [k0, k1) of at most kb channels (at least one)
    covering 0..K-1 in order, none straddling a group boundary unless it
    spans whole groups: with kb >= K/groups, blocks of whole groups
    (kb rounded down to a multiple of K/groups); else blocks inside one
    group each.  With groups = 1: range(0, K, kb)."""
    kg = K // groups
    kb = max(1, kb)
    if kb >= kg:
        kb -= kb % kg
        return [(k0, min(K, k0 + kb)) for k0 in range(0, K, kb)]
    return [(k0, min(g0 + kg, k0 + kb)) for g0 in range(0, K, kg)
            for k0 in range(g0, g0 + kg, kb)]


def block_channels(K, C, groups, k0, k1):
    """(c0, c1, g): the input channels [c0, c1) that output channels
    [k0, k1) (a channel_blocks range) read, and the groups of the conv of
    x[:, c0:c1] with w[k0:k1] that computes them: the whole groups the
    range spans, or 1 for a range inside one group."""
    kg, cg = K // groups, C // groups
    g0, g1 = k0 // kg, (k1 - 1) // kg + 1
    g = 1 if g1 - g0 == 1 else g1 - g0
    assert g == 1 or (k0 % kg == 0 and k1 % kg == 0), (k0, k1, kg)
    return g0 * cg, g1 * cg, g


class Reference:
    """The float64 reference of one problem, computed in blocks of outputs
    (a slice of images, and of output channels when one image's outputs are
    more than CHUNK_ELEMS) so that no float64 temporary exceeds a few GB.

    Per block: ref = conv(x, w) + b and abs_sum = conv(|x|, |w|) + |b| in
    float64 (bench.reference_fp64's figures), and ||ref||^2.  sq_sum is
    needed only as its total A^2 (the Frobenius bound), which by linearity
    is sum(conv(x^2, sum_k w_k^2)) + N*P*Q*sum(b^2): a one-channel conv.

    Grouped problems (groups = G > 1, w (K, C/G, R, S)): an output-channel
    block spans whole groups (a conv of the input channels of those groups
    with their groups) or lies inside one group (a plain conv of that
    group's C/G input channels); see channel_blocks.  A^2 sums per group:
    sum(conv(x^2, W2, groups=G)) with W2[g] = sum of w_k^2 over the K/G
    output channels k of group g, a G-channel grouped conv (done a few
    groups at a time where its output would exceed chunk_elems).

    store=True keeps every block (16 bytes per output) so that each row's
    check only reads them; store=False keeps nothing and recomputes a
    block's ref and abs_sum each time a check needs it (two float64 convs
    per block per row)."""

    def __init__(self, problem, x, w, b, store, chunk_elems=None):
        chunk_elems = chunk_elems or CHUNK_ELEMS
        N, C, H, W = problem.n, problem.c, problem.h, problem.w
        K, G = problem.k, problem.groups
        P, Q = problem.output_hw()
        self.n_out = N * K * P * Q
        self.K, self.C, self.G = K, C, G
        self.args = bench.conv_args(problem)
        self.args.pop("groups")  # each conv below names its own
        self.x = x
        per_image = K * P * Q
        if per_image <= chunk_elems:
            nb = max(1, min(N, chunk_elems // per_image, X_CHUNK_BYTES // (16 * C * H * W)))
            kb = K
        else:
            nb, kb = 1, max(1, chunk_elems // (P * Q))
        self.blocks = [(n0, min(N, n0 + nb), k0, k1)
                       for n0 in range(0, N, nb) for k0, k1 in channel_blocks(K, G, kb)]
        self.w64 = w.double()
        self.wa64 = self.w64.abs()
        self.b64 = None if b is None else b.double()
        self.ba64 = None if b is None else self.b64.abs()
        # W2[g] = sum over group g's output channels of w_k^2: (G, C/G, R, S).
        w2sum = (self.w64 * self.w64).view(G, K // G, *self.w64.shape[1:]).sum(1)
        gb = max(1, min(G, chunk_elems // (nb * P * Q)))  # groups per A^2 conv
        cg = C // G
        self.stored = [] if store else None
        a2 = 0.0
        for n0, n1 in sorted({(blk[0], blk[1]) for blk in self.blocks}):
            x64 = x[n0:n1].double()
            xa = x64.abs()
            if store:
                for blk in self.blocks:
                    if blk[:2] == (n0, n1):
                        self.stored.append(self._block(x64, xa, blk))
            xa.mul_(xa)  # x^2
            for g0 in range(0, G, gb):
                g1 = min(G, g0 + gb)
                a2 += float(F.conv2d(xa[:, g0 * cg:g1 * cg], w2sum[g0:g1], None,
                                     groups=g1 - g0, **self.args).sum())
            del x64, xa
        if b is not None:
            a2 += N * P * Q * float((self.b64 * self.b64).sum())
        self.a2 = a2
        del w2sum

    def _block(self, x64, xa, blk):
        _, _, k0, k1 = blk
        c0, c1, g = block_channels(self.K, self.C, self.G, k0, k1)
        if (c0, c1) != (0, self.C):  # a grouped problem's block: its groups' channels
            x64, xa = x64[:, c0:c1], xa[:, c0:c1]
        ref = F.conv2d(x64, self.w64[k0:k1], None if self.b64 is None else self.b64[k0:k1],
                       groups=g, **self.args).contiguous()
        ab = F.conv2d(xa, self.wa64[k0:k1], None if self.ba64 is None else self.ba64[k0:k1],
                      groups=g, **self.args).contiguous()
        r = ref.view(-1)
        return ref, ab, float(torch.dot(r, r))

    def block(self, i):
        """(ref, abs_sum, ||ref||^2) of block i."""
        if self.stored is not None:
            return self.stored[i]
        n0, n1 = self.blocks[i][:2]
        x64 = self.x[n0:n1].double()
        return self._block(x64, x64.abs(), self.blocks[i])

    def free(self):
        self.stored = None
        self.x = self.w64 = self.wa64 = self.b64 = self.ba64 = None


def reference_bytes(problem):
    """GPU bytes a stored Reference takes: ref and abs_sum, float64."""
    _, _, _, ys = problem.shapes()
    return 16 * math.prod(ys)


def make_reference(problem, x, w, b, dev, cap_bytes):
    """A stored Reference when it fits beside what the rows will allocate
    (three outputs, a copy of x, 2 GiB of workspace, the check's
    temporaries) both in the free memory and under cap_bytes of total use;
    else (or when storing runs out of memory) a recomputing one.  Returns
    (reference, what, seconds)."""
    xs, _, _, ys = problem.shapes()
    need = reference_bytes(problem)
    reserve = 3 * 4 * math.prod(ys) + 4 * math.prod(xs) + 2 * GIB + 24 * CHUNK_ELEMS
    free, total = torch.cuda.mem_get_info(dev)
    store = need + reserve <= free - GIB and (total - free) + need + reserve <= cap_bytes
    t0 = time.time()
    if store:
        try:
            ref = Reference(problem, x, w, b, store=True)
            torch.cuda.synchronize()
            return ref, "stored %.1f GB" % (need / 1e9), time.time() - t0
        except Exception as e:  # noqa: BLE001
            if not is_oom(e):
                raise
        free_memory()
        t0 = time.time()
    ref = Reference(problem, x, w, b, store=False)
    torch.cuda.synchronize()
    return ref, "recomputed per check (%.1f GB would not fit)" % (need / 1e9), time.time() - t0


def check_output(y, ref, L, precision, headline):
    """bench.contract_check's verdict on y (any layout of the problem's
    output shape) against the Reference, block by block: the same figures
    and criteria (tuner/verify.h, bench.py's constants), accumulated over
    the blocks (max |y - ref|, the sums of the Frobenius terms, the largest
    elementwise ratio, the count of non-finite outputs)."""
    u_op = bench.CONTRACT[precision][0]
    elem_coef = 2.0 * u_op + (L + 1.0) * bench.U_ACC
    atol = bench.HEADLINE_FP32[1]
    n = ref.n_out
    n_nonfinite, max_abs_err, max_ratio, max_close, err2, ref2 = 0, 0.0, 0.0, 0.0, 0.0, 0.0
    errdot = 0.0
    for i, (n0, n1, k0, k1) in enumerate(ref.blocks):
        r, ab, r2 = ref.block(i)
        d = y[n0:n1, k0:k1].to(torch.float64, copy=True, memory_format=torch.contiguous_format)
        d.sub_(r)
        finite = torch.isfinite(d)
        bad = d.numel() - int(finite.sum())
        if bad:
            n_nonfinite += bad
            d.masked_fill_(~finite, 0.0)
            zero = torch.zeros((), dtype=r.dtype, device=r.device)
            r2 = float(torch.where(finite, r * r, zero).sum())
        del finite
        errdot += float(torch.dot(d.view(-1), r.reshape(-1)))
        d.abs_()
        ref2 += r2
        max_abs_err = max(max_abs_err, float(d.max()))
        dv = d.view(-1)
        err2 += float(torch.dot(dv, dv))
        t = torch.mul(ab, elem_coef)
        t.add_(1e-37)
        torch.div(d, t, out=t)
        max_ratio = max(max_ratio, float(t.max()))
        if headline and precision == "fp32":
            torch.abs(r, out=t)
            t.add_(1.0).mul_(atol)
            torch.div(d, t, out=t)
            max_close = max(max_close, float(t.max()))
        del d, t, r, ab, dv

    return bench.contract_verdict(err2=err2, ref2=ref2, a2=ref.a2, max_abs_err=max_abs_err,
                                  max_ratio=max_ratio, max_close=max_close,
                                  n_nonfinite=n_nonfinite, n=n, L=L, precision=precision,
                                  headline=headline, errdot=errdot)


def cuda_alive():
    try:
        torch.cuda.synchronize()
        return True
    except Exception:  # noqa: BLE001
        return False


def run_shape(name, spec, args, lib, dev, flush, rates, tune_exe, log):
    """Tunes (with --tune), then runs and checks every row of one shape.
    Returns (rows, fatal_message or None)."""
    fields = parse_spec(spec)
    problem = ct.Problem(**fields)
    lib_error = None
    try:
        problem = lib.parse(spec)
    except ct.ConvtuneError as e:  # e.g. a tensor beyond the 32-bit limit
        lib_error = "libconvtune refuses the problem: %s" % e
    specs = {p: lib.format(problem.copy(precision=ct.PRECISIONS[p])) for p in args.precisions}
    impls = [i for i in IMPLS if not (args.no_compile and i == "torch_compile")]
    date = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    fl = bench.floors(problem, rates)
    L = bench.reduction_length(problem)
    headline = bench.is_headline_shape(problem)

    def new_row(impl, prec):
        r = {"shape": name, "problem": specs[prec], "precision": prec, "impl": impl,
             "mean_ms": None, "median_ms": None, "min_ms": None, "max_ms": None,
             "max_abs_err": None, "rel_err": None, "passes": False,
             "floor_ms": fl["class_ms"][prec], "x_floor": None, "trials": args.trials,
             "date": date}
        if impl == "convtune":
            r.update(variant=None, family=None, path=None)
        if impl == "cudnn_channels_last":
            r["note"] = "x and w already channels_last; timed: the conv only"
        return r
    rows = {(i, p): new_row(i, p) for i in impls for p in args.precisions}

    def fail_all(msg, only=None):
        for (i, p), r in rows.items():
            if only is None or i == only:
                if "error" not in r and r.get("mean_ms") is None:
                    r["error"] = msg
        return [rows[(i, p)] for i in impls for p in args.precisions]

    tunes = {}
    if args.tune:
        for prec in args.precisions:
            if lib_error:
                tunes[prec] = {"error": "not tuned: " + lib_error}
                continue
            log("  tune %s %s (budget %g s) ..." % (name, prec, args.budget))
            t = run_tune(tune_exe, spec, prec, args.budget, args.db, args.device,
                         args.tune_timeout, args.verbose)
            tunes[prec] = t
            log("  tune %s %s: %s" % (name, prec, tune_text(t)))
    for prec, t in tunes.items():
        rows[("convtune", prec)]["tune"] = t
    if lib_error:
        fail_all(lib_error, only="convtune")

    state = {}
    try:
        t0 = time.time()
        x, w, b = bench.make_inputs(problem, args.seed, dev)
        state["inputs_s"] = time.time() - t0
        ref, ref_what, ref_s = make_reference(problem, x, w, b, dev, args.mem_cap_gib * GIB)
        log("  %s: inputs %.1f s, reference %s in %.1f s (%d blocks)"
            % (name, state["inputs_s"], ref_what, ref_s, len(ref.blocks)))
    except Exception as e:  # noqa: BLE001
        msg = "setup (inputs / float64 reference): %s: %s" % (type(e).__name__, e)
        x = w = b = ref = None
        free_memory()
        return fail_all(msg), (None if cuda_alive() else msg)

    ctx = None
    if not lib_error:
        try:
            ctx = lib.open(args.db, args.device)
        except ct.ConvtuneError as e:
            fail_all("ct_open: %s" % e, only="convtune")

    cargs = bench.conv_args(problem)

    def conv(xx, ww, bb):
        return F.conv2d(xx, ww, bb, **cargs)

    def conv_compiled(xx, ww, bb):  # its own function: torch.compile's cache entry
        return F.conv2d(xx, ww, bb, **cargs)
    lazy = {}

    def channels_last():
        if "cl" not in lazy:
            lazy["cl"] = (x.contiguous(memory_format=torch.channels_last),
                          w.contiguous(memory_format=torch.channels_last))
        return lazy["cl"]

    def compiled():
        if "compiled" not in lazy:
            lazy["compiled"] = torch.compile(conv_compiled)
        return lazy["compiled"]

    def make(impl, prec):
        tf32 = prec == "tf32"
        if impl == "convtune":  # an NHWC problem runs on the channels_last copies
            xx, ww = channels_last() if fields["layout"] else (x, w)
            return bench.convtune_row(lib, ctx, problem, prec, xx, ww, b,
                                      packed=args.packed), True
        if impl == "cudnn":
            return bench.pytorch_row(impl, prec, lambda: conv, (x, w, b), tf32, ""), tf32
        if impl == "cudnn_channels_last":
            xc, wc = channels_last()
            return bench.pytorch_row(impl, prec, lambda: conv, (xc, wc, b), tf32, ""), tf32
        return bench.pytorch_row(impl, prec, compiled, (x, w, b), tf32, ""), tf32

    fatal = None
    for impl in impls:
        for prec in args.precisions:
            r = rows[(impl, prec)]
            if fatal:
                r["error"] = "not run: " + fatal
            elif impl == "torch_compile" and lazy.get("compile_error"):
                r["error"] = "not run: torch.compile failed at %s: %s" % lazy["compile_error"]
            if r.get("error"):
                log("  %s %s %s: %s" % (name, prec, impl, row_text(r, 0.0)))
                continue
            t_row = time.time()
            call = y = row = None
            try:
                row, tf32 = make(impl, prec)
                with bench.cudnn_tf32(tf32):
                    call, y = row.setup()
                    if impl == "convtune":
                        r["path"], r["variant"] = ctx.forward_path(row.problem)
                        r["family"] = family_of(r["variant"])
                        if lib.has("ct_forward_reason"):
                            r["path_reason"] = ctx.forward_reason(row.problem)
                    torch.cuda.synchronize()
                    r.update(check_output(y, ref, L, prec, headline))
                    y = None
                    r.update(bench.time_call(call, args.trials, flush))
                r["x_floor"] = r["mean_ms"] / r["floor_ms"] if r.get("floor_ms") else None
            except Exception as e:  # noqa: BLE001 — a row that cannot run says why
                r["error"] = "%s: %s" % (type(e).__name__, str(e)[:2000])
                r["passes"] = False
                if impl == "torch_compile" and "compiled" in lazy and r.get("mean_ms") is None \
                        and r.get("max_abs_err") is None:  # failed before its first output
                    lazy["compile_error"] = (prec, one_line(r["error"]))
                if not cuda_alive():
                    fatal = "the CUDA context failed in %s %s %s: %s" % (
                        name, prec, impl, one_line(r["error"]))
            finally:
                call = y = row = None
                if impl == "cudnn_channels_last" and prec == args.precisions[-1]:
                    lazy.pop("cl", None)
                if r.get("error") and not fatal:
                    free_memory()
            log("  %s %s %s: %s" % (name, prec, impl, row_text(r, time.time() - t_row)))
    out = [rows[(i, p)] for i in impls for p in args.precisions]
    for r in out:
        if r.get("passes") and r.get("error"):
            r["passes"] = False
    if ctx is not None:
        try:
            ctx.close()
        except Exception:  # noqa: BLE001
            pass
    lazy.clear()
    if ref is not None:
        ref.free()
    x = w = b = ref = ctx = None  # the closures above hold these names: drop the tensors
    try:
        torch._dynamo.reset()  # the next shape compiles afresh: no recompile limit
    except Exception:  # noqa: BLE001
        pass
    if not fatal:
        free_memory()
    return out, fatal


def row_text(r, seconds):
    if r.get("error"):
        return "error: %s" % one_line(r["error"], 200)
    s = "%s ms  %s" % (fmt_ms(r.get("mean_ms")), "ok" if r.get("passes") else
                       "FAIL (%s)" % r.get("reason"))
    if r.get("impl") == "convtune":
        s += "  %s [%s]" % (r.get("variant") or "?", r.get("path") or "?")
    return s + "  (%.1f s)" % seconds


def git_revision():
    """(revision, dirty) of the checkout; (None, None) where git or the
    repository is missing.  Read-only (GIT_OPTIONAL_LOCKS=0: git status
    does not refresh the index)."""
    env = dict(os.environ, GIT_OPTIONAL_LOCKS="0")
    try:
        rev = subprocess.run(["git", "-C", REPO, "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=20, env=env)
        if rev.returncode != 0:
            return None, None
        st = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"],
                            capture_output=True, text=True, timeout=20, env=env)
        dirty = bool(st.stdout.strip()) if st.returncode == 0 else None
        return rev.stdout.strip(), dirty
    except (OSError, subprocess.SubprocessError):
        return None, None


# -------------------------------------------------------------------------
# Main

def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="suite.py",
        description="convtune beside cuDNN (NCHW, channels_last) and torch.compile over a "
                    "suite of conv2d shapes: contract-checked against float64, timed with the "
                    "KernelBench protocol; writes <out>/suite-<gpu>.json (merged per shape) "
                    "and a chart.",
        epilog="--help, --report and the suite-file parser need neither torch nor a GPU.")
    ap.add_argument("--suite", metavar="FILE", default=DEFAULT_SUITE,
                    help="suite file: NAME SPEC per line, # comments (default "
                         "bench/suites/public.txt)")
    ap.add_argument("--only", metavar="NAMES", help="comma list of shape names or fnmatch "
                    "patterns (r50-l1-*) to run, in suite order (default: all)")
    ap.add_argument("--precision", metavar="LIST", default="tf32,fp32",
                    help="comma list of precisions, tf32 and/or fp32 (default tf32,fp32)")
    ap.add_argument("--tune", action="store_true", help="run `convtune tune` for each shape "
                    "and precision before measuring it")
    ap.add_argument("--budget", type=float, default=20.0, metavar="S",
                    help="--budget of each tune, seconds (default 20)")
    ap.add_argument("--tune-timeout", type=float, metavar="S",
                    help="stop a tune (SIGTERM) after S seconds (default 4 x budget + 120)")
    ap.add_argument("--convtune", metavar="PATH", default=DEFAULT_CONVTUNE,
                    help="the convtune CLI for --tune (default build/tuner/convtune)")
    ap.add_argument("--lib", metavar="PATH", help="libconvtune (default $CONVTUNE_LIB, else "
                    "build/runtime/libconvtune.so)")
    ap.add_argument("--db", metavar="PATH", help="tuning database, for the tunes and the "
                    "library (default as ct_open: $CONVTUNE_DB, else ~/.cache/convtune/tuning.db)")
    ap.add_argument("--trials", type=int, default=100, help="timed trials per row (100)")
    ap.add_argument("--no-compile", action="store_true", help="leave out torch_compile")
    ap.add_argument("--packed", action="store_true",
                    help="the convtune rows through weights packed once (ct_weights_pack, "
                         "ct_forward_packed; the row says packed: true), into "
                         "suite-<gpu>-packed.json")
    ap.add_argument("--out", metavar="DIR", default=DEFAULT_OUT,
                    help="folder of suite-<gpu>.json, .png, .svg (default bench/results)")
    ap.add_argument("--seed", type=int, default=0, help="torch.manual_seed for the inputs (0)")
    ap.add_argument("--device", type=int, default=0, help="CUDA device index (0)")
    ap.add_argument("--mem-cap-gib", type=float, default=MEM_CAP_GIB, metavar="G",
                    help="keep the float64 reference stored only while total GPU use stays "
                         "under G GiB, else recompute it per check (default %d)" % MEM_CAP_GIB)
    ap.add_argument("--no-chart", action="store_true", help="write no chart")
    ap.add_argument("--report", action="store_true", help="no GPU, no torch: print the table "
                    "and write the chart from the JSON in --out")
    ap.add_argument("--gpu", metavar="SLUG", help="with --report: which suite-<SLUG>.json "
                    "(default: the only one in --out)")
    ap.add_argument("--merge", metavar="JSON", nargs="+", help="with --report: first merge "
                    "these suite JSON files (of runs in parts, in order: a later file's rows "
                    "replace an earlier one's) into <out>/suite-<gpu>.json")
    ap.add_argument("--verbose", action="store_true", help="show every line the tunes print")
    a = ap.parse_args(argv)
    a.precisions = []
    for p in (s.strip() for s in a.precision.split(",")):
        if p not in PRECISIONS:
            ap.error("--precision: %r is not tf32 or fp32" % p)
        if p not in a.precisions:
            a.precisions.append(p)
    if a.trials < 1:
        ap.error("--trials must be >= 1")
    if not a.budget > 0:
        ap.error("--budget must be > 0")
    if a.tune_timeout is None:
        a.tune_timeout = 4 * a.budget + 120
    try:
        a.suite_entries = read_suite(a.suite)
        a.shapes = select_shapes(a.suite_entries, a.only)
    except (OSError, ValueError) as e:
        ap.error(str(e))
    if not a.shapes and not a.report:
        ap.error("the suite %s has no shapes" % a.suite)
    if a.merge and not a.report:
        ap.error("--merge goes with --report")
    return a


def log(msg):
    print(msg, flush=True)


def merge_docs(docs, suite_names=()):
    """One suite document from several (in order: later rows replace
    earlier ones with the same shape, precision and impl); the header is
    the last document's, "runs" all of theirs."""
    out = {"rows": [], "runs": []}
    for d in docs:
        rows = merge_rows(out["rows"], d.get("rows", []), suite_names)
        runs = out["runs"] + [r for r in d.get("runs", []) if r not in out["runs"]]
        out.update(d)
        out["rows"], out["runs"] = annotate(rows), runs
    return out


def main_report(args):
    names = [n for n, _ in args.suite_entries]
    if args.merge:
        docs = []
        for path in args.merge:
            d = load_doc(path, move_bad=False)
            if d is None:
                print("suite: --merge: no usable suite JSON at %s" % path, file=sys.stderr)
                return 2
            docs.append(d)
        slugs = {d.get("gpu_slug") for d in docs}
        if len(slugs) != 1 or None in slugs:
            print("suite: --merge: the files are from different GPUs (or say none): %s"
                  % ", ".join(sorted(str(x) for x in slugs)), file=sys.stderr)
            return 2
        doc = merge_docs(docs, names)
        doc["updated"] = datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds")
        slug = slugs.pop()
        path = os.path.join(args.out, "suite-%s.json" % slug)
        merged = [os.path.abspath(m) for m in args.merge]
        if os.path.exists(path) and os.path.abspath(path) not in merged:
            print("suite: --merge: %s exists and is not among the files merged: add it "
                  "(first) or choose another --out" % path, file=sys.stderr)
            return 2
        write_json_atomic(path, doc)
        print("wrote    %s (%d rows from %d files)" % (path, len(doc["rows"]), len(docs)))
        report(doc, names, args.out, slug, chart=not args.no_chart)
        return 0
    if args.gpu:
        path = os.path.join(args.out, "suite-%s.json" % args.gpu)
    else:
        found = sorted(glob.glob(os.path.join(args.out, "suite-*.json")))
        if len(found) != 1:
            print("suite: --report needs --gpu SLUG: %s suite JSON files in %s"
                  % (len(found) or "no", args.out), file=sys.stderr)
            return 2
        path = found[0]
    doc = load_doc(path, move_bad=False)
    if doc is None:
        print("suite: no usable suite JSON at %s" % path, file=sys.stderr)
        return 2
    slug = os.path.basename(path)[len("suite-"):-len(".json")]
    report(doc, names, args.out, slug, chart=not args.no_chart)
    return 0


def main(argv=None):
    args = parse_args(argv)
    if args.report:
        return main_report(args)
    try:
        _import_runtime()
    except ImportError as e:
        print("suite: a GPU run needs PyTorch (with CUDA): %s; --help and --report need "
              "neither" % e, file=sys.stderr)
        return 1
    try:
        lib = ct.load(args.lib)
    except (OSError, ct.ConvtuneError) as e:
        print("suite: %s" % e, file=sys.stderr)
        return 1
    if not torch.cuda.is_available():
        print("suite: PyTorch sees no CUDA device; the suite needs a GPU", file=sys.stderr)
        return 1
    tune_exe = os.path.abspath(args.convtune)
    if args.tune and not os.access(tune_exe, os.X_OK):
        print("suite: --tune needs the convtune CLI, not found at %s (build it, or pass "
              "--convtune PATH)" % tune_exe, file=sys.stderr)
        return 1

    def on_term(signum, frame):
        raise KeyboardInterrupt("SIGTERM")
    signal.signal(signal.SIGTERM, on_term)

    dev = cuda_device(args.device)
    torch.backends.cudnn.allow_tf32 = True  # each row sets its own (bench.cudnn_tf32)
    machine = bench.machine_info(args.device)
    # Packed rows go to a file of their own (suite-<gpu>-packed.json): the
    # rows merge by shape, precision and impl, and must not replace the
    # plain ones.
    slug = bench.gpu_slug(machine["gpu"]) + ("-packed" if args.packed else "")
    rev, dirty = git_revision()
    versions = {"torch": machine["torch"], "cuda": machine["torch_cuda"],
                "cudnn": machine["cudnn"], "driver": machine["driver"],
                "cuda_driver_api": machine["cuda_driver_api"], "python": machine["python"],
                "convtune": rev, "convtune_dirty": dirty, "library": lib.path}
    json_path = os.path.join(args.out, "suite-%s.json" % slug)
    names = [n for n, _ in args.suite_entries]
    doc = load_doc(json_path) or {"rows": [], "runs": []}
    start = time.time()
    date = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")

    print("GPU      %s (sm_%s, %d SMs, %.0f GiB), device %d; driver %s"
          % (machine["gpu"], machine["compute_capability"].replace(".", ""),
             machine["sm_count"], machine["memory_gib"], args.device, machine["driver"] or "?"))
    print("versions torch %s, CUDA %s, cuDNN %s, convtune %s%s"
          % (versions["torch"], versions["cuda"], versions["cudnn"], (rev or "?")[:12],
             " (dirty)" if dirty else ""))
    print("library  %s; database %s" % (lib.path, bench.db_description(args.db)))
    print("suite    %s: %d of %d shapes x %s%s"
          % (args.suite, len(args.shapes), len(args.suite_entries),
             ",".join(args.precisions),
             "; tune --budget %g s each (timeout %g s)" % (args.budget, args.tune_timeout)
             if args.tune else "; no tuning (what the database has)"))
    print("timing   KernelBench protocol: %d MiB flush, %d warm-up calls, 1 discarded trial, "
          "mean of %d" % (bench.FLUSH_BYTES >> 20, bench.WARMUP_CALLS, args.trials))
    print("output   %s (merged with %d rows already there)" % (json_path, len(doc["rows"])))
    print(flush=True)

    print("measuring the copy and matrix rates for the floors ...", flush=True)
    rates = bench.measure_rates()
    free_memory()
    print("rates    copy %.2f TB/s; matrix TF32 %.0f TFLOP/s, fp32 %.1f TFLOP/s\n"
          % (rates["copy_bytes_per_s"] / 1e12, rates["tf32_flop_per_s"] / 1e12,
             rates["fp32_flop_per_s"] / 1e12), flush=True)
    flush = torch.empty(bench.FLUSH_BYTES // 8, dtype=torch.int64, device=dev)

    run = {"date": date, "shapes": [n for n, _ in args.shapes], "precisions": args.precisions,
           "trials": args.trials, "seed": args.seed, "tune": args.tune,
           "budget_s": args.budget if args.tune else None, "versions": versions,
           "rates": rates, "database": bench.db_description(args.db),
           "suite": os.path.relpath(args.suite, REPO)}
    doc.setdefault("runs", []).append(run)
    doc.update({
        "kind": "convtune suite", "gpu": machine["gpu"], "gpu_slug": slug,
        "versions": versions, "machine": machine, "rates": rates, "trials": args.trials,
        "protocol": "KernelBench: %d MiB written before each trial, CUDA events on the current "
                    "stream, synchronize per trial, %d untimed warm-up calls, 1 discarded "
                    "trial, then mean / median / min / max of the next `trials`"
                    % (bench.FLUSH_BYTES >> 20, bench.WARMUP_CALLS),
        "contract": "tuner/verify.h as bench.py checks it, against a float64 reference (F.conv2d "
                    "in float64) computed once per shape; passes = every output finite and "
                    "within the elementwise and Frobenius bounds (ratios <= 1 pass; null = not "
                    "finite)",
        "floors": "floor_ms = max(memory floor, compute floor): memory = (x + y + w + b bytes) / "
                  "copy rate; compute = TF32 FLOPs / TF32 matrix rate (tf32 rows), min(fp32, "
                  "3 x TF32) (fp32 rows), as bench.py's floors()",
        "legend": LEGEND,
    })

    new_rows, failed, fatal, interrupted = [], [], None, False
    try:
        for i, (name, spec) in enumerate(args.shapes, 1):
            t0 = time.time()
            log("[%d/%d] %s  %s" % (i, len(args.shapes), name, spec))
            rows, fatal = run_shape(name, spec, args, lib, dev, flush, rates, tune_exe, log)
            new_rows += rows
            doc["rows"] = annotate(merge_rows(doc["rows"], rows, names))
            doc["updated"] = datetime.datetime.now(datetime.timezone.utc).isoformat(
                timespec="seconds")
            write_json_atomic(json_path, doc)
            ct_rows = [r for r in rows if r["impl"] == "convtune"]
            failed += ["%s %s" % (name, r["precision"]) for r in ct_rows if not r.get("passes")]
            speeds = ", ".join("%s %s" % (r["precision"], fmt_x(r.get("speed_vs_cudnn")))
                               for r in doc["rows"] if r.get("shape") == name
                               and r.get("impl") == "convtune")
            log("[%d/%d] %s done: %s; convtune %s vs cudnn; %.1f s (run %.0f s)\n"
                % (i, len(args.shapes), name,
                   ", ".join("%s %s %s" % (r["impl"], r["precision"], verdict(r)) for r in rows
                             if verdict(r) != "ok") or "all ok",
                   speeds or "-", time.time() - t0, time.time() - start))
            if fatal:
                print("suite: stopping: %s" % fatal, file=sys.stderr)
                break
    except KeyboardInterrupt as e:
        interrupted = True
        print("\nsuite: interrupted (%s); the shapes finished are in %s"
              % (e or "SIGINT", json_path), file=sys.stderr)

    print()
    if doc["rows"]:
        report(doc, names, args.out, slug, chart=not args.no_chart)
    if new_rows:
        print("wrote    %s (%d rows, %d from this run) in %.0f s"
              % (json_path, len(doc["rows"]), len(new_rows), time.time() - start))
    else:
        print("suite: no shape finished; %s not written" % json_path, file=sys.stderr)
    if failed:
        print("\nsuite: convtune did not pass on %s (see above)" % ", ".join(failed),
              file=sys.stderr)
    if interrupted:
        return 130
    return 1 if failed or fatal else 0


if __name__ == "__main__":
    sys.exit(main())
