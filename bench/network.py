#!/usr/bin/env python3
"""network.py — whole networks on one GPU: torchvision models whose
convolutions run on convtune (convtune.torch.patch, eval-mode BatchNorms
folded into them, the residual additions and ReLUs after them fused; NCHW,
and NHWC on the channels_last model) against PyTorch eager (NCHW and channels_last) and
torch.compile, at tf32 and at fp32, in one process on the same inputs.

Each row is one forward pass of a model in eval mode under
torch.no_grad(), checked against the same model in float64 on the same
input and timed with the KernelBench protocol (bench.py's time_call: L2
flushed before each trial, CUDA events, one discarded trial, the mean of
--trials).  Precision: tf32 sets torch.backends.cudnn.allow_tf32 and
torch.backends.cuda.matmul.allow_tf32 (PyTorch's default for convolutions;
matmul too, so the classifier runs alike in every row), fp32 clears both;
the patched model's convolutions follow cudnn.allow_tf32 ("auto").
A row passes when its output is finite and its relative error
||y - ref|| / ||ref|| is at most max(4 x eager NCHW's at that precision,
1e-4 for tf32 or 1e-6 for fp32): no less accurate than PyTorch's own
path, within the spread of summation orders.

The weights are torchvision's random initialisation (no downloads), with
the BatchNorm statistics and affine parameters drawn at random from the
seed, so that folding them changes the weights.  --tune first runs
convtune.torch.tune on each model, batch and precision; the JSON's
models[<model>:<batch>].tune keeps, per precision and layout, the wall
time (the cost of tuning a network), the problems tuned and skipped, the
winners per family and each problem's winner with its time.

    python3 bench/network.py [--models resnet50:32,resnet50:1,vgg16_bn:8]
                             [--precision tf32,fp32] [--tune] [--budget S]
                             [--db PATH] [--lib PATH] [--trials 100]
                             [--impls eager,eager_channels_last,torch_compile,convtune,
                                      convtune_channels_last]
                             [--no-compile] [--compile-mode MODE] [--no-pack]
                             [--no-fuse-residual] [--grouped] [--out DIR] [--seed 0]
                             [--device 0]
    python3 bench/network.py --merge RUN.json [RUN.json ...] [--out DIR]

The convtune rows run the model patched with pack_weights=True (each
convolution's weights packed once, no weight pass in its calls); --no-pack
patches without it.  --no-fuse-residual tunes and patches with
fuse_residual=False (each residual addition and the ReLU after it left to
PyTorch), to measure what the fusion gives; write those rows to another
--out, since rows merge by model, batch, impl and precision.  --grouped
tunes and patches its grouped and
depthwise convolutions too (grouped=True: e.g. mobilenet_v2:32, whose
depthwise layers run on dw or dwc); without it they stay PyTorch's.

Each row also carries conv_floor_ms, the floor of the model's convolutions
alone at its precision (bench.py's floors, max(memory, compute) of each
problem convtune.torch.collect lists, times its calls, from the copy and
matrix rates measured at the start), and x_conv_floor = mean_ms /
conv_floor_ms: the other layers (pooling, additions, the classifier, and
eager's BatchNorms and ReLUs) are not in the floor, so the ratio bounds how
far the convolutions are from theirs from above.

Writes <out>/network-<gpu>.json (rows merged by model, batch, impl and
precision, so runs in parts add up) with rows {model, batch, impl,
precision, date, mean_ms, median_ms, min_ms, max_ms, passes, max_abs_err,
rel_err, bias, conv_floor_ms, x_conv_floor, speed_vs_best_pytorch} (date:
when the run that measured the row started, so that rows merged from
several runs say which is which; a row replaces the one with its key
unless that one is dated later, and so do a model's record, each
precision's tune record of it and the file's own fields) and, with
matplotlib, network-<gpu>.png.  --merge runs
nothing: it merges the files that runs on other machines or in other
directories wrote (a run per call where one call cannot hold them all)
into <out>'s file, as if each run had written there: in any order, since
the later measurement of a row wins.  The file is rewritten after every
row, so a run cut off keeps the rows it measured.
Exits 1 when a convtune row fails its check or cannot run.
"""

