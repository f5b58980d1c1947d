#!/usr/bin/env bash
# Never losing work, on the GPU: `convtune tune` on a small problem is
# stopped with SIGINT, SIGTERM and SIGKILL at random moments; each time
# the exit status and message are checked, no GPU worker may be left
# running, PRAGMA integrity_check must say ok (python3's sqlite3; the GPU
# machine has no sqlite3 CLI), and a rerun must resume exactly the variants
# recorded, screen the rest, keep every finished trial and name a winner.
# Then two tuners run on one database at once (two problems, then the same
# one): both finish and every trial of both is there.
# Exits 77 where no GPU is usable.
#   tests/test_gpu_interrupt.sh PATH/TO/convtune
set -u
ct=${1:?usage: test_gpu_interrupt.sh CONVTUNE}
ct=$(cd "$(dirname "$ct")" && pwd)/$(basename "$ct")
if ! python3 -c 'import sqlite3, json' 2>/dev/null; then
  echo "FAIL: needs python3 with sqlite3"
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset CONVTUNE_TEST_FAKE_GPU CONVTUNE_TEST_FAMILIES
. "$(dirname "$0")/tune_test_lib.sh"

spec="n=2,c=3,h=45,w=47,k=20,r=11,s=11,stride=4,pad=2"
spec2="n=1,c=16,h=30,w=30,k=32,r=3,s=3,pad=1"
common=(--problem "$spec" --trials 3 --final-trials 20)
best="" # real timings: the rerun's winner may differ by noise

# A cold tune fills the compile cache; warm copies start each round.
base="$tmp/base.db"
t0=$(date +%s%N)
"$ct" tune "${common[@]}" --db "$base" --json > "$tmp/base.json" 2> "$tmp/base.err"
rc=$?
if grep -q "no CUDA driver\|no CUDA device" "$tmp/base.err"; then
  echo "SKIP: no usable GPU: $(grep -m1 'CUDA' "$tmp/base.err")"
  exit 77
fi
check "cold tune exits 0" "[ $rc -eq 0 ]"
[ $rc -eq 0 ] || { cat "$tmp/base.err"; exit 1; }
n=$(jget "$tmp/base.json" variants)
echo "cold tune: $n variants in $(jget "$tmp/base.json" wall_s) s"
warm() {
  cp "$base" "$1"
  sql "$1" "DELETE FROM winners" >/dev/null
  sql "$1" "DELETE FROM trials" >/dev/null
}
warm "$tmp/timing.db"
t0=$(date +%s%N)
"$ct" tune "${common[@]}" --db "$tmp/timing.db" > /dev/null 2>&1
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
echo "a warm tune takes $ms ms: signals land within 0..$((ms + 500)) ms"

for sig in INT TERM INT TERM; do interrupt $sig $((128 + $(kill -l $sig))) $((ms + 500)); done
for i in 1 2 3 4 5 6; do interrupt KILL 137 $((ms + 500)); done

# Two tuners on one database at once.
db="$tmp/two.db"
warm "$db"
"$ct" tune "${common[@]}" --db "$db" > "$tmp/a.out" 2>&1 & a=$!
"$ct" tune --problem "$spec2" --families direct --trials 3 --final-trials 20 --db "$db" > "$tmp/b.out" 2>&1 & b=$!
wait $a; ra=$?
wait $b; rb=$?
check "two tuners: both finish" "[ $ra -eq 0 ] && [ $rb -eq 0 ]"
na=$(grep -c '^\[' "$tmp/a.out"); nb=$(grep -c '^\[' "$tmp/b.out")
check "two tuners: every trial of both recorded ($na + $nb)" "[ $(sql "$db" 'SELECT count(*) FROM trials') -eq $((na + nb)) ]"
check "two tuners: both winners stored" "[ $(sql "$db" 'SELECT count(*) FROM winners') -eq 2 ]"
check "two tuners: integrity ok" "integrity '$db'"
"$ct" tune "${common[@]}" --db "$db" --fresh > "$tmp/a.out" 2>&1 & a=$!
"$ct" tune "${common[@]}" --db "$db" --fresh > "$tmp/b.out" 2>&1 & b=$!
wait $a; ra=$?
wait $b; rb=$?
check "two tuners, one problem: both finish" "[ $ra -eq 0 ] && [ $rb -eq 0 ]"
na2=$(grep -c '^\[' "$tmp/a.out"); nb2=$(grep -c '^\[' "$tmp/b.out")
check "two tuners, one problem: nothing lost" "[ $(sql "$db" 'SELECT count(*) FROM trials') -eq $((na + nb + na2 + nb2)) ]"
check "two tuners, one problem: integrity ok" "integrity '$db'"

echo "gpu interrupt: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
