#!/usr/bin/env bash
# Fault isolation on the GPU: a tune of a small problem with the test-only
# broken families enabled (CONVTUNE_TEST_FAMILIES=1; templates/test_faults.cu)
# must record test_oob (an illegal address) as faulted, test_hang (a kernel
# that never ends) as timeout, test_wrong as wrong and test_refuse (2048
# threads per block) as launch-failed, restart its GPU worker after the
# first two, time every real variant after them, name a correct winner,
# leave an intact database, and the runtime must then run that winner.
# Exits 77 where no GPU is usable.
#   tests/test_gpu_faults.sh PATH/TO/convtune
set -u
ct=${1:?usage: test_gpu_faults.sh CONVTUNE}
ct=$(cd "$(dirname "$ct")" && pwd)/$(basename "$ct")
if ! python3 -c 'import sqlite3, json' 2>/dev/null; then
  echo "FAIL: needs python3 with sqlite3"
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset CONVTUNE_TEST_FAKE_GPU
. "$(dirname "$0")/tune_test_lib.sh"

spec="n=2,c=3,h=45,w=47,k=20,r=11,s=11,stride=4,pad=2"
db="$tmp/faults.db"
n_direct=$("$ct" space --arch sm_90a --problem "$spec" --families direct --json 2>/dev/null |
           python3 -c 'import json,sys; print(sum(v["family"] == "direct" for v in json.load(sys.stdin)["variants"]))')
t0=$(date +%s)
CONVTUNE_TEST_FAMILIES=1 "$ct" tune --problem "$spec" --trials 3 --final-trials 20 \
  --families test_oob,test_hang,test_wrong,test_refuse,direct --watchdog 5 \
  --db "$db" --json > "$tmp/f.json" 2> "$tmp/f.err"
rc=$?
if grep -q "no CUDA driver\|no CUDA device" "$tmp/f.err"; then
  echo "SKIP: no usable GPU: $(grep -m1 'CUDA' "$tmp/f.err")"
  exit 77
fi
echo "tune: exit $rc in $(( $(date +%s) - t0 )) s"
grep -v '^\[' "$tmp/f.err" | head -5
check "the tune finishes (exit 0)" "[ $rc -eq 0 ]"
[ $rc -eq 0 ] || { cat "$tmp/f.err"; exit 1; }
python3 -c '
import json, sys
for t in json.load(open(sys.argv[1]))["trials"]:
    if t["variant"].startswith("test_"): print("   ", t["variant"], t["status"], t["message"])' "$tmp/f.json"
check "test_oob recorded as faulted" "[ '$(status_of "$tmp/f.json" test_oob)' = faulted ]"
check "test_oob: an illegal address, or the worker died of it" "python3 -c 'import json,sys; m=[t[\"message\"] for t in json.load(open(sys.argv[1]))[\"trials\"] if t[\"variant\"]==\"test_oob\"][0]; sys.exit(not (\"ILLEGAL_ADDRESS\" in m or \"worker died\" in m))' '$tmp/f.json'"
check "test_hang recorded as timeout" "[ '$(status_of "$tmp/f.json" test_hang)' = timeout ]"
check "test_wrong recorded as wrong" "[ '$(status_of "$tmp/f.json" test_wrong)' = wrong ]"
check "test_refuse recorded as launch-failed" "[ '$(status_of "$tmp/f.json" test_refuse)' = launch-failed ]"
check "the GPU worker was restarted twice" "[ $(jget "$tmp/f.json" restarts) -eq 2 ]"
check "every direct variant timed after the faults ($n_direct)" "[ $(timed_of "$tmp/f.json" direct) -ge $n_direct ] && [ $n_direct -gt 0 ]"
check "a direct variant wins" "jget '$tmp/f.json' winner | grep -q '^direct:'"
check "the statuses are in the database" "[ $(sql "$db" "SELECT count(*) FROM trials WHERE status IN ('faulted', 'timeout')") -eq 2 ]"
check "integrity ok" "integrity '$db'"
"$ct" check --problem "$spec" --db "$db" > "$tmp/c.out" 2>&1
check "the runtime runs the stored winner and it passes" "[ \$? -eq 0 ] && grep -q 'tuned-cubin' '$tmp/c.out'"

# A residual problem (y read, then written) through the runtime: its tuned
# winner, plain and with packed weights (check --packed keeps the verified
# plain output before its timed runs, which each add to y, and the packed
# call must give it bit for bit); and a family that declines residuals is
# refused by name.
rspec="n=2,c=64,h=16,w=16,k=128,r=1,s=1,act=relu,residual=1"
"$ct" tune --problem "$rspec" --families gm,pw --max-variants 4 --trials 3 --final-trials 5 \
  --db "$tmp/r.db" > "$tmp/r.out" 2>&1
check "a residual problem tunes (exit 0)" "[ \$? -eq 0 ]"
"$ct" check --problem "$rspec" --db "$tmp/r.db" --packed --json > "$tmp/rc.json" 2> "$tmp/rc.err"
check "check --packed on it passes, plain and packed" "[ \$? -eq 0 ] && python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
r = d[\"problems\"][0] if \"problems\" in d else d
sys.exit(not (r[\"passes\"] and r[\"packed\"][\"passes\"]))' '$tmp/rc.json'"
"$ct" tune --problem "$rspec" --families gme --db "$tmp/r.db" > "$tmp/rg.out" 2>&1
check "gme is refused for a residual problem, saying why" "[ \$? -ne 0 ] && grep -q 'gme: no residual' '$tmp/rg.out'"
# A residual variant cannot have its output poisoned (it reads y): the
# second verified run (y = 2^-100) must find the 64 outputs test_skip
# stores in its module's first launch only (the first run, which passes),
# all but any whose sum is within the contract's bound of 0 (a written
# output could be 2^-100 there too; about 1 in 200 at tf32).
CONVTUNE_TEST_FAMILIES=1 "$ct" tune --problem "$rspec" --families test_skip,direct \
  --trials 3 --final-trials 5 --db "$tmp/r.db" --fresh --json > "$tmp/rs.json" 2> /dev/null
check "test_skip on a residual problem is wrong: 56 to 64 of 65536 outputs never written" "python3 -c '
import json, re, sys
t = [t for t in json.load(open(sys.argv[1]))[\"trials\"] if t[\"variant\"] == \"test_skip\"]
m = t and re.fullmatch(r\"(\\d+) of 65536 outputs never written\", t[0][\"message\"])
sys.exit(not (m and t[0][\"status\"] == \"wrong\" and 56 <= int(m.group(1)) <= 64))' '$tmp/rs.json'"
echo "gpu faults: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