import argparse
import copy
import datetime
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from suite import gpu_slug, write_json_atomic  # noqa: E402  (no torch: --merge runs without it)

DEFAULT_MODELS = "resnet50:32,resnet50:1,vgg16_bn:8"
IMPLS = ("eager", "eager_channels_last", "torch_compile", "convtune", "convtune_channels_last")
PYTORCH_IMPLS = IMPLS[:3]
REL_FLOOR = {"tf32": 1e-4, "fp32": 1e-6}
REL_FACTOR = 4.0

# Filled by _import_runtime(): torch, torchvision, bench.py, convtune.torch.
torch = torchvision = bench = ct = None


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default=DEFAULT_MODELS,
                   help="comma list of torchvision model:batch (default %s)" % DEFAULT_MODELS)
    p.add_argument("--precision", default="tf32,fp32", help="tf32 and/or fp32")
    p.add_argument("--tune", action="store_true",
                   help="tune each model's convolutions first (convtune.torch.tune)")
    p.add_argument("--budget", type=float, default=None,
                   help="--budget of each problem's tune, seconds (default: full search)")
    p.add_argument("--db", default=None, help="tuning database (default as ct_open)")
    p.add_argument("--lib", default=None, help="libconvtune (default $CONVTUNE_LIB, the build)")
    p.add_argument("--trials", type=int, default=100, help="timed trials per row")
    p.add_argument("--impls", default=",".join(IMPLS),
                   help="comma list of rows to run (default all: %s); eager always runs, "
                        "the reference of the accuracy rule" % ",".join(IMPLS))
    p.add_argument("--no-compile", action="store_true",
                   help="leave out torch.compile (the torch_compile row)")
    p.add_argument("--compile-mode", default="max-autotune-no-cudagraphs",
                   help="torch.compile's mode (default %(default)s)")
    p.add_argument("--no-pack", action="store_true",
                   help="patch without pack_weights (a weight pass in every call)")
    p.add_argument("--no-fuse-residual", action="store_true",
                   help="tune and patch with fuse_residual=False (the residual additions "
                        "left to PyTorch)")
    p.add_argument("--grouped", action="store_true",
                   help="tune and patch grouped and depthwise convolutions too "
                        "(convtune.torch's grouped=True; e.g. mobilenet_v2:32)")
    p.add_argument("--out", default=os.path.join(HERE, "results"))
    p.add_argument("--merge", nargs="+", metavar="JSON",
                   help="run nothing: merge these results files (runs in parts, in order) "
                        "into --out's file of their GPU")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", type=int, default=0)
    args = p.parse_args(argv)
    if args.merge:  # runs nothing: the run's options do not matter
        return args
    args.model_list = []
    for item in args.models.split(","):
        name, _, batch = item.strip().partition(":")
        if not name or not batch.isdigit() or int(batch) < 1:
            p.error("--models: %r is not model:batch" % item)
        args.model_list.append((name, int(batch)))
    args.precisions = [s.strip() for s in args.precision.split(",") if s.strip()]
    if not args.precisions or any(s not in ("tf32", "fp32") for s in args.precisions):
        p.error("--precision: tf32 and/or fp32, not %r" % args.precision)
    if args.trials < 1:
        p.error("--trials must be >= 1")
    args.impls = {s.strip() for s in args.impls.split(",") if s.strip()}
    if not args.impls <= set(IMPLS):
        p.error("--impls: a comma list of %s, not %r" % (", ".join(IMPLS), args.impls))
    args.impls.add("eager")
    if args.no_compile:
        args.impls.discard("torch_compile")
    if args.tune and not args.impls & {"convtune", "convtune_channels_last"}:
        p.error("--tune tunes for the convtune rows, which --impls leaves out")
    return args


