"""The ctypes layer (convtune._lib) on any machine: no torch, no GPU.  The
parts that need a context run in child processes against the mock driver
(tests/mock_cuda.c), since the driver is loaded once per process."""

import ctypes
import ctypes.util
import os
import subprocess
import sys
import textwrap

import pytest

import convtune
from convtune import _lib
from conftest import PYTHON_DIR, mock_driver_path


def run_child(code, **env):
    """Runs code in a fresh interpreter with the package importable; returns
    (exit code, output)."""
    e = dict(os.environ)
    e.update(env)
    e["PYTHONPATH"] = PYTHON_DIR + os.pathsep + e.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=e,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=300)
    return r.returncode, r.stdout


def test_struct_layout_matches_the_library(lib):
    assert ctypes.sizeof(_lib.Problem) == 136 == lib._lib.ct_problem_size()
    assert _lib.Problem.groups.offset == 128 and _lib.Problem.groups.size == 8
    spec = "n=11,c=12,h=130,w=140,k=15,r=6,s=7,stride=2x3,pad=4x5,dil=1x2,bias=0,prec=fp32"
    p = lib.parse(spec)
    assert p.key() == (11, 12, 130, 140, 15, 6, 7, 2, 3, 4, 5, 1, 2, 0, _lib.CT_PREC_FP32,
                       _lib.CT_ACT_NONE, _lib.CT_LAYOUT_NCHW, 0, 1)
    assert lib.format(p) == spec == p.spec()
    r = lib.parse(spec + ",act=relu")
    assert r.act == _lib.CT_ACT_RELU and lib.format(r) == r.spec() == spec + ",act=relu"
    assert lib.parse(spec + ",act=none").key() == p.key()
    r6 = lib.parse("act=relu6," + spec)
    assert r6.act == _lib.CT_ACT_RELU6 and lib.format(r6) == r6.spec() == spec + ",act=relu6"
    t = lib.parse("layout=nhwc," + spec + ",act=relu")
    assert t.layout == _lib.CT_LAYOUT_NHWC and lib.format(t) == t.spec() == \
        spec + ",act=relu,layout=nhwc"
    assert lib.parse(spec + ",layout=nchw").key() == p.key()
    u = lib.parse("residual=1," + spec + ",act=relu")
    assert u.residual == 1 and lib.format(u) == u.spec() == spec + ",act=relu,residual=1"
    assert lib.parse(spec + ",residual=0").key() == p.key()
    q = p.copy(bias=1, precision=_lib.CT_PREC_TF32, n=3)
    assert lib.format(q).startswith("n=3,") and lib.format(q).endswith("bias=1,prec=tf32")
    P, Q = ctypes.c_int64(), ctypes.c_int64()
    lib._lib.ct_problem_output(ctypes.byref(p), ctypes.byref(P), ctypes.byref(Q))
    assert (P.value, Q.value) == p.output_hw()
    d = lib.default_problem()
    assert lib.format(d) == ("n=256,c=3,h=224,w=224,k=96,r=11,s=11,stride=4,pad=2,dil=1,"
                             "bias=1,prec=tf32")
    assert d.shapes() == ((256, 3, 224, 224), (96, 3, 11, 11), (96,), (256, 96, 55, 55))
    assert d.groups == 1


