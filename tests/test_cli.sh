#!/bin/sh
# CLI behaviour that needs no GPU: help, usage errors, the database
# commands, and a clear failure when the CUDA driver is missing (forced
# with CONVTUNE_LIBCUDA, so this holds on GPU machines too).
#   tests/test_cli.sh PATH/TO/convtune
set -u
ct=${1:?usage: test_cli.sh CONVTUNE}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0

# expect NAME WANT_RC PATTERN CMD... : exit code WANT_RC, output matching PATTERN
expect() {
  name=$1 want=$2 pattern=$3
  shift 3
  out=$("$@" 2>&1)
  rc=$?
  if [ "$rc" -ne "$want" ]; then
    echo "FAIL $name: exit $rc, wanted $want"; echo "$out" | sed 's/^/    /'
    fail=$((fail + 1)); return
  fi
  if ! printf '%s\n' "$out" | grep -q -- "$pattern"; then
    echo "FAIL $name: output lacks '$pattern'"; echo "$out" | sed 's/^/    /'
    fail=$((fail + 1)); return
  fi
  echo "ok   $name"; pass=$((pass + 1))
}

expect help 0 'commands:' "$ct" --help
expect no-args 2 'usage: convtune' "$ct"
expect version 0 '^convtune [0-9]' "$ct" --version
expect tune-help 0 'usage: convtune tune' "$ct" tune --help
expect check-help 0 'usage: convtune check' "$ct" check --help
expect db-help 0 'usage: convtune db list' "$ct" db --help
expect unknown-command 2 "unknown command 'frobnicate'" "$ct" frobnicate
expect unknown-option 2 'unknown option --frob' "$ct" tune --frob 1
expect missing-value 2 '--problem needs a value' "$ct" tune --problem
expect bad-precision 2 'tf32 or fp32' "$ct" tune --precision fp16
expect bad-spec 2 'stride' "$ct" tune --problem 'n=1,c=1,h=8,w=8,k=1,r=3,s=3,stride=0'
expect bad-threads 2 'integer in' "$ct" tune --threads zero

expect space-help 0 'usage: convtune space' "$ct" space --help
expect space-arch 0 'valid variants in' "$ct" space --arch sm_90a
expect space-json 0 '"variants": \[{"family": "direct"' "$ct" space --arch sm_90a --json --precision fp32
expect space-bad-arch 2 "unknown architecture 'sm_12'" "$ct" space --arch sm_12
# No variant at all (the grid past 2^31 blocks): no family filter to name.
expect space-none 1 'no valid variant for n=1,c=1,h=65536,w=65536,k=65536.* on sm_90a$' "$ct" space --arch sm_90a --problem n=1,c=1,h=65536,w=65536,k=65536,r=1,s=1
expect space-no-driver 1 'pass --arch' env CONVTUNE_LIBCUDA="$tmp/none/libcuda.so.1" "$ct" space

db="$tmp/sub/dir/tuning.db"
expect db-list-missing 0 'nothing tuned yet' "$ct" db list --db "$db"
expect db-list-missing-json 0 '^\[\]$' "$ct" db list --db "$db" --json
[ -e "$db" ] && { echo "FAIL db-list-readonly: db list created $db"; fail=$((fail + 1)); }
expect db-show-missing 1 'no tuning database' "$ct" db show 1 --db "$db"
expect db-show-no-id 2 'needs one problem ID' "$ct" db show --db "$db"
expect list-bad-precision 2 "^convtune: --precision must be tf32 or fp32, not 'xx'" "$ct" tune --problems /nonexistent --precision xx
expect report-id-and-precision 2 'a problem ID names its problem and precision' "$ct" report 1 --precision fp32 --db "$db"
expect db-list-precision 2 '--precision sets a list.s precision: it needs --problems' "$ct" db list --db "$db" --precision fp32
expect db-list-env 0 "$tmp/env.db" env CONVTUNE_DB="$tmp/env.db" "$ct" db list
expect db-list-xdg 0 "$tmp/xdg/convtune/tuning.db" env -u CONVTUNE_DB XDG_CACHE_HOME="$tmp/xdg" "$ct" db list
expect db-list-home 0 "$tmp/home/.cache/convtune/tuning.db" env -u CONVTUNE_DB -u XDG_CACHE_HOME HOME="$tmp/home" "$ct" db list
printf 'this is not a database, just some bytes that go on for a while....' > "$tmp/junk.db"
expect db-list-corrupt 1 "$tmp/junk.db" "$ct" db list --db "$tmp/junk.db"