def _import_runtime(lib_path):
    global torch, torchvision, bench, ct
    if lib_path:
        os.environ["CONVTUNE_LIB"] = lib_path
    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import torch as torch_
    import torchvision as torchvision_
    import bench as bench_
    import convtune.torch as ct_
    torch, torchvision, bench, ct = torch_, torchvision_, bench_, ct_


def set_precision(prec):
    tf32 = prec == "tf32"
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32


def make_model(name, seed, dev):
    """torchvision's `name` with random weights, its BatchNorms' statistics
    and affine parameters drawn from `seed`, in eval mode on dev."""
    if not hasattr(torchvision.models, name):
        raise ValueError("torchvision.models has no %r" % name)
    torch.manual_seed(seed)
    model = getattr(torchvision.models, name)(weights=None)
    g = torch.Generator().manual_seed(seed + 1)
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            n = m.num_features
            m.running_mean.copy_(0.2 * torch.rand(n, generator=g) - 0.1)
            m.running_var.copy_(0.5 + torch.rand(n, generator=g))
            m.weight.data.copy_(0.5 + 0.5 * torch.rand(n, generator=g))
            m.bias.data.copy_(0.2 * torch.rand(n, generator=g) - 0.1)
    return model.eval().to(dev)


def check(y, ref):
    """(passes-before-the-relative-rule, max_abs_err, rel_err, bias) of y
    against the float64 ref; bias = sum (y - ref) * ref / sum ref^2, the
    part of the error that scales the output (bench.contract_verdict)."""
    y64 = y.double()
    finite = bool(torch.isfinite(y64).all())
    err = (y64 - ref).nan_to_num(nan=math.inf)
    max_abs = float(err.abs().max())
    rel = float(err.norm() / ref.norm())
    bias = float((err * ref).sum() / (ref * ref).sum()) if finite else None
    return finite, max_abs, rel, bias


def conv_floor_ms(model, x, prec, rates):
    """The sum over model's convolutions (one forward pass on x, calls
    counted, grouped ones too; BatchNorms folded as patch(grouped=True)
    does) of each one's floor at prec."""
    listed = ct.collect(model, x, precision=prec, fuse_residual=True, grouped=True)
    lib = ct.library()
    return sum(e["calls"] * bench.floors(lib.parse(e["spec"]), rates)["class_ms"][prec]
               for e in listed["problems"])