def test_groups_round_trip(lib):
    """groups=G: parsed, printed last (after residual=1) only for G > 1,
    the same text from the library and from Problem.spec(); w is
    (K, C/G, R, S)."""
    base = "n=2,c=32,h=14,w=14,k=64,r=3,s=3,stride=2,pad=1,dil=1,bias=1,prec=fp32"
    for tail, groups in [(",groups=4", 4), (",groups=32", 32),
                         (",act=relu,layout=nhwc,residual=1,groups=2", 2)]:
        p = lib.parse(base + tail)
        assert p.groups == groups
        assert lib.format(p) == p.spec() == base + tail
        assert repr(p) == "Problem(%r)" % (base + tail)
        assert p.shapes()[1] == (64, 32 // groups, 3, 3)
        assert lib.parse(p.spec()).key() == p.key()
    # Any order; groups=1 is the default and left out.
    p = lib.parse("groups=8,residual=1," + base)
    assert p.groups == 8 and p.spec() == base + ",residual=1,groups=8"
    plain = lib.parse(base + ",groups=1")
    assert plain.groups == 1 and lib.format(plain) == plain.spec() == base
    assert plain.key() == lib.parse(base).key()
    assert plain.copy(groups=16).spec() == base + ",groups=16"
    assert lib.validate(plain.copy(groups=32)).groups == 32


def test_problem_made_without_groups_has_one_group(lib):
    fields = (1, 4, 8, 8, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, _lib.CT_PREC_FP32, _lib.CT_ACT_NONE,
              _lib.CT_LAYOUT_NCHW, 0)
    p = _lib.Problem(*fields)
    assert p.groups == 1 and lib.validate(p) is p
    assert lib.format(p) == p.spec() == \
        "n=1,c=4,h=8,w=8,k=6,r=3,s=3,stride=1,pad=1,dil=1,bias=1,prec=fp32"
    assert _lib.Problem(*fields, 2).groups == 2
    assert _lib.Problem(*fields, groups=2).spec().endswith(",prec=fp32,groups=2")
    assert _lib.Problem().groups == 1
    # Strides and dilations left out are 1, as in a spec, not 0.
    named = _lib.Problem(n=1, c=4, h=8, w=8, k=6, r=3, s=3, pad_h=1, pad_w=1,
                         precision=_lib.CT_PREC_FP32)
    assert lib.validate(named).spec() == \
        "n=1,c=4,h=8,w=8,k=6,r=3,s=3,stride=1,pad=1,dil=1,bias=0,prec=fp32"
    assert _lib.Problem(n=1, stride_w=2, dil_h=3).spec().startswith(
        "n=1,c=0,h=0,w=0,k=0,r=0,s=0,stride=1x2,pad=0,dil=3x1,")


@pytest.mark.parametrize("spec,needle", [
    ("n=1,c=6,h=8,w=8,k=8,r=3,s=3,groups=4", "groups = 4 must divide both c = 6 and k = 8"),
    ("n=1,c=8,h=8,w=8,k=6,r=3,s=3,groups=4", "groups = 4 must divide both c = 8 and k = 6"),
    ("n=1,c=8,h=8,w=8,k=8,r=3,s=3,groups=0", "groups = 0 must be >= 1"),
    ("n=1,c=8,h=8,w=8,k=8,r=3,s=3,groups=x", "groups: 'x' is not an integer"),
])
def test_groups_errors(lib, spec, needle):
    with pytest.raises(convtune.ConvtuneError) as e:
        lib.parse(spec)
    assert e.value.status in (_lib.CT_ERR_INVALID_PROBLEM, _lib.CT_ERR_PARSE)
    assert needle in str(e.value)
    p = lib.parse("n=1,c=8,h=8,w=8,k=8,r=3,s=3")
    with pytest.raises(convtune.ConvtuneError, match="must divide both c = 8 and k = 8"):
        lib.validate(p.copy(groups=3))


def test_status_and_path_names_match_the_header(lib):
    for i, name in enumerate(_lib.STATUS):
        assert getattr(_lib, name) == i
        assert lib.status_string(i) != "unknown status"
    assert lib.status_string(len(_lib.STATUS)) == "unknown status"  # CT_STATUS_COUNT
    for i, name in enumerate(_lib.PATHS):
        assert lib.path_name(i) == name
    assert lib.path_name(len(_lib.PATHS)) == "unknown"


def test_parse_and_validate_errors(lib):
    with pytest.raises(convtune.ConvtuneError) as e:
        lib.parse("n=1,c=1,h=8,w=8,k=1,r=3,s=3,stride=0")
    assert e.value.status == _lib.CT_ERR_INVALID_PROBLEM and "stride" in str(e.value)
    with pytest.raises(convtune.ConvtuneError) as e:
        lib.parse("n=1,c=1")
    assert e.value.status == _lib.CT_ERR_PARSE
    p = lib.parse("n=1,c=1,h=8,w=8,k=1,r=3,s=3")
    with pytest.raises(convtune.ConvtuneError) as e:
        lib.validate(p.copy(n=2 ** 40))
    assert "INT32_MAX" in str(e.value)
    assert lib.validate(p) is p


def test_library_not_found_lists_where_it_looked():
    with pytest.raises(convtune.LibraryNotFound) as e:
        convtune.load("/nonexistent/dir/libconvtune.so")
    assert "/nonexistent/dir/libconvtune.so" in str(e.value)
    assert "CONVTUNE_LIB" in str(e.value)
    code, out = run_child("""
        import convtune
        try:
            convtune.load()
        except convtune.LibraryNotFound as e:
            print(e)
        """, CONVTUNE_LIB="/nonexistent/libconvtune.so")
    assert code == 0 and "$CONVTUNE_LIB: /nonexistent/libconvtune.so" in out


def test_candidates_order():
    cands = [c for _, c in _lib.library_candidates()]
    if os.environ.get("CONVTUNE_LIB"):
        assert cands == [os.environ["CONVTUNE_LIB"]]
    else:
        assert _lib.in_source_tree()
        assert cands[0].endswith(os.path.join("build", "runtime", "libconvtune.so"))
        assert cands[-1] == "libconvtune.so"


def installed_copy(tmp_path):
    """The package copied away from the source tree, as `pip install` leaves
    it (site-packages/convtune): a PYTHONPATH for run_installed."""
    import shutil
    site = tmp_path / "site-packages"
    shutil.copytree(os.path.join(PYTHON_DIR, "convtune"), str(site / "convtune"))
    return str(site)


def run_installed(site, code, **env):
    """Runs code against the installed copy, without $CONVTUNE_LIB."""
    e = {k: v for k, v in os.environ.items()
         if k not in ("CONVTUNE_LIB", "PKG_CONFIG_PATH", "LD_LIBRARY_PATH")}
    e.update(env)
    e["PYTHONPATH"] = site
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=e, cwd=site,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=300)
    return r.returncode, r.stdout


