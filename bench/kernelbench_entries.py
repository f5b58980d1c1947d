#!/usr/bin/env python3
"""kernelbench_entries.py — the entries `convtune kernelbench` writes,
checked and timed as KernelBench's harness runs them, on a GPU.

For each KernelBench level 1 conv2d problem (tests/kernelbench/): writes
the entry from the tuning database into <out>/l1_p<N>.py, loads it from its
source string with exec (as the harness does), and checks
  - ModelNew(*get_init_inputs()) has the reference Model's state_dict under
    one seed (same keys, equal values);
  - its output matches Model's within allclose(atol=1e-4, rtol=1e-4) on 5
    seeds of get_inputs(), with torch.backends.cudnn.allow_tf32 True and
    then False (the entry picks its tf32 or fp32 kernels by that flag);
  - a CPU input, a float64 input and a wrong shape raise ValueError;
then times ModelNew, Model and torch.compile(Model) with the KernelBench
protocol (bench.py's time_call) at both settings.  First it builds every
entry's kernels (load_inline's nvcc, most of an entry's time) in parallel
threads (--jobs), each build's time printed.  After each problem it rewrites
<out>/entries-<gpu>.json, that problem's rows replacing an earlier run's,
so that runs in parts (--only) add up.  Prints a table of every problem in
the file, exits 1 when an entry of this run fails a check.

    python3 bench/kernelbench_entries.py [--convtune build/tuner/convtune]
        [--db PATH] [--out bench/kernelbench] [--only 50,87] [--trials 100]
        [--no-compile] [--jobs N]
"""

import argparse
import datetime
import json
import os
import subprocess
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import bench  # noqa: E402

REFS = os.path.join(ROOT, "tests", "kernelbench")
PROBLEMS = (50, 55, 56, 62, 63, 80, 87)
SEEDS = 5


def reference_file(n):
    for name in sorted(os.listdir(REFS)):
        if name.startswith("%d_" % n) and name.endswith(".py"):
            return os.path.join(REFS, name)
    raise SystemExit("no reference for level 1 problem %d in %s" % (n, REFS))


def load(source, name):
    """The module namespace of source, run with exec as KernelBench does."""
    ns = {"__name__": name}
    exec(compile(source, name, "exec"), ns)
    return ns


def write_entry(convtune, db, n, path):
    cmd = [convtune, "kernelbench", "--level1", str(n), "--out", path, "--force"]
    if db:
        cmd += ["--db", db]
    subprocess.run(cmd, check=True)
    with open(path) as f:
        return f.read()


def header_variants(source):
    """The '#   tf32: VARIANT' / '#   fp32: VARIANT' lines of an entry."""
    out = {}
    for line in source.splitlines():
        for prec in ("tf32", "fp32"):
            if line.startswith("#   %s: " % prec):
                out[prec] = line.split(": ", 1)[1]
    return out


def check_entry(n, new, source, ref_source):
    """The checks above on the entry's namespace `new` (its source run with
    exec); returns (failures, notes)."""
    fails, notes = [], []
    ref = load(ref_source, "reference_%d" % n)
    init = ref["get_init_inputs"]()
    torch.manual_seed(1234)
    model = ref["Model"](*init)
    torch.manual_seed(1234)
    model_new = new["ModelNew"](*init)
    a, b = model.state_dict(), model_new.state_dict()
    if list(a) != list(b) or not all(torch.equal(a[k], b[k]) for k in a):
        fails.append("state_dict differs from the reference's (%s vs %s)" % (list(a), list(b)))
    model, model_new = model.cuda().eval(), model_new.cuda().eval()
    for tf32 in (True, False):
        torch.backends.cudnn.allow_tf32 = tf32
        for seed in range(SEEDS):
            torch.manual_seed(seed)
            x = ref["get_inputs"]()[0].cuda()
            with torch.no_grad():
                want = model(x)
                got = model_new(x)
            torch.cuda.synchronize()
            if not torch.allclose(got, want, atol=1e-4, rtol=1e-4):
                fails.append("allow_tf32=%s seed %d: max |diff| %.3g beyond atol=rtol=1e-4"
                             % (tf32, seed, float((got - want).abs().max())))
            del x, want, got
    torch.backends.cudnn.allow_tf32 = True
    x = ref["get_inputs"]()[0]
    for what, bad in (("a CPU input", x), ("a float64 input", x.cuda().double()),
                      ("a wrong shape", x.cuda()[:, :, 1:, :])):
        if not raises_value_error(model_new.forward, bad):
            fails.append("%s did not raise ValueError" % what)
    notes.append("variants: %s" % header_variants(source))
    return fails, notes, model, model_new, ref


def raises_value_error(fn, arg):
    """1 when fn(arg) raises ValueError (the entry's refusal of bad input)."""
    try:
        fn(arg)
    except ValueError:
        return True
    return False