def run_rows(name, batch, args, dev, flush, rates, log, progress=lambda rows, extra: None):
    """Every impl of one model and batch at each precision: rows (dicts)
    and the model's record; progress(rows, extra) after each row, so that
    a run cut off keeps the rows it measured."""
    model = make_model(name, args.seed, dev)
    torch.manual_seed(args.seed + 2)
    x = torch.randn(batch, 3, 224, 224, device=dev)
    with torch.no_grad():
        ref = copy.deepcopy(model).double()(x.double())
    rows, tune_info, extra = [], {}, {}
    model_cl = copy.deepcopy(model).to(memory_format=torch.channels_last)
    x_cl = x.contiguous(memory_format=torch.channels_last)
    # The convtune rows: NCHW on the model as it is, NHWC (layout=nhwc
    # problems) on its channels_last copy, each tuned on its own input.
    ours = [(impl, m, inp) for impl, m, inp in (("convtune", model, x),
                                                ("convtune_channels_last", model_cl, x_cl))
            if impl in args.impls]
    for impl, m, inp in ours if args.tune else ():
        for prec in args.precisions:
            set_precision(prec)
            t0 = time.time()
            res = ct.tune(m, inp, budget=args.budget, precision=prec, db=args.db, quiet=True,
                          fuse_residual=not args.no_fuse_residual, grouped=args.grouped)
            key = prec if impl == "convtune" else prec + "_channels_last"
            tune_info[key] = dict(tune_summary(res["result"]),
                                  wall_s=round(time.time() - t0, 1))
            log("  tuned %s b%d %s: %s" % (name, batch, key, {
                k: v for k, v in tune_info[key].items() if k != "winners"}))
    impls = {"eager": (model, x)}
    for impl, m, inp in ours:
        patched, report = ct.patch(m, pack_weights=not args.no_pack,
                                   fuse_residual=not args.no_fuse_residual, grouped=args.grouped)
        extra = {"replaced": len(report["replaced"]), "pack_weights": not args.no_pack,
                 "grouped": args.grouped, "fuse_residual": not args.no_fuse_residual,
                 "folded_bn": sum(1 for r in report["replaced"] if r["folded_bn"]),
                 "fused_relu": sum(1 for r in report["replaced"] if r["fused_relu"]),
                 "fused_residual": sum(1 for r in report["replaced"] if r["fused_residual"]),
                 "residual_inplace": sum(1 for r in report["replaced"]
                                         if r["fused_residual"] and r["fused_residual"]["inplace"]),
                 "left": report["left"], "tune": tune_info}
        log("  patched %s: %d convolutions replaced, %d BatchNorms folded, %d ReLUs fused, "
            "%d additions fused (%d in place), %d left"
            % (name, extra["replaced"], extra["folded_bn"], extra["fused_relu"],
               extra["fused_residual"], extra["residual_inplace"], len(report["left"])))
        impls[impl] = (patched, inp)
    if "eager_channels_last" in args.impls:
        impls["eager_channels_last"] = (model_cl, x_cl)
    if "torch_compile" in args.impls:
        impls["torch_compile"] = (torch.compile(model, mode=args.compile_mode), x)
    for prec in args.precisions:
        set_precision(prec)
        eager_rel = None
        floor = conv_floor_ms(model, x, prec, rates)
        log("  floor of the convolutions at %s: %.4f ms" % (prec, floor))
        for impl in IMPLS:
            if impl not in impls:
                continue
            fn, inp = impls[impl]
            row = {"model": name, "batch": batch, "impl": impl, "precision": prec,
                   "passes": False, "conv_floor_ms": floor}
            try:
                with torch.no_grad():
                    y = fn(inp)
                    torch.cuda.synchronize()
                    finite, max_abs, rel, bias = check(y, ref)
                    del y
                    timing = bench.time_call(lambda: fn(inp), args.trials, flush)
            except (RuntimeError, ValueError) as e:  # ct.UnsupportedError is a ValueError
                row["error"] = "%s: %s" % (type(e).__name__, e)
                rows.append(row)
                log("  %-22s %s %s: %s" % (impl, prec, name, row["error"]))
                progress(rows, extra)
                continue
            if impl == "eager":
                eager_rel = rel
            limit = max(REL_FACTOR * eager_rel if eager_rel is not None else 0.0,
                        REL_FLOOR[prec])
            row.update(timing)
            row.update(max_abs_err=max_abs, rel_err=rel, bias=bias, rel_limit=limit,
                       passes=finite and rel <= limit, x_conv_floor=row["mean_ms"] / floor)
            rows.append(row)
            log("  %-22s %s b%-3d %-5s %9.4f ms  rel %.2e  %s"
                % (impl, name, batch, prec, row["mean_ms"], rel,
                   "ok" if row["passes"] else "FAILS"))
            progress(rows, extra)
    del impls, model, model_cl, ref
    torch.cuda.empty_cache()
    return rows, extra


def tune_summary(result):
    """A tune's record from `convtune tune --problems --json`'s result:
    how many problems it had, tuned and skipped (tuned before), how many
    winners each family has (calls counted once per problem), and each
    problem's winner with its time."""
    problems = result.get("problems", [])
    statuses = [r.get("status") for r in problems]
    families = {}
    for r in problems:
        if r.get("winner"):
            fam = r["winner"].split(":", 1)[0]
            families[fam] = families.get(fam, 0) + 1
    return {"problems": len(problems), "tuned": statuses.count("tuned"),
            "skipped": statuses.count("skipped"),
            "families": dict(sorted(families.items(), key=lambda kv: (-kv[1], kv[0]))),
            "winners": [{"problem": r.get("problem"), "calls": r.get("calls"),
                         "winner": r.get("winner"), "winner_mean_ms": r.get("winner_mean_ms")}
                        for r in problems]}