FIND = """
    import convtune
    from convtune import _lib
    assert not _lib.in_source_tree()
    try:
        print("found", convtune.load().path)
    except convtune.LibraryNotFound as e:
        print("notfound", e)
    """


def test_installed_package_never_looks_beside_itself(lib, tmp_path):
    site = installed_copy(tmp_path)
    code, out = run_installed(site, FIND, PKG_CONFIG_PATH=str(tmp_path / "none"))
    assert code == 0, out
    assert "site-packages/build" not in out and "build/runtime" not in out, out


def test_installed_package_finds_the_library_by_pkg_config(lib, tmp_path):
    import shutil
    if shutil.which("pkg-config") is None:
        pytest.skip("no pkg-config")
    site = installed_copy(tmp_path)
    libdir = os.path.dirname(os.path.abspath(lib.path))
    pc = tmp_path / "pc"
    pc.mkdir()
    (pc / "convtune.pc").write_text(
        "libdir=%s\nincludedir=/nonexistent\n\nName: convtune\nDescription: test\n"
        "Version: 0.1.0\nLibs: -L${libdir} -lconvtune\nCflags: -I${includedir}\n" % libdir)
    code, out = run_installed(site, FIND, PKG_CONFIG_PATH=str(pc))
    assert code == 0 and out.startswith("found " + os.path.join(libdir, "libconvtune.so")), out


def test_installed_package_finds_the_library_on_the_loader_path(lib, tmp_path):
    site = installed_copy(tmp_path)
    libdir = os.path.dirname(os.path.abspath(lib.path))
    code, out = run_installed(site, FIND, PKG_CONFIG_PATH=str(tmp_path / "none"),
                              LD_LIBRARY_PATH=libdir)
    assert code == 0 and out.startswith("found "), out


def test_not_found_explains_the_three_ways(tmp_path):
    site = installed_copy(tmp_path)
    code, out = run_installed(site, FIND, PKG_CONFIG_PATH=str(tmp_path / "none"))
    if out.startswith("found "):
        pytest.skip("a libconvtune is installed on this machine: " + out)
    assert code == 0 and out.startswith("notfound"), out
    for way in ("CONVTUNE_LIB=", "LD_LIBRARY_PATH=", "PKG_CONFIG_PATH="):
        assert way in out, out


def test_a_library_without_the_current_api_is_refused(tmp_path):
    """A shared library lacking this package's functions (here libc; an
    older libconvtune lacks ct_layout_name, added with the longer struct
    ct_problem) is refused at load, naming what it lacks."""
    libc = ctypes.util.find_library("c")
    if libc is None:
        pytest.skip("no libc to load as a stand-in")
    with pytest.raises(convtune.ConvtuneError, match="a library older than this package"):
        _lib.Library(libc)