def time_rows(n, model, model_new, ref, trials, with_compile):
    flush = torch.empty(bench.FLUSH_BYTES // 4, dtype=torch.float32, device="cuda")
    rows = []
    compiled = torch.compile(model) if with_compile else None
    for tf32 in (True, False):
        torch.backends.cudnn.allow_tf32 = tf32
        torch.manual_seed(0)
        x = ref["get_inputs"]()[0].cuda()
        with torch.no_grad():
            for impl, fn in (("convtune", lambda: model_new(x)), ("reference", lambda: model(x)),
                             ("torch.compile", (lambda: compiled(x)) if compiled is not None else None)):
                if fn is None:
                    continue
                st = bench.time_call(fn, trials, flush)
                rows.append(dict(problem=n, impl=impl, allow_tf32=tf32, **st))
    torch.backends.cudnn.allow_tf32 = True
    return rows


def log(msg):
    print(msg, flush=True)


def prebuild(entries, jobs):
    """Builds the kernels of every entry, each distinct build once, `jobs` at
    a time in threads of this process, before anything is checked: nvcc takes
    most of an entry's time and one core.  entries maps a name to the entry's
    namespace; the checks then use the same namespaces, whose _extension
    holds the loaded builds, so none is loaded or built twice.  A build that
    fails here is reported and tried again, alone, at the entry's first call.
    Each build's time is printed: a few seconds where torch's cache held it."""
    import concurrent.futures
    tasks, seen = [], set()
    for name, ns in entries.items():
        for precision, (_, _, digest, _) in ns["_SOURCES"].items():
            if (name, digest) not in seen:
                seen.add((name, digest))
                tasks.append((name, precision))

    def build(task):
        name, precision = task
        t0 = time.time()
        try:
            entries[name]["_extension"](precision)
        except Exception as e:  # reported, and met again at the entry's first call
            last = (str(e).strip().splitlines() or ["no message"])[-1]
            return "FAILED (%s: %s)" % (type(e).__name__, last), time.time() - t0
        return "ok", time.time() - t0

    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        for (name, precision), (what, secs) in zip(tasks, ex.map(build, tasks)):
            log("prebuild %s %s: %s in %.0f s" % (name, precision, what, secs))
    log("prebuilt %d kernel builds in %.0f s, %d at a time" % (len(tasks), time.time() - t0,
                                                               jobs))


def write_results(path, rows):
    doc = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
           "cudnn": torch.backends.cudnn.version(),
           "rows": sorted(rows, key=lambda r: (r["problem"], not r["allow_tf32"], r["impl"]))}
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def table(rows):
    """Every problem in rows, at each allow_tf32 setting: the mean times and
    the reference's and torch.compile's over convtune's."""
    lines = ["%-8s %-10s %12s %12s %14s %10s %10s %s" % (
        "problem", "allow_tf32", "convtune ms", "reference ms", "compile ms", "vs ref",
        "vs compile", "")]
    for n in sorted({r["problem"] for r in rows}):
        for tf32 in (True, False):
            by = {r["impl"]: r for r in rows if r["problem"] == n and r["allow_tf32"] == tf32}
            c, r, k = by.get("convtune"), by.get("reference"), by.get("torch.compile")
            if c is None or r is None:
                continue
            lines.append("%-8d %-10s %12.4f %12.4f %14s %9.2fx %10s %s" % (
                n, tf32, c["mean_ms"], r["mean_ms"],
                "%.4f" % k["mean_ms"] if k else "-", r["mean_ms"] / c["mean_ms"],
                "%.2fx" % (k["mean_ms"] / c["mean_ms"]) if k else "-",
                "ok" if c["passes"] else "FAILS"))
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--convtune", default=os.path.join(ROOT, "build", "tuner", "convtune"))
    ap.add_argument("--db", help="the tuning database (default: convtune's)")
    ap.add_argument("--out", default=os.path.join(HERE, "kernelbench"))
    ap.add_argument("--only", help="comma list of problem numbers")
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--no-compile", action="store_true", help="leave out torch.compile")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="entries' kernel builds at a time before the checks (default: "
                         "every core); 0 builds each at its first call")
    a = ap.parse_args(argv)
    if not torch.cuda.is_available():
        raise SystemExit("kernelbench_entries: needs a CUDA GPU")
    todo = [int(s) for s in a.only.split(",")] if a.only else list(PROBLEMS)
    os.makedirs(a.out, exist_ok=True)
    out = os.path.join(a.out, "entries-%s.json" % bench.gpu_slug(torch.cuda.get_device_name()))
    results = []
    if os.path.exists(out):
        with open(out) as f:
            results = json.load(f).get("rows", [])
    failed = 0
    paths = {n: os.path.join(a.out, "l1_p%d.py" % n) for n in todo}
    sources = {n: write_entry(a.convtune, a.db, n, paths[n]) for n in todo}
    # Each entry run from its source string once, as KernelBench's harness
    # runs it; the prebuild and the checks share these namespaces.
    spaces = {n: load(sources[n], "entry_%d" % n) for n in todo}
    if a.jobs > 0:
        prebuild({os.path.basename(paths[n]): spaces[n] for n in todo}, a.jobs)
    for n in todo:
        t0 = time.time()
        source = sources[n]
        with open(reference_file(n)) as f:
            ref_source = f.read()
        fails, notes, model, model_new, ref = check_entry(n, spaces[n], source, ref_source)
        checked = time.time() - t0
        for s in notes:
            log("problem %d: %s" % (n, s))
        for s in fails:
            log("problem %d: FAIL %s" % (n, s))
        failed += bool(fails)
        rows = time_rows(n, model, model_new, ref, a.trials, not a.no_compile)
        for r in rows:
            r["passes"] = not fails
            r["variants"] = header_variants(source)
        # This problem's rows replace those of an earlier run; the file is
        # rewritten after every problem, so runs in parts add up.
        results = [r for r in results if r["problem"] != n] + rows
        write_results(out, results)
        log("problem %d: checked in %.0f s, timed in %.0f s; wrote %s"
            % (n, checked, time.time() - t0 - checked, out))
        del model, model_new
        torch.cuda.empty_cache()
    print()
    print(table(results))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