def add_ratios(rows):
    """speed_vs_best_pytorch: the best passing PyTorch row's mean over the
    row's mean, per (model, batch, precision)."""
    for r in rows:
        if "mean_ms" not in r:
            continue
        best = [o["mean_ms"] for o in rows
                if o["impl"] in PYTORCH_IMPLS and "mean_ms" in o and o.get("passes") and
                (o["model"], o["batch"], o["precision"]) == (r["model"], r["batch"],
                                                             r["precision"])]
        r["speed_vs_best_pytorch"] = min(best) / r["mean_ms"] if best else None


def merge_models(old, new):
    """The models record of old with new's: a model's entry replaced unless
    old's is dated later, its tune record keeping the precisions and layouts
    new did not tune (a run per precision keeps both) and those that old
    tuned later."""
    merged = dict(old)
    for key, entry in new.items():
        prev = old.get(key, {})
        tune = dict(prev.get("tune") or {})
        for prec, record in (entry.get("tune") or {}).items():
            put_later(tune, prec, record)
        merged[key] = dict(entry if key not in old or replaces(entry, prev) else prev, tune=tune)
    return merged


def replaces(new, old):
    """Whether record new (a row, or a tune record) replaces old with its
    key: unless both carry an ISO date and old's is the later (a file of an
    earlier run, merged after a later one, carries its copies of rows that
    the later run measured again), it does."""
    try:
        return datetime.datetime.fromisoformat(new["date"]) >= \
            datetime.datetime.fromisoformat(old["date"])
    except (KeyError, TypeError, ValueError):
        return True


def put_later(records, key, record):
    """records[key] = record, unless the record there is dated later."""
    if key not in records or replaces(record, records[key]):
        records[key] = record


def merge(old_rows, new_rows):
    key = lambda r: (r["model"], r["batch"], r["impl"], r["precision"])  # noqa: E731
    merged = {key(r): r for r in old_rows}
    for r in new_rows:
        put_later(merged, key(r), r)
    return list(merged.values())


def table(rows):
    lines = ["%-10s %5s %-5s %-22s %10s %9s %8s %8s %s"
             % ("model", "batch", "prec", "impl", "mean ms", "rel err", "vs best",
                "x floor", "")]
    for r in sorted(rows, key=lambda r: (r["model"], r["batch"], r["precision"],
                                         IMPLS.index(r["impl"]))):
        if "mean_ms" not in r:
            lines.append("%-10s %5d %-5s %-22s %s" % (r["model"], r["batch"], r["precision"],
                                                      r["impl"], r.get("error", "not run")))
            continue
        v, fx = r.get("speed_vs_best_pytorch"), r.get("x_conv_floor")
        lines.append("%-10s %5d %-5s %-22s %10.4f %9.2e %8s %8s %s"
                     % (r["model"], r["batch"], r["precision"], r["impl"], r["mean_ms"],
                        r["rel_err"], "%.2fx" % v if v else "-", "%.2f" % fx if fx else "-",
                        "ok" if r["passes"] else "FAILS"))
    return "\n".join(lines)