def test_default_database_follows_the_environment(lib, monkeypatch):
    for name in ("CONVTUNE_DB", "XDG_CACHE_HOME", "HOME"):
        monkeypatch.delenv(name, raising=False)
    assert lib.default_database() is None
    monkeypatch.setenv("HOME", "/home/u")
    assert lib.default_database() == "/home/u/.cache/convtune/tuning.db"
    monkeypatch.setenv("XDG_CACHE_HOME", "/xdg")
    assert lib.default_database() == "/xdg/convtune/tuning.db"
    monkeypatch.setenv("CONVTUNE_DB", "/data/t.db")
    assert lib.default_database() == "/data/t.db"
    monkeypatch.setenv("CONVTUNE_DB", "/d/" + "x" * 5000)
    with pytest.raises(_lib.ConvtuneError, match="does not fit"):
        lib.default_database()


def test_parse_refuses_a_nul(lib):
    with pytest.raises(convtune.ConvtuneError) as e:
        lib.parse("n=1,c=1,h=8,w=8,k=1,r=3,s=3\0,stride=9")
    assert e.value.status == _lib.CT_ERR_PARSE and "NUL" in str(e.value)


def test_parse_wants_a_string(lib):
    for bad in (None, 3, b"n=1,c=1,h=8,w=8,k=1,r=3,s=3"):
        with pytest.raises(TypeError) as e:
            lib.parse(bad)
        assert "spec is a str" in str(e.value)


def test_problem_repr_is_its_spec(lib):
    for spec in ["n=11,c=12,h=130,w=140,k=15,r=6,s=7,stride=2x3,pad=4x5,dil=1x2,bias=0,prec=fp32",
                 "n=1,c=3,h=224,w=224,k=64,r=7,s=7,stride=2,pad=3"]:
        p = lib.parse(spec)
        assert p.spec() == lib.format(p)
        assert repr(p) == "Problem(%r)" % lib.format(p)
    assert repr(lib.default_problem()).startswith("Problem('n=256,c=3,h=224,w=224,k=96,")


def test_open_without_a_driver(lib):
    code, out = run_child("""
        import convtune
        lib = convtune.load()
        try:
            lib.open("", 0)
        except convtune.ConvtuneError as e:
            print("status", e.status, e)
        """, CONVTUNE_LIBCUDA="/nonexistent/libcuda.so.1")
    assert code == 0, out
    assert "status %d" % _lib.CT_ERR_NO_DRIVER in out and "no CUDA driver" in out


def test_context_against_the_mock_driver(lib, tmp_path):
    mock = mock_driver_path()
    if mock is None:
        pytest.skip("the build has no mock driver (tests/libct_mockcuda.so)")
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database " * 100)
    code, out = run_child("""
        import sys
        import convtune
        from convtune import _lib
        lib = convtune.load()
        p = lib.parse("n=2,c=3,h=20,w=20,k=8,r=3,s=3,pad=1,prec=fp32")
        with lib.open(sys.argv[1] if len(sys.argv) > 1 else %r, 0) as ctx:
            status, msg = ctx.database_status()
            assert status == "CT_ERR_DB_CORRUPT", (status, msg)
            assert ctx.forward_path(p) == ("none", "")
            assert ctx.forward_reason(p) == "not run yet"
            ctx.prepare(p)
            path, variant = ctx.forward_path(p)
            assert path == "default" and variant.startswith("direct:"), (path, variant)
            x, w, b, y = 0x10000, 0x20000, 0x30000, 0x40000  # never touched
            ctx.forward(p, x, w, b, y, 0)
            assert "no usable tuning database" in ctx.forward_reason(p)
            launch = ctx.launcher(p)  # forward with p bound: the library's checks still run
            launch(x, w, b, y, 0)
            try:
                launch(y, w, b, y, 0)
            except convtune.ConvtuneError as e:
                assert e.status == _lib.CT_ERR_INVALID_ARG and "overlaps" in str(e), e
            else:
                raise AssertionError("a launcher ran y over x")
            for args, needle in [((x, w, None, y), "b is NULL"),
                                 ((x + 2, w, b, y), "aligned"),
                                 ((y, w, b, y), "overlaps")]:
                try:
                    ctx.forward(p, *args)
                except convtune.ConvtuneError as e:
                    assert e.status == _lib.CT_ERR_INVALID_ARG and needle in str(e), e
                else:
                    raise AssertionError("no error for %%s" %% (args,))
            try:
                ctx.forward(p.copy(k=-1), x, w, b, y)
            except convtune.ConvtuneError as e:
                assert e.status == _lib.CT_ERR_INVALID_PROBLEM and "k = -1" in str(e)
        print("mock ok")
        """ % str(junk), CONVTUNE_LIBCUDA=mock)
    assert code == 0 and "mock ok" in out, out


