#!/usr/bin/env bash
# `convtune kernelbench` on CPU: for every KernelBench level 1 conv2d
# problem (tests/kernelbench/), the entry is written, compiles as Python,
# passes KernelBench's static checker (backend cuda) with no error and no
# warning, and its embedded CUDA (each precision's kernels, alone) compiles
# with nvcc for sm_90a; with a tuned database (the fake GPU: gm at tf32,
# then gm3 at fp32) the header names the winners and where they came from
# and their kernels compile; so do pw's and pw3's, which read x in place;
# every family's entry passes the checker; bad arguments are refused; the
# committed entries (bench/kernelbench/) compile as Python, pass the
# checker and hold tuned variants.
#   tests/test_kernelbench.sh PATH/TO/convtune SOURCE_ROOT
set -u
ct=${1:?usage: test_kernelbench.sh CONVTUNE SOURCE_ROOT}
root=${2:?usage: test_kernelbench.sh CONVTUNE SOURCE_ROOT}
if ! command -v python3 >/dev/null 2>&1; then
  echo "SKIP: needs python3"
  exit 77
fi
nvcc=${NVCC:-}
[ -z "$nvcc" ] && command -v nvcc >/dev/null 2>&1 && nvcc=nvcc
[ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok()  { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
check() { if eval "$2"; then ok "$1"; else bad "$1: $2"; fi; }

# static FILE: KernelBench's checker on FILE; prints its errors and warnings.
static() { python3 - "$root/tests/kernelbench" "$1" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from kernel_static_checker import validate_kernel_static
valid, errors, warnings = validate_kernel_static(open(sys.argv[2]).read(), backend="cuda")
for e in errors: print("error:", e)
for w in warnings: print("warning:", w)
sys.exit(0 if valid and not errors and not warnings else 1)
PY
}
# kernels FILE DIR: each precision's kernel source into DIR/<prec>.cu.
kernels() { python3 - "$1" "$2" <<'PY'
import ast, sys
tree = ast.parse(open(sys.argv[1]).read())
found = 0
for node in tree.body:
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        name = node.targets[0].id
        if name in ("_KERNELS_TF32", "_KERNELS_FP32"):
            open("%s/%s.cu" % (sys.argv[2], name[9:].lower()), "w").write(node.value.value)
            found += 1
sys.exit(0 if found == 2 else 1)
PY
}

# nvcc_check LABEL FILE.cu: FILE.cu compiles with nvcc for sm_90a.
nvcc_check() {
  "$nvcc" -gencode arch=compute_90a,code=sm_90a -std=c++17 -c "$2" -o "${2%.cu}.o" > "$tmp/nvcc" 2>&1
  check "$1" "[ $? -eq 0 ] || { cat '$tmp/nvcc'; false; }"
}
spec87="n=16,c=64,h=1024,w=1024,k=128,r=1,s=1,bias=0"
# fake_tune PREC FAMILY [DB [SPEC]]: SPEC (default problem 87) tuned on the
# fake GPU into DB (default $tmp/t.db).
fake_tune() {
  CONVTUNE_TEST_FAKE_GPU=1 CONVTUNE_TEST_FAKE_MS=5 "$ct" tune --problem "${4:-$spec87}" --precision "$1" \
    --families "$2" --max-variants 2 --final-trials 3 --db "${3:-$tmp/t.db}" > /dev/null 2>&1
}
# winner FAMILY: the winner of that family in $tmp/t.db.
winner() { python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT variant FROM winners WHERE variant LIKE ?", (sys.argv[2] + ":%",)).fetchone()[0])' "$tmp/t.db" "$1"; }

for n in 50 55 56 62 63 80 87; do
  f="$tmp/kb$n.py"
  "$ct" kernelbench --level1 $n --db "$tmp/none.db" --out "$f" 2> "$tmp/err"
  check "level 1 problem $n: written" "[ $? -eq 0 ] && [ -s '$f' ]"
  check "problem $n: compiles as Python" "python3 -m py_compile '$f'"
  check "problem $n: the static checker passes (no error, no warning)" "static '$f' > '$tmp/static' || { cat '$tmp/static'; false; }"
  check "problem $n: the reference's test code" "grep -q '^def get_init_inputs' '$f' && grep -q '^def get_inputs' '$f' && grep -q '^class ModelNew(nn.Module)' '$f'"
  ref=$(ls "$root"/tests/kernelbench/${n}_*.py)
  attr=$(sed -n 's/^ *self\.\([a-z0-9_]*\) = nn\.Conv2d.*/\1/p' "$ref")
  sig=$(sed -n 's/^ *def __init__(self, \(.*\)):$/\1/p' "$ref")
  check "problem $n: the reference's constructor and module name ($attr)" "grep -qF 'def __init__(self, $sig):' '$f' && grep -q 'self\.$attr = _Conv2dParams(' '$f'"
  check "problem $n: says the variants are defaults" "grep -q 'the default variant: the database has no tuned entry' '$f'"
  mkdir -p "$tmp/k$n"
  if kernels "$f" "$tmp/k$n"; then ok "problem $n: two kernel sources"; else bad "problem $n: two kernel sources"; fi
  if [ -n "$nvcc" ]; then
    for p in tf32 fp32; do
      if [ $p = fp32 ] && cmp -s "$tmp/k$n/tf32.cu" "$tmp/k$n/fp32.cu"; then continue; fi
      nvcc_check "problem $n: $p kernels compile with nvcc for sm_90a" "$tmp/k$n/$p.cu"
    done
  fi
done
[ -z "$nvcc" ] && echo "skip nvcc compiles: no nvcc on PATH or in /usr/local/cuda/bin"

# A tuned database (the fake GPU): the winners are embedded and named with
# their device, time and measured mean; gm's tensor-map launcher included.
fake_tune tf32 gm
check "fake tune of problem 87" "[ $? -eq 0 ]"
"$ct" kernelbench --level1 87 --db "$tmp/t.db" --out "$tmp/t87.py"
check "tuned: written" "[ $? -eq 0 ]"
win=$(winner gm)
check "tuned: the header names the winner, its device and time" "grep -q \"#   tf32: $win\" '$tmp/t87.py' && grep -q 'tuned on convtune fake GPU' '$tmp/t87.py' && grep -q 'measured [0-9.]* ms' '$tmp/t87.py'"
check "tuned: fp32 has no entry: the default variant" "grep -A1 '#   fp32: direct' '$tmp/t87.py' | grep -q 'the default variant'"
check "tuned: the tensor maps are encoded in the launcher" "grep -q 'cuTensorMapEncodeIm2col' '$tmp/t87.py' && grep -q 'cudaLaunchKernelEx(&cfg, gm_conv,' '$tmp/t87.py' && grep -q 'programmaticStreamSerializationAllowed = 1' '$tmp/t87.py'"
check "tuned: the static checker passes" "static '$tmp/t87.py' > '$tmp/static' || { cat '$tmp/static'; false; }"
mkdir -p "$tmp/kt"
if [ -n "$nvcc" ] && kernels "$tmp/t87.py" "$tmp/kt"; then
  nvcc_check "tuned: gm's kernels compile with nvcc" "$tmp/kt/tf32.cu"
fi
# fp32 tuned too (gm3, the 3xTF32 form of gm's kernel): both winners embedded.
fake_tune fp32 gm3
check "fake fp32 tune of problem 87 (gm3)" "[ $? -eq 0 ]"
"$ct" kernelbench --level1 87 --db "$tmp/t.db" --out "$tmp/t87b.py"
check "tuned both: written" "[ $? -eq 0 ]"
win3=$(winner gm3)
check "tuned both: the header names both winners" "grep -q \"#   tf32: $win\" '$tmp/t87b.py' && grep -q \"#   fp32: $win3\" '$tmp/t87b.py'"
check "tuned both: gm3's split is in the fp32 kernels" "grep -q 'define CT_GM_SPLIT 1' '$tmp/t87b.py'"
check "tuned both: the static checker passes" "static '$tmp/t87b.py' > '$tmp/static' || { cat '$tmp/static'; false; }"
mkdir -p "$tmp/kt3"
if [ -n "$nvcc" ] && kernels "$tmp/t87b.py" "$tmp/kt3"; then
  nvcc_check "tuned both: gm3's kernels compile with nvcc" "$tmp/kt3/fp32.cu"
fi

# pw and pw3 (problem 87 is a 1x1 over NCHW x, read in place): the
# launcher encodes a tiled map over the caller's x; both precisions'
# kernels compile.
fake_tune tf32 pw "$tmp/p.db" && fake_tune fp32 pw3 "$tmp/p.db"
check "fake tunes of problem 87 (pw, pw3)" "[ $? -eq 0 ]"
"$ct" kernelbench --level1 87 --db "$tmp/p.db" --out "$tmp/p87.py"
check "pw: written, both winners named" "[ $? -eq 0 ] && grep -q '#   tf32: pw:' '$tmp/p87.py' && grep -q '#   fp32: pw3:' '$tmp/p87.py'"
check "pw: x read in place through a tiled map" "grep -q 'cuTensorMapEncodeTiled(&ct_cu0, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, (char \\*)xp' '$tmp/p87.py' && grep -q 'cudaLaunchKernelEx(&cfg, gm_pw,' '$tmp/p87.py'"
check "pw: the static checker passes" "static '$tmp/p87.py' > '$tmp/static' || { cat '$tmp/static'; false; }"
mkdir -p "$tmp/kp"
if [ -n "$nvcc" ] && kernels "$tmp/p87.py" "$tmp/kp"; then
  nvcc_check "pw: its kernels compile with nvcc" "$tmp/kp/tf32.cu"
  nvcc_check "pw3: its kernels compile with nvcc" "$tmp/kp/fp32.cu"
fi

# Every family's kernels in an entry pass the checker: the words it takes
# for Python bypasses (pass, try:, except) appear nowhere in the sources
# outside // comments.  A stride-4 4x4 problem has the wg, wgr, wgs, tc,
# s2d and gmp families; a one-image 7x7 stride 2 has gmk; a padded 3x3
# has tap; a depthwise 3x3 has dw.
spec44="n=8,c=3,h=224,w=224,k=96,r=4,s=4,stride=4,bias=1"
spec77="n=1,c=3,h=224,w=224,k=64,r=7,s=7,stride=2,pad=3,bias=1"
spec33="n=8,c=64,h=56,w=56,k=64,r=3,s=3,pad=1,bias=1"
specdw="n=2,c=32,h=28,w=28,k=32,r=3,s=3,pad=1,groups=32,bias=0"
for pair in "wg wg3 $spec44" "tc tc3 $spec44" "s2d_wg s2d_wg3 $spec44" "gmp gmp3 $spec44" \
            "wgr direct $spec44" "wgs direct $spec44" "gmk gmk3 $spec77" "tap tap3 $spec33" \
            "dw direct $specdw"; do
  set -- $pair
  db="$tmp/f-$1.db"
  fake_tune tf32 "$1" "$db" "$3" && fake_tune fp32 "$2" "$db" "$3" &&
    "$ct" kernelbench --problem "$3" --db "$db" --out "$tmp/f-$1.py" 2> "$tmp/err"
  check "$1 and $2: entry written, both winners named" "[ $? -eq 0 ] && grep -q '#   tf32: $1:' '$tmp/f-$1.py' && grep -q '#   fp32: $2:' '$tmp/f-$1.py' || { cat '$tmp/err'; false; }"
  check "$1 and $2: the static checker passes" "static '$tmp/f-$1.py' > '$tmp/static' || { cat '$tmp/static'; false; }"
done
mkdir -p "$tmp/kdwf"
if [ -n "$nvcc" ] && kernels "$tmp/f-dw.py" "$tmp/kdwf"; then
  nvcc_check "dw: its kernels compile with nvcc" "$tmp/kdwf/tf32.cu"
fi

# Any problem through --problem; refusals.
"$ct" kernelbench --problem "n=2,c=5,h=9,w=11,k=7,r=3,s=2,stride=2,pad=1x0,dil=1,bias=1" --db "$tmp/none.db" --out "$tmp/any.py"
check "--problem: written, compiles, passes the checker" "[ $? -eq 0 ] && python3 -m py_compile '$tmp/any.py' && static '$tmp/any.py' >/dev/null"
check "--problem: nn.Conv2d's constructor with the problem's defaults" "grep -qF 'kernel_size=(3, 2), stride=(2, 2), padding=(1, 0)' '$tmp/any.py'"
# A grouped problem (depthwise here): the constructor's groups default is the
# problem's, the weight check reads C/groups channels, direct's kernels
# compile.
"$ct" kernelbench --problem "n=2,c=8,h=9,w=9,k=8,r=3,s=3,pad=1,groups=8,bias=0" --db "$tmp/none.db" --out "$tmp/dw.py"
check "--problem with groups: written, compiles, passes the checker" "[ $? -eq 0 ] && python3 -m py_compile '$tmp/dw.py' && static '$tmp/dw.py' >/dev/null"
check "--problem with groups: groups in the constructor and the checks" "grep -qF 'groups: int = 8, bias: bool = False' '$tmp/dw.py' && grep -qF '_GROUPS = 8' '$tmp/dw.py' && grep -qF '(_K, _C // _GROUPS) + _KERNEL' '$tmp/dw.py' && grep -q 'define CT_GROUPS 8' '$tmp/dw.py'"
check "--problem with groups: the spec it quotes keeps groups" "grep -q '^_SPEC = .*,groups=8' '$tmp/dw.py' && grep -q '^# convtune.s entry for the conv2d .*,groups=8$' '$tmp/dw.py'"
mkdir -p "$tmp/kdw"
if [ -n "$nvcc" ] && kernels "$tmp/dw.py" "$tmp/kdw"; then
  nvcc_check "--problem with groups: direct's kernels compile with nvcc" "$tmp/kdw/tf32.cu"
fi
check "--level1 51 refused" "! '$ct' kernelbench --level1 51 --db '$tmp/none.db' 2>/dev/null"
check "--problem with --level1 refused" "! '$ct' kernelbench --problem '$spec87' --level1 87 2>/dev/null"
"$ct" kernelbench --problem "$spec87,act=relu" --db "$tmp/none.db" > "$tmp/relu.out" 2>&1
check "--problem with act=relu refused, saying why" "[ $? -eq 2 ] && grep -q 'plain nn.Conv2d' '$tmp/relu.out'"
"$ct" kernelbench --problem "$spec87,layout=nhwc" --db "$tmp/none.db" > "$tmp/nhwc.out" 2>&1
check "--problem with layout=nhwc refused, saying why" "[ $? -eq 2 ] && grep -q 'layout=nhwc' '$tmp/nhwc.out'"
check "--out over the database refused" "! '$ct' kernelbench --level1 87 --db '$tmp/t.db' --out '$tmp/t.db' 2>/dev/null"
printf 'not python\n' > "$tmp/other.txt"
check "--out over another kind of file refused without --force" "! '$ct' kernelbench --db '$tmp/none.db' --out '$tmp/other.txt' 2>/dev/null && '$ct' kernelbench --db '$tmp/none.db' --out '$tmp/other.txt' --force"

# The committed entries (bench/kernelbench/, tuned on the H200): each of the
# seven is there, compiles as Python, passes the checker and names a tuned
# variant for both precisions.
for n in 50 55 56 62 63 80 87; do
  f="$root/bench/kernelbench/l1_p$n.py"
  check "bench/kernelbench/l1_p$n.py: compiles as Python" "[ -f '$f' ] && python3 -c 'import sys; compile(open(sys.argv[1]).read(), sys.argv[1], \"exec\")' '$f'"
  check "bench/kernelbench/l1_p$n.py: the static checker passes" "static '$f' > '$tmp/static' || { cat '$tmp/static'; false; }"
  check "bench/kernelbench/l1_p$n.py: both variants tuned" "[ \$(grep -c '^#         tuned on ' '$f') -eq 2 ]"
done

echo "kernelbench: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