def plot(rows, path, title):
    """Speed against the best PyTorch row, per model, batch and precision
    (a row that fails its check hatched, with FAIL above its bar); returns
    False without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    groups = sorted({(r["model"], r["batch"], r["precision"]) for r in rows})
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(groups)), 4.5))
    width = 0.8 / len(IMPLS)
    for i, impl in enumerate(IMPLS):
        xs, vals, failed = [], [], []
        for k, g in enumerate(groups):
            r = next((r for r in rows if (r["model"], r["batch"], r["precision"]) == g and
                      r["impl"] == impl), None)
            xs.append(k + (i - (len(IMPLS) - 1) / 2) * width)
            vals.append(r.get("speed_vs_best_pytorch") or 0 if r else 0)
            failed.append(bool(r) and not r.get("passes"))
        bars = ax.bar(xs, vals, width, label=impl)
        for bar, x, v, bad in zip(bars, xs, vals, failed):
            if bad:
                bar.set_hatch("//")
                ax.text(x, v, "FAIL", ha="center", va="bottom", fontsize=6, rotation=90)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(["%s b%d\n%s" % g for g in groups])
    ax.set_ylabel("speed vs the best PyTorch row")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return True


def write_results(out_dir, doc, log, chart=True):
    """Merges doc (a run's results: rows, models and the run's fields) into
    <out_dir>/network-<gpu>.json, where the run's rows replace those with
    their key and its fields the file's, and (with chart) draws the chart;
    returns the file's path and its merged rows."""
    slug = gpu_slug(doc["machine"]["gpu"])
    os.makedirs(out_dir, exist_ok=True)
    json_path = os.path.join(out_dir, "network-%s.json" % slug)
    old = {}
    if os.path.exists(json_path):
        with open(json_path) as f:
            old = json.load(f)
    all_rows = merge(old.get("rows", []), doc["rows"])
    add_ratios(all_rows)
    # The run's fields (date, trials, rates, ...) are the later-dated file's.
    top = doc if not old or replaces(doc, old) else old
    doc = dict(top, models=merge_models(old.get("models", {}), doc["models"]), rows=all_rows)
    write_json_atomic(json_path, doc, indent=2)  # a run cut off mid-write leaves the file whole
    if not chart:
        return json_path, all_rows
    log("wrote    %s" % json_path)
    png_path = os.path.join(out_dir, "network-%s.png" % slug)
    title = "%s: whole networks, KernelBench protocol" % doc["machine"]["gpu"]
    if plot(all_rows, png_path, title):
        log("wrote    %s" % png_path)
    return json_path, all_rows


