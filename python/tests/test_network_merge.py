"""bench/network.py --merge, which runs nothing and needs no torch: the
results files of runs in parts merged into --out's file of each one's GPU,
as if each run had written there, every file checked before anything is
written."""

import json

import pytest

from conftest import load_bench_script


@pytest.fixture(scope="module")
def net():
    return load_bench_script("network.py", "convtune_bench_network_merge")


def _run(tmp_path, name, gpu, date, rows, models=None):
    """A results file as a run writes it: rows of resnet50 b32 tf32."""
    path = tmp_path / name
    rows = [{"model": "resnet50", "batch": 32, "impl": impl, "precision": "tf32",
             "mean_ms": ms, "rel_err": 1e-4, "passes": True, "date": date} for impl, ms in rows]
    path.write_text(json.dumps({"date": date, "machine": {"gpu": gpu}, "rows": rows,
                                "models": models or {}}))
    return str(path)


def test_merge_adds_files_of_runs_in_parts_to_their_gpus_file(net, tmp_path, capsys):
    """In order, a later row replacing one with its key, the ratios
    recomputed over the merged rows, the models' tune records kept; another
    GPU's rows go to that GPU's file."""
    first = _run(tmp_path, "a.json", "NVIDIA H200", "d1", [("eager", 6.0), ("convtune", 2.0)],
                 {"resnet50:32": {"replaced": 53, "tune": {"tf32": {"wall_s": 80.0}}}})
    later = _run(tmp_path, "b.json", "NVIDIA H200", "d2", [("eager", 5.0), ("torch_compile", 4.0)])
    other = _run(tmp_path, "c.json", "NVIDIA H100 80GB HBM3", "d3", [("eager", 7.0)])
    out = tmp_path / "out"
    assert net.main(["--merge", first, later, other, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "network-h200.json" in printed and "network-h100-80gb-hbm3.json" in printed
    doc = json.loads((out / "network-h200.json").read_text())
    by = {r["impl"]: r for r in doc["rows"]}
    assert sorted(by) == ["convtune", "eager", "torch_compile"]
    assert (by["eager"]["mean_ms"], by["eager"]["date"]) == (5.0, "d2")
    assert by["convtune"]["date"] == "d1"
    assert by["convtune"]["speed_vs_best_pytorch"] == pytest.approx(2.0)  # torch_compile's 4.0
    assert doc["models"]["resnet50:32"]["tune"] == {"tf32": {"wall_s": 80.0}}
    assert doc["date"] == "d2"
    h100 = json.loads((out / "network-h100-80gb-hbm3.json").read_text())
    assert [r["mean_ms"] for r in h100["rows"]] == [7.0]
    # Merged again on top: the file's rows stay, the new ones replace theirs.
    again = _run(tmp_path, "d.json", "NVIDIA H200", "d4", [("convtune", 1.0)])
    written = net.merge_files([again], str(out), lambda msg: None)
    rows = {r["impl"]: r for r in written[str(out / "network-h200.json")]}
    assert rows["convtune"]["mean_ms"] == 1.0 and rows["eager"]["date"] == "d2"
    assert rows["convtune"]["speed_vs_best_pytorch"] == pytest.approx(4.0)


def test_merge_checks_every_file_before_writing(net, tmp_path, capsys):
    out = tmp_path / "out"
    good = _run(tmp_path, "good.json", "NVIDIA H200", "d1", [("eager", 6.0)])
    bad_json = tmp_path / "bad.json"
    bad_json.write_text("{not json")
    no_gpu = tmp_path / "nogpu.json"
    no_gpu.write_text(json.dumps({"machine": None, "rows": []}))
    keyless = tmp_path / "keyless.json"
    keyless.write_text(json.dumps({"machine": {"gpu": "NVIDIA H200"}, "rows": [{"impl": "eager"}]}))
    for bad, says in ((str(bad_json), "bad.json is not JSON"),
                      (str(no_gpu), "nogpu.json is not a network.py results file"),
                      (str(keyless), "keyless.json is not a network.py results file"),
                      (str(tmp_path / "missing.json"), "missing.json")):
        assert net.main(["--merge", good, bad, "--out", str(out)]) == 1
        assert says in capsys.readouterr().err
        assert not out.exists()  # the good file before it was not written either
    # Two GPUs whose names give one file, or a file of another GPU in --out.
    clash = _run(tmp_path, "clash.json", "NVIDIA-H200", "d2", [("eager", 5.0)])
    with pytest.raises(ValueError, match="would mix GPUs"):
        net.merge_files([good, clash], str(out), lambda msg: None)
    assert not out.exists()
    net.merge_files([clash], str(out), lambda msg: None)
    with pytest.raises(ValueError, match="would mix GPUs"):
        net.merge_files([good], str(out), lambda msg: None)


def test_merge_ignores_the_run_options(net):
    a = net.parse_args(["--merge", "x.json", "--tune", "--impls", "eager"])
    assert a.merge == ["x.json"]
    with pytest.raises(SystemExit):
        net.parse_args(["--merge"])


def test_merge_keeps_the_later_measurement_of_each_row(net, tmp_path):
    """Each file of a run in parts carries its copies of older rows: the
    later-dated row and tune record win whatever the files' order."""
    early, late = "2026-12-05T15:00:00+00:00", "2026-12-05T21:00:00+00:00"
    # a tf32 run (late) whose file carries the earlier fp32 rows; an fp32 run
    # (late) whose file carries the earlier tf32 rows
    tf32 = tmp_path / "tf32.json"
    fp32 = tmp_path / "fp32.json"

    def doc(fresh, stale):
        rows = [{"model": "resnet50", "batch": 32, "impl": "convtune", "precision": p,
                 "mean_ms": ms, "rel_err": 1e-4, "passes": True, "date": d}
                for p, ms, d in ((fresh[0], fresh[1], late), (stale[0], stale[1], early))]
        tune = {fresh[0]: {"wall_s": 1.0, "date": late}, stale[0]: {"wall_s": 9.0, "date": early}}
        return {"date": late, "machine": {"gpu": "NVIDIA H200"}, "rows": rows,
                "models": {"resnet50:32": {"replaced": 53, "tune": tune}}}
    tf32.write_text(json.dumps(doc(("tf32", 2.1), ("fp32", 4.5))))
    fp32.write_text(json.dumps(doc(("fp32", 4.2), ("tf32", 2.6))))
    for order in ((tf32, fp32), (fp32, tf32)):
        out = tmp_path / ("out-" + order[0].stem)
        written = net.merge_files([str(p) for p in order], str(out), lambda msg: None)
        rows = {r["precision"]: r for r in written[str(out / "network-h200.json")]}
        assert (rows["tf32"]["mean_ms"], rows["fp32"]["mean_ms"]) == (2.1, 4.2)
        models = json.loads((out / "network-h200.json").read_text())["models"]
        assert models["resnet50:32"]["tune"] == {"tf32": {"wall_s": 1.0, "date": late},
                                                 "fp32": {"wall_s": 1.0, "date": late}}
    # undated rows (or dates that are not ISO) keep the files' order
    assert net.merge([{"model": "m", "batch": 1, "impl": "i", "precision": "p", "date": "b"}],
                     [{"model": "m", "batch": 1, "impl": "i", "precision": "p", "date": "a"}]
                     )[0]["date"] == "a"


def test_a_run_cut_off_keeps_the_rows_it_measured(net, tmp_path):
    """run_models saves after every row: a run killed in its second model
    leaves the first model's rows, its record and the second's rows so far
    in the results file, whole."""
    out = tmp_path / "out"

    def save(rows, models, chart):
        doc = {"date": "2026-12-05T21:00:00+00:00", "machine": {"gpu": "NVIDIA H200"},
               "models": models, "rows": rows}
        return net.write_results(str(out), doc, lambda msg: None, chart=False)

    def run(name, batch, progress):
        # as run_rows: the model's record made (patched) before any row
        rows, record = [], {"replaced": 53, "tune": {}}
        for impl, ms in (("eager", 6.0), ("convtune", 2.0)):
            if name == "vgg16_bn" and impl == "convtune":
                raise KeyboardInterrupt  # the run's time ran out
            rows.append({"model": name, "batch": batch, "impl": impl, "precision": "tf32",
                         "mean_ms": ms, "passes": True})
            progress(rows, record)
        return rows, record

    with pytest.raises(KeyboardInterrupt):
        net.run_models([("resnet50", 32), ("vgg16_bn", 8)], run, save, lambda msg: None)
    doc = json.loads((out / "network-h200.json").read_text())
    assert sorted((r["model"], r["impl"]) for r in doc["rows"]) == [
        ("resnet50", "convtune"), ("resnet50", "eager"), ("vgg16_bn", "eager")]
    assert list(doc["models"]) == ["resnet50:32"]  # vgg16_bn's record waits for its row
    assert not [p.name for p in out.iterdir() if "tmp" in p.name]
    # run through: every row, and save's last answer
    rows, merged = net.run_models([("resnet50", 1)], lambda n, b, p: run(n, b, p)[:1] + ({},),
                                  save, lambda msg: None)
    assert [r["impl"] for r in rows] == ["eager", "convtune"] and len(merged) == 5


def test_merge_keeps_the_later_runs_fields(net, tmp_path):
    """A model's entry (patch options) and the file's own fields are the
    later-dated run's, whatever the files' order."""
    early, late = "2026-12-05T15:00:00+00:00", "2026-12-05T21:00:00+00:00"
    paths = []
    for date, pack, trials in ((late, False, 30), (early, True, 100)):
        path = tmp_path / ("%d.json" % trials)
        path.write_text(json.dumps({
            "date": date, "trials": trials, "machine": {"gpu": "NVIDIA H200"},
            "rows": [{"model": "resnet50", "batch": 32, "impl": "convtune", "precision": "tf32",
                      "mean_ms": 2.0 if pack else 3.0, "passes": True, "date": date}],
            "models": {"resnet50:32": {"pack_weights": pack, "date": date, "tune": {}}}}))
        paths.append(str(path))
    out = tmp_path / "out"
    net.merge_files(paths, str(out), lambda msg: None)  # the later run first
    doc = json.loads((out / "network-h200.json").read_text())
    assert (doc["date"], doc["trials"]) == (late, 30)
    assert doc["models"]["resnet50:32"]["pack_weights"] is False
    assert doc["rows"][0]["mean_ms"] == 3.0