nodrv="$tmp/no-such-dir/libcuda.so.1"
expect tune-no-driver 1 'no CUDA driver' env CONVTUNE_LIBCUDA="$nodrv" "$ct" tune --db "$tmp/nodrv.db"
[ -e "$tmp/nodrv.db" ] && { echo "FAIL tune-no-driver: made $tmp/nodrv.db"; fail=$((fail + 1)); }
expect check-no-driver 1 'no CUDA driver' env CONVTUNE_LIBCUDA="$nodrv" "$ct" check --db "$db"
expect tune-no-gpu-hint 1 'without a GPU these work: `convtune space --arch sm_90a`.*db commands.*report.*CONVTUNE_TEST_FAKE_GPU=1' env CONVTUNE_LIBCUDA="$nodrv" "$ct" tune --db "$tmp/nodrv.db"
expect check-no-gpu-hint 1 'without a GPU these work:.*CONVTUNE_TEST_FAKE_GPU=1' env CONVTUNE_LIBCUDA="$nodrv" "$ct" check --db "$db"
expect plural-one-family 0 'valid variants in 1 family$' "$ct" space --arch sm_90a --families direct
expect plural-families 0 'valid variants in 2 families$' "$ct" space --arch sm_90a --families direct,tc

# The tuner's options and the database tools (tests/test_tune_fake.sh runs
# them for real).
expect tune-help-resume 0 'fresh' "$ct" tune --help
expect bad-budget 2 'seconds > 0' "$ct" tune --budget -3
expect bad-max-variants 2 'integer in' "$ct" tune --max-variants 0
expect bad-watchdog 2 'seconds > 0' "$ct" tune --watchdog zero
expect unknown-family 2 "unknown family 'nosuch'" env CONVTUNE_TEST_FAKE_GPU=1 "$ct" tune --families direct,nosuch --db "$tmp/f.db"
expect no-test-families 2 "unknown family 'test_oob'" env CONVTUNE_TEST_FAKE_GPU=1 "$ct" tune --families test_oob --db "$tmp/f.db"
expect space-families 0 '^direct ' "$ct" space --arch sm_90a --families direct
expect report-help 0 'usage: convtune report' "$ct" report --help
expect report-missing 1 'no tuning database' "$ct" report --db "$db"
expect db-check-missing 1 'no tuning database' "$ct" db check --db "$db"
expect db-export-missing 1 'no tuning database' "$ct" db export --db "$db"
expect db-import-none 2 'needs one FILE' "$ct" db import --db "$db"
expect db-import-missing 1 'cannot read' "$ct" db import "$tmp/none.txt" --db "$db"
printf 'hello\n' > "$tmp/not-export.txt"
expect db-import-junk 1 'not a convtune export' "$ct" db import "$tmp/not-export.txt" --db "$tmp/j.db"
expect db-merge-missing 1 'no such file' "$ct" db merge "$tmp/none.db" --db "$tmp/j.db"
# Output that cannot be written is a failure, not a silent success.
full() { # full NAME CMD...: stdout on /dev/full: exit 1 with a message
  name=$1; shift
  out=$("$@" 2>&1 > /dev/full)
  rc=$?
  if [ "$rc" -ne 1 ] || ! printf '%s\n' "$out" | grep -q 'writing the standard output\|cannot write'; then
    echo "FAIL $name: exit $rc, message '$out'"; fail=$((fail + 1))
  else
    echo "ok   $name"; pass=$((pass + 1))
  fi
}
if [ -w /dev/full ]; then
  full full-space "$ct" space --arch sm_90a
  full full-space-json "$ct" space --arch sm_90a --json
  full full-help "$ct" --help
  full full-tune-help "$ct" tune --help
  full full-version "$ct" --version
  full full-db-list-json "$ct" db list --json --db "$tmp/sub/dir/tuning.db"
  full full-db-list "$ct" db list --db "$tmp/sub/dir/tuning.db"
else
  echo "skip /dev/full tests: no writable /dev/full"
fi