def test_packed_weights_against_the_mock_driver(lib):
    mock = mock_driver_path()
    if mock is None:
        pytest.skip("the build has no mock driver (tests/libct_mockcuda.so)")
    code, out = run_child("""
        import ctypes
        import convtune
        from convtune import _lib
        lib = convtune.load()
        p = lib.parse("n=2,c=3,h=20,w=20,k=8,r=3,s=3,pad=1,prec=fp32")
        w = ctypes.create_string_buffer(8 * 3 * 3 * 3 * 4)  # the mock copies it
        x, b, y = 0x10000, 0x30000, 0x40000  # never touched
        with lib.open("", 0) as ctx, lib.open("", 0) as other:
            packed = ctx.pack_weights(p, ctypes.addressof(w), 0)
            assert packed.bytes == 8 * 3 * 3 * 3 * 4, packed.bytes  # direct: a copy of w
            ctx.forward_packed(p, x, packed, b, y, 0)
            try:
                other.forward_packed(p, x, packed, b, y, 0)
            except ValueError as e:
                assert "this context" in str(e), e
            else:
                raise AssertionError("packed weights ran on another context")
            try:
                ctx.forward_packed(p.copy(k=9), x, packed, b, y, 0)
            except convtune.ConvtuneError as e:
                assert e.status == _lib.CT_ERR_INVALID_ARG and "another problem" in str(e), e
            else:
                raise AssertionError("packed weights ran another problem")
            launch = ctx.launcher(p, packed)  # the same call, its arguments bound
            launch(x, None, b, y, 0)
            try:
                other.launcher(p, packed)
            except ValueError as e:
                assert "this context" in str(e), e
            else:
                raise AssertionError("a launcher took another context's packed weights")
            packed.free()
            packed.free()
            assert packed.bytes == 0
            try:
                launch(x, None, b, y, 0)
            except convtune.ConvtuneError as e:  # freed: refused, not run
                assert e.status == _lib.CT_ERR_INVALID_ARG and "not packed" in str(e), e
            else:
                raise AssertionError("a launcher ran freed packed weights")
            kept = ctx.pack_weights(p, ctypes.addressof(w), 0)
            # A grouped problem runs direct, which packs a plain copy of its
            # (K, C/groups, R, S) weights.
            g = lib.parse("n=2,c=8,h=20,w=20,k=8,r=3,s=3,pad=1,prec=fp32,groups=4")
            assert g.shapes()[1] == (8, 2, 3, 3)
            grouped = ctx.pack_weights(g, ctypes.addressof(w), 0)
            assert grouped.bytes == 8 * 2 * 3 * 3 * 4, grouped.bytes
            assert ctx.forward_path(g)[1].startswith("direct:"), ctx.forward_path(g)
            ctx.forward_packed(g, x, grouped, b, y, 0)
            grouped.free()
        kept.free()  # after its context closed: the handle alone
        print("packed ok")
        """, CONVTUNE_LIBCUDA=mock)
    assert code == 0 and "packed ok" in out, out


def test_bench_shim_reexports_the_loader():
    bench = os.path.join(os.path.dirname(PYTHON_DIR), "bench")
    code, out = run_child("""
        import sys
        sys.path.insert(0, %r)
        import convtune_ctypes as ct
        from convtune import _lib
        assert ct.Problem is _lib.Problem and ct.load is _lib.load
        assert ct.ConvtuneError is _lib.ConvtuneError
        assert ct.PRECISIONS == {"tf32": 0, "fp32": 1}
        assert callable(ct.check_tensor) and callable(ct.repo_root)
        print("shim ok")
        """ % bench)
    assert code == 0 and "shim ok" in out, out
