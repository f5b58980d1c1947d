#!/bin/sh
# Runs each fuzz target for a bounded time from seeds made on the spot:
#   fuzz/run.sh BUILD_DIR [SECONDS_PER_TARGET]     (default 30)
# BUILD_DIR is configured with CC=clang and -Dfuzz=true (README, "Fuzzing").
# A crash, a leak, a sanitizer report or a broken invariant stops the
# target: the input is kept in the temporary folder named on the way, and
# the script exits 1.  The last line says how many targets passed.
set -u
build=${1:?usage: fuzz/run.sh BUILD_DIR [SECONDS]}
secs=${2:-30}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/convtune-fuzz-XXXXXX)
pass=0 fail=0

# Spec seeds: the canonical form, short forms, edge values.
mkdir -p "$work/problem"
i=0
for s in \
  'n=256,c=3,h=224,w=224,k=96,r=11,s=11,stride=4,pad=2,dil=1,bias=1,prec=tf32' \
  'n=1,c=1,h=1,w=1,k=1,r=1,s=1' \
  'n=2,c=5,h=17,w=15,k=16,r=5,s=3,stride=2x1,pad=0x3,dil=1x2,bias=0,prec=fp32' \
  'prec=fp32,s=3,r=3,k=8,w=9,h=9,c=2,n=1,pad=4' \
  'act=relu,n=2,c=3,h=9,w=9,k=4,r=3,s=3,bias=0' \
  'n=2,c=4,h=9,w=9,k=4,r=3,s=3,groups=4,act=relu6,residual=1' \
  'n=1,c=8,h=9,w=9,k=4,r=3,s=3,pad=1,prec=fp32,layout=nhwc' \
  'n=1,c=3,h=224,w=224,k=64,r=16,s=16,stride=16' \
  'n=2147483647,c=1,h=1,w=1,k=1,r=1,s=1' \
  'n=-1,c=1,h=1,w=1,k=1,r=1,s=1' \
  'n=1,c=1,h=1,w=1,k=1,r=1,s=1,stride=99999999999999999999' \
  'n=12,c=1,h=1,w=1,k=1,r=1,s=1,stride=999999999' \
  'n=1,c=2147483647,h=1,w=1,k=1,r=1,s=1,stride=2147483647' \
  'n=1,c=1000,h=1,w=1,k=1,r=1,s=1,stride=2147483647x1,pad=0x1073741823' \
  'n=3,c=1000,h=1,w=1,k=1,r=1,s=1474836,pad=0x1073741823'
do
  printf '%s' "$s" > "$work/problem/seed$i"
  i=$((i + 1))
done

mkdir -p "$work/database"
if ! "$build/fuzz/fuzz_database" --make-seeds "$work/database"; then
  echo "FAIL fuzz_database: cannot make seeds"
  exit 1
fi

for t in problem database; do
  exe="$build/fuzz/fuzz_$t"
  echo "== fuzz_$t for ${secs}s"
  if ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
     "$exe" -max_total_time="$secs" -timeout=20 -rss_limit_mb=4096 \
            -print_final_stats=1 -artifact_prefix="$work/crash-$t-" \
            "$work/$t" > "$work/$t.log" 2>&1; then
    tail -n 12 "$work/$t.log" | grep -E '^(#|stat::number_of_executed_units|Done)' | tail -n 3
    echo "ok   fuzz_$t"
    pass=$((pass + 1))
  else
    tail -n 60 "$work/$t.log"
    echo "FAIL fuzz_$t (log and input in $work)"
    fail=$((fail + 1))
  fi
done
[ "$fail" -eq 0 ] && rm -rf "$work"
echo "fuzz: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