# Options (getopt_long, one table per command): --opt=value, unknown and
# misplaced options named as such with the command's usage line, one
# family filter for every command.
expect opt-equals 0 'valid variants in' "$ct" space --arch=sm_90a
expect opt-equals-json 0 '"arch": "sm_90a"' "$ct" space --json --arch=sm_90a --families=direct
expect unknown-last 2 'unknown option --bogus' "$ct" space --bogus
expect unknown-usage 2 'usage: convtune space' "$ct" space --bogus
expect unknown-short 2 'unknown option -x' "$ct" space -x
expect flag-with-value 2 '--json takes no value' "$ct" db list --json=1 --db "$db"
expect misplaced-budget 2 '--budget is not an option of `convtune db list`' "$ct" db list --budget 5 --db "$db"
expect misplaced-usage 2 'usage: convtune db list' "$ct" db list --budget 5 --db "$db"
expect misplaced-problem 2 '--problem is not an option of `convtune db show`' "$ct" db show 1 --problem X --db "$db"
expect misplaced-out 2 '--out is not an option of `convtune tune`' "$ct" tune --out x.svg
expect misplaced-arch 2 '--arch is not an option of `convtune check`' "$ct" check --arch sm_90a
expect report-id-and-problem 2 'a problem ID names its problem and precision: give it, or --problem' "$ct" report 1 --problem "n=1,c=1,h=8,w=8,k=1,r=3,s=3" --db "$db"
expect missing-value-last 2 '--db needs a value' "$ct" db list --db
expect missing-value-usage 2 'usage: convtune db list' "$ct" db list --db
expect extra-argument 2 "unexpected argument 'x'" "$ct" db list x --db "$db"
expect space-extra-argument 2 "unexpected argument 'x'" "$ct" space x
expect db-sub-first 2 'the subcommand comes first' "$ct" db --db "$db" list
expect db-no-sub 2 'needs a subcommand' "$ct" db
expect db-unknown-sub 2 "unknown subcommand 'frob'" "$ct" db frob
expect db-sub-help 0 'usage: convtune db list' "$ct" db show --help
expect double-dash 2 "unexpected argument '--json'" "$ct" db list --db "$db" -- --json
expect space-unknown-family 2 "unknown family 'nosuch'" "$ct" space --arch sm_90a --families nosuch
expect space-empty-family 2 'an empty family name' "$ct" space --arch sm_90a --families direct,
expect tune-unknown-family 2 "unknown family 'nosuch'" "$ct" tune --families nosuch --db "$tmp/f.db"
expect space-no-variant 1 'no valid variant' "$ct" space --arch sm_80 --families wgr
# A depthwise problem (a channel multiplier of 2): direct, its channel tiles
# within a group (K/G = 2: TK = 1), and dw; a grouped one that is not
# depthwise: direct and tc (8 output channels a group: BN = 8); the
# families that decline say why.
gspec="n=2,c=32,h=28,w=28,k=64,r=3,s=3,pad=1,groups=32"
expect space-groups 0 '^32 valid variants in 2 families$' "$ct" space --arch sm_90a --problem "$gspec"
expect space-groups-tk1 0 'direct:THREADS=64,TP=1,TK=1$' "$ct" space --arch sm_90a --problem "$gspec"
expect space-groups-dw 0 'dw:THREADS=128,TP=2,BQ=32$' "$ct" space --arch sm_90a --problem "$gspec"
expect space-groups-8 0 '^39 valid variants in 2 families$' "$ct" space --arch sm_90a \
  --problem "n=2,c=32,h=28,w=28,k=64,r=3,s=3,pad=1,groups=8"
expect space-groups-8-tc 0 'tc:TP=2,BN=8,WARPS=4,WN=1,STAGES=2,PERSIST=1$' "$ct" space \
  --arch sm_90a --problem "n=2,c=32,h=28,w=28,k=64,r=3,s=3,pad=1,groups=8"
expect space-groups-declined 1 'groups=32 on sm_90a in families gm,wg (wg: no groups; gm: no groups)' \
  "$ct" space --arch sm_90a --problem "$gspec" --families gm,wg
expect space-groups-bad 2 'groups = 3 must divide both c = 32 and k = 64' \
  "$ct" space --arch sm_90a --problem "n=2,c=32,h=28,w=28,k=64,r=3,s=3,groups=3"
[ -e "$tmp/f.db" ] && { echo "FAIL unknown-family: tune created $tmp/f.db"; fail=$((fail + 1)); }

expect worker-usage 2 'started by the tuner' "$ct" __ct_worker

echo "cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