def read_results(path):
    """A network.py results file (ValueError, naming it, where it is not
    one: its machine's gpu, rows keyed by model, batch, impl and
    precision, a models record or none)."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except ValueError as e:
        raise ValueError("%s is not JSON: %s" % (path, e)) from None
    keys = ("model", "batch", "impl", "precision")
    machine = doc.get("machine") if isinstance(doc, dict) else None
    rows = doc.get("rows") if isinstance(doc, dict) else None
    if not isinstance(machine, dict) or not isinstance(machine.get("gpu"), str) or \
            not machine["gpu"] or not isinstance(rows, list) or \
            not all(isinstance(r, dict) and all(k in r for k in keys) for r in rows) or \
            not isinstance(doc.get("models") or {}, dict):
        raise ValueError("%s is not a network.py results file" % path)
    return dict(doc, models=doc.get("models") or {})


def merge_files(paths, out_dir, log):
    """--merge: the results files of runs in parts, each as its run wrote
    it, merged in order into <out_dir>/network-<gpu>.json of its GPU, as if
    each run had written there.  Every file (and each GPU's file in
    out_dir) is read and checked before anything is written.  Returns
    {written file: its merged rows}."""
    docs = [read_results(p) for p in paths]
    gpus = {}
    for path, doc in zip(paths, docs):
        gpus.setdefault(gpu_slug(doc["machine"]["gpu"]), {})[doc["machine"]["gpu"]] = path
    for slug, names in gpus.items():
        target = os.path.join(out_dir, "network-%s.json" % slug)
        if os.path.exists(target):
            names.setdefault(read_results(target)["machine"]["gpu"], target)
        if len(names) > 1:
            raise ValueError("network-%s.json would mix GPUs: %s" % (
                slug, ", ".join("%s (%s)" % (g, p) for g, p in sorted(names.items()))))
    written = {}
    for doc in docs:
        json_path, rows = write_results(out_dir, doc, log)
        written[json_path] = rows
    return written


def run_models(model_list, run, save, log):
    """run(name, batch, progress) of each model, and save(rows, models,
    chart) of the run's rows and models' records so far after each of its
    rows (chart False) and once at the end (chart True), so that a run cut
    off keeps every row it measured; a model's record is saved once one of
    its convtune rows is.  Returns the run's rows and save's last answer's
    merged rows."""
    def ours(got, extra):
        # The model's record (patch and tune) goes with its convtune rows: a
        # run without them, or cut off before them, leaves it alone.
        return extra if extra and any(r["impl"] not in PYTORCH_IMPLS for r in got) else None

    rows, models = [], {}
    for name, batch in model_list:
        log("%s, batch %d" % (name, batch))
        key = "%s:%d" % (name, batch)

        def progress(got, extra, key=key):
            record = ours(got, extra)
            save(rows + got, dict(models, **({key: record} if record else {})), False)
        got, extra = run(name, batch, progress)
        rows += got
        if ours(got, extra):
            models[key] = extra
    return rows, save(rows, models, True)[1]


def results_doc(args, machine, rates, models, rows):
    """A run's results file: its fields, its models' records and rows."""
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine, "trials": args.trials, "seed": args.seed,
        "database": bench.db_description(args.db),
        "protocol": "KernelBench (bench.py time_call) on one forward pass under no_grad",
        "rates": rates,
        "floors": "conv_floor_ms: the sum over the model's convolutions (convtune.torch."
                  "collect, calls counted, BatchNorms folded) of bench.floors' class_ms at "
                  "the row's precision; the other layers are not in it",
        "compile_mode": args.compile_mode,
        "check": "float64 model on the same input; passes = finite and rel_err <= "
                 "max(%g x eager NCHW's rel_err, %s)" % (REL_FACTOR, REL_FLOOR),
        "models": models,
        "rows": rows,
    }


def main(argv=None):
    args = parse_args(argv)
    if args.merge:
        try:
            written = merge_files(args.merge, args.out, print)
        except (OSError, ValueError) as e:
            print("network: --merge: %s" % e, file=sys.stderr)
            return 1
        for json_path, rows in written.items():
            print("\n%s\n%s" % (json_path, table(rows)))
        return 0
    _import_runtime(args.lib)
    if not torch.cuda.is_available():
        print("network: PyTorch sees no CUDA device; the benchmark needs a GPU", file=sys.stderr)
        return 1
    torch.cuda.set_device(args.device)
    dev = torch.device("cuda", args.device)
    if args.db is not None:
        ct.set_database(args.db)
    machine = bench.machine_info(args.device)

    def log(msg):
        print(msg, flush=True)

    log("network  %s, torch %s, cuDNN %s; models %s; %s; %d trials"
        % (machine["gpu"], machine["torch"], machine["cudnn"], args.models,
           ",".join(args.precisions), args.trials))
    flush = torch.empty(bench.FLUSH_BYTES // 8, dtype=torch.int64, device=dev)
    rates = bench.measure_rates()
    log("rates    copy %.2f TB/s; matrix TF32 %.0f TFLOP/s, fp32 %.1f TFLOP/s"
        % (rates["copy_bytes_per_s"] / 1e12, rates["tf32_flop_per_s"] / 1e12,
           rates["fp32_flop_per_s"] / 1e12))
    run_date = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")

    def save(rows, models, chart):
        for r in rows:
            r["date"] = run_date
        for entry in models.values():
            entry["date"] = run_date
            for record in entry["tune"].values():
                record["date"] = run_date
        return write_results(args.out, results_doc(args, machine, rates, models, rows), log, chart)

    rows, all_rows = run_models(
        args.model_list, lambda name, batch, progress: run_rows(
            name, batch, args, dev, flush, rates, log, progress), save, log)
    print()
    print(table(all_rows))
    bad = [r for r in rows if r["impl"] == "convtune" and not r.get("passes")]
    if bad:
        print("\nnetwork: %d convtune row(s) did not pass or run" % len(bad), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
