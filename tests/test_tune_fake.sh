#!/usr/bin/env bash
# The tuning loop on CPU, through the CLI, with the worker's fake GPU
# (CONVTUNE_TEST_FAKE_GPU=1: no CUDA, deterministic times; NVRTC still
# compiles every variant for real):
#   - fault isolation: the test families' illegal address, hang, wrong
#     result and refused launch are recorded as such and the tune goes on;
#   - resume: a rerun screens nothing again, --fresh recompiles nothing;
#   - SIGINT / SIGTERM / SIGKILL at random moments: the exit status, no
#     finished trial lost, PRAGMA integrity_check ok, no worker left behind,
#     the rerun skips what is done;
#   - two tuners on one database at once: both finish, nothing lost;
#   - budgeted search: within 3% of the exhaustive winner; --budget keeps
#     to its time; the nearest tuned problem's winner screened first
#     (priors), not with --no-priors, an exhaustive search, another
#     precision or another filter size;
#   - problem lists: tune --problems (text and JSON), reruns skip what is
#     tuned, SIGKILL in a list tune, --shard shares merged against one
#     run, --weighted budgets, --devices over 2 and 4 fake GPUs (spread,
#     nothing lost or done twice, a faulting worker restarted, a missing
#     GPU stopping alone), db list --problems, the list's errors;
#   - report, db check, export / import / merge, the progress bar.
#   tests/test_tune_fake.sh PATH/TO/convtune
set -u
ct=${1:?usage: test_tune_fake.sh CONVTUNE}
ct=$(cd "$(dirname "$ct")" && pwd)/$(basename "$ct")
if ! python3 -c 'import sqlite3, json' 2>/dev/null; then
  echo "SKIP: needs python3 with sqlite3"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export CONVTUNE_TEST_FAKE_GPU=1 CONVTUNE_TEST_FAKE_MS=20
unset CONVTUNE_TEST_FAMILIES
spec="n=1,c=3,h=20,w=20,k=8,r=3,s=3,pad=1"
spec2="n=1,c=2,h=17,w=19,k=6,r=3,s=3,stride=2"
common=(--problem "$spec" --families direct --final-trials 20)
. "$(dirname "$0")/tune_test_lib.sh"

# ---------------------------------------------------------------------------
# A cold tune fills the compile cache; copies of it (trials dropped) start
# the other tests warm.
base="$tmp/base.db"
"$ct" tune "${common[@]}" --db "$base" --json > "$tmp/base.json" 2> "$tmp/base.err"
rc=$?
check "cold tune exits 0" "[ $rc -eq 0 ]"
n=$(jget "$tmp/base.json" variants)
check "cold tune screened every variant" "[ $(jget "$tmp/base.json" screened) -eq $n ] && [ $n -ge 20 ]"
check "cold tune compiled every variant" "[ $(jget "$tmp/base.json" compiled) -ge $n ]"
check "per-variant progress lines in a pipe" "grep -q '^\[1/$n\] timed' '$tmp/base.err'"
best=$(jget "$tmp/base.json" winner)
best_ms=$(jget "$tmp/base.json" winner_mean_ms)
check "cold tune names a winner" "[ -n '$best' ] && [ '$best' != null ]"
check "cold tune leaves an intact database" "integrity '$base'"
check "the compile cache holds every cubin" "[ $(sql "$base" 'SELECT count(*) FROM cubins') -ge $n ]"

# A depthwise problem (32 groups, 2 output channels each) tunes on direct's
# variants of TK = 1 (a tile within one group) and dw's, and is stored
# under its canonical spec.
gspec="n=2,c=32,h=28,w=28,k=64,r=3,s=3,pad=1,act=relu,groups=32"
"$ct" tune --problem "$gspec" --final-trials 5 --db "$tmp/groups.db" --json > "$tmp/groups.json" 2>/dev/null
check "groups: tuned on direct's 9 variants of TK = 1 and dw's" "[ $? -eq 0 ] && [ $(jget "$tmp/groups.json" variants) -eq 32 ] && [ $(timed_of "$tmp/groups.json" direct) -eq 9 ] && jget '$tmp/groups.json' winner | grep -Eq '^(direct:.*,TK=1|dw:.*)$'"
check "groups: stored under the canonical spec" "[ $(sql "$tmp/groups.db" "SELECT count(*) FROM winners w JOIN problems p ON p.id = w.problem_id WHERE p.spec LIKE '%,act=relu,groups=32'") -eq 1 ]"

warm() { # warm DEST: a database with the cubins but no trials
  cp "$base" "$1"
  sql "$1" "DELETE FROM winners" >/dev/null
  sql "$1" "DELETE FROM trials" >/dev/null
}

# ---------------------------------------------------------------------------
# Resume and --fresh.
"$ct" tune "${common[@]}" --db "$base" --json > "$tmp/r.json" 2>/dev/null
check "rerun exits 0" "[ $? -eq 0 ]"
check "rerun screens nothing" "[ $(jget "$tmp/r.json" screened) -eq 0 ] && [ $(jget "$tmp/r.json" resumed) -eq $n ]"
check "rerun re-times the finalists" "[ $(finalists "$tmp/r.json") -eq 3 ]"
check "rerun names the same winner" "[ '$(jget "$tmp/r.json" winner)' = '$best' ]"
"$ct" tune "${common[@]}" --db "$base" --json --fresh > "$tmp/f.json" 2>/dev/null
check "--fresh screens everything from cached cubins" "[ $(jget "$tmp/f.json" screened) -eq $n ] && [ $(jget "$tmp/f.json" compiled) -eq 0 ] && [ $(jget "$tmp/f.json" cached) -eq $n ]"

# ---------------------------------------------------------------------------
# Fault isolation: the broken test families, first in line.
db="$tmp/faults.db"
warm "$db"
CONVTUNE_TEST_FAMILIES=1 "$ct" tune --problem "$spec" --final-trials 20 \
  --families test_oob,test_hang,test_wrong,test_refuse,direct --watchdog 1 \
  --db "$db" --json > "$tmp/faults.json" 2> "$tmp/faults.err"
rc=$?
check "faults: the tune finishes (exit 0)" "[ $rc -eq 0 ]"
check "faults: test_oob recorded as faulted" "[ '$(status_of "$tmp/faults.json" test_oob)' = faulted ]"
check "faults: test_hang recorded as timeout" "[ '$(status_of "$tmp/faults.json" test_hang)' = timeout ]"
check "faults: test_wrong recorded as wrong" "[ '$(status_of "$tmp/faults.json" test_wrong)' = wrong ]"
check "faults: test_refuse recorded as launch-failed" "[ '$(status_of "$tmp/faults.json" test_refuse)' = launch-failed ]"
check "faults: the worker was restarted twice" "[ $(jget "$tmp/faults.json" restarts) -eq 2 ]"
check "faults: every real variant still timed" "[ $(timed_of "$tmp/faults.json" direct) -eq $n ]"
check "faults: the exhaustive winner still wins" "[ '$(jget "$tmp/faults.json" winner)' = '$best' ]"
check "faults: statuses stored in the database" "[ $(sql "$db" "SELECT count(*) FROM trials WHERE status IN ('faulted','timeout')") -eq 2 ]"
check "faults: without the variable no test family exists" "! '$ct' tune --problem '$spec' --families test_oob --db '$db' 2>&1 | grep -q timed"
# In-process (no isolation): the same statuses, no watchdog needed for the fake.
db="$tmp/inproc.db"
warm "$db"
CONVTUNE_TEST_FAMILIES=1 "$ct" tune --problem "$spec" --final-trials 20 --no-isolate \
  --families test_wrong,test_refuse,direct --db "$db" --json > "$tmp/inproc.json" 2>/dev/null
check "--no-isolate: tunes in process" "[ $? -eq 0 ] && [ '$(status_of "$tmp/inproc.json" test_refuse)' = launch-failed ] && [ '$(jget "$tmp/inproc.json" winner)' = '$best' ]"

# ---------------------------------------------------------------------------
# Interruptions at random moments (tune_test_lib.sh: interrupt).
export CONVTUNE_TEST_FAKE_MS=60
for sig in INT TERM INT TERM; do interrupt $sig $((128 + $(kill -l $sig))) 2200; done
for i in 1 2 3 4 5; do interrupt KILL 137 2200; done
export CONVTUNE_TEST_FAKE_MS=20

# ---------------------------------------------------------------------------
# Two tuners on one database at once: other problems, then the same one.
db="$tmp/two.db"
warm "$db"
"$ct" tune "${common[@]}" --db "$db" > "$tmp/a.out" 2>&1 & a=$!
"$ct" tune --problem "$spec2" --families direct --final-trials 20 --db "$db" > "$tmp/b.out" 2>&1 & b=$!
wait $a; ra=$?
wait $b; rb=$?
check "two tuners: both finish" "[ $ra -eq 0 ] && [ $rb -eq 0 ]"
check "two tuners: both winners stored" "[ $(sql "$db" 'SELECT count(*) FROM winners') -eq 2 ]"
na=$(grep -c '^\[' "$tmp/a.out"); nb=$(grep -c '^\[' "$tmp/b.out")
check "two tuners: every trial of both recorded" "[ $(sql "$db" 'SELECT count(*) FROM trials') -eq $((na + nb)) ]"
check "two tuners: integrity ok" "integrity '$db'"
"$ct" tune "${common[@]}" --db "$db" --fresh > "$tmp/a.out" 2>&1 & a=$!
"$ct" tune "${common[@]}" --db "$db" --fresh > "$tmp/b.out" 2>&1 & b=$!
wait $a; ra=$?
wait $b; rb=$?
check "two tuners, same problem: both finish" "[ $ra -eq 0 ] && [ $rb -eq 0 ]"
na2=$(grep -c '^\[' "$tmp/a.out"); nb2=$(grep -c '^\[' "$tmp/b.out")
check "two tuners, same problem: nothing lost" "[ $(sql "$db" 'SELECT count(*) FROM trials') -eq $((na + nb + na2 + nb2)) ]"
check "two tuners, same problem: integrity ok" "integrity '$db'"

# ---------------------------------------------------------------------------
# Budgeted search on the fake device's smooth landscape.
db="$tmp/budget.db"
warm "$db"
"$ct" tune "${common[@]}" --db "$db" --max-variants 9 --json > "$tmp/b.json" 2>/dev/null
check "--max-variants 9: exit 0" "[ $? -eq 0 ]"
check "--max-variants 9: screens 9" "[ $(jget "$tmp/b.json" screened) -eq 9 ] && [ '$(jget "$tmp/b.json" search)' = budgeted ]"
check "--max-variants 9: within 3% of the exhaustive winner" "below $(jget "$tmp/b.json" winner_mean_ms) $(python3 -c "print(1.03 * $best_ms)")"
"$ct" tune "${common[@]}" --db "$db" --max-variants 9 --json > "$tmp/b2.json" 2>/dev/null
check "--max-variants 9 again: the budget is already spent" "[ $(jget "$tmp/b2.json" screened) -eq 0 ]"
db="$tmp/budget2.db"
warm "$db"
CONVTUNE_TEST_FAKE_MS=100 "$ct" tune "${common[@]}" --db "$db" --budget 2 --json > "$tmp/t.json" 2>/dev/null
check "--budget 2: exit 0 with a winner" "[ $? -eq 0 ] && [ '$(jget "$tmp/t.json" winner)' != null ]"
check "--budget 2: stops in time" "below $(jget "$tmp/t.json" wall_s) 3.0"
check "--budget 2: screened only part" "[ $(jget "$tmp/t.json" screened) -lt $n ]"
# A budget spent on a failing screen: the search goes on until a variant
# passes (test_wrong, listed first, fails; the winner is direct's).
db="$tmp/budget3.db"
CONVTUNE_TEST_FAMILIES=1 CONVTUNE_TEST_FAKE_MS=300 "$ct" tune --problem "$spec" \
  --families test_wrong,direct --no-priors --budget 0.1 --db "$db" --json > "$tmp/t3.json" 2>/dev/null
check "--budget 0.1 past a failing screen: a winner, direct's" "[ $? -eq 0 ] && [ '$(status_of "$tmp/t3.json" test_wrong)' = wrong ] && case '$(jget "$tmp/t3.json" winner)' in direct:*) true ;; *) false ;; esac"
# A listed problem no variant passes: its error says what was tried and the
# first failure.
printf '%s\n' "$spec" > "$tmp/fail.txt"
CONVTUNE_TEST_FAMILIES=1 "$ct" tune --problems "$tmp/fail.txt" --families test_wrong,test_refuse \
  --db "$tmp/fail.db" --json > "$tmp/fail.json" 2>/dev/null
check "a list problem without a winner: exit 1, its error says why" "[ $? -eq 1 ] && python3 -c '
import json, sys
e = json.load(open(sys.argv[1]))[\"problems\"][0][\"error\"]
sys.exit(e != \"no variant passed its precision contract (2 tried, 1 wrong, 1 launch-failed; \"
              \"test_wrong: Frobenius: far off (fake))\")' '$tmp/fail.json'"
# A search that stops before a family's first variant names the families
# it left untried; an exhaustive one names none.
check "exhaustive: no family left untried" "[ '$(jget "$tmp/base.json" unscreened_families)' = '[]' ]"
db="$tmp/budget3.db"
"$ct" tune --problem "$spec" --max-variants 1 --final-trials 5 --db "$db" --json > "$tmp/u.json" 2>/dev/null
check "--max-variants 1 over every family: exit 0" "[ $? -eq 0 ]"
check "--max-variants 1: the untried families named, the tried one not" "python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
tried = {t[\"variant\"].split(\":\")[0] for t in d[\"trials\"]}
left = d[\"unscreened_families\"]
sys.exit(not (len(tried) == 1 and left and not tried & set(left)))' '$tmp/u.json'"
"$ct" tune --problem "$spec" --max-variants 1 --final-trials 5 --db "$tmp/budget4.db" > "$tmp/u.out" 2>/dev/null
check "--max-variants 1: the summary's note" "grep -q '^note     the search stopped before any variant of' '$tmp/u.out'"
printf '%s\n%s\n' "$spec" "$spec2" > "$tmp/u.txt"
"$ct" tune --problems "$tmp/u.txt" --max-variants 1 --final-trials 5 --db "$tmp/budget5.db" --json > "$tmp/ul.json" 2>/dev/null
check "a list at --max-variants 1: each problem names its untried families" "python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))[\"problems\"]
sys.exit(not (len(d) == 2 and all(p[\"unscreened_families\"] for p in d)))' '$tmp/ul.json'"
"$ct" tune --problems "$tmp/u.txt" --max-variants 1 --final-trials 5 --db "$tmp/budget6.db" > "$tmp/ul.out" 2>/dev/null
check "a list at --max-variants 1: the summary's note" "grep -q '^note: 2 problems. searches stopped before some families' '$tmp/ul.out'"

# ---------------------------------------------------------------------------
# Priors: a budgeted tune screens first the winners of the nearest problems
# tuned on this device at this precision; --no-priors and an exhaustive
# search do not.
db="$tmp/prior.db"
warm "$db"
spec3="n=2,c=3,h=20,w=20,k=8,r=3,s=3,pad=1"
"$ct" tune "${common[@]}" --db "$db" --json > "$tmp/p1.json" 2>/dev/null
w1=$(jget "$tmp/p1.json" winner); s1=$(jget "$tmp/p1.json" problem)
"$ct" tune --problem "$spec3" --families direct --max-variants 6 --final-trials 5 --db "$db" \
  --json > "$tmp/p2.json" 2>/dev/null
check "priors: exit 0" "[ $? -eq 0 ]"
check "priors: the nearest tuned problem's winner, named with its problem" "python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(d[\"priors\"] != [{\"variant\": sys.argv[2], \"from\": sys.argv[3]}])' '$tmp/p2.json' '$w1' '$s1'"
s3=$(jget "$tmp/p2.json" problem)
first=$(sql "$db" "SELECT t.variant FROM trials t JOIN problems p ON p.id = t.problem_id
                   WHERE p.spec = '$s3' ORDER BY t.id LIMIT 1")
check "priors: screened first" "[ '$first' = '$w1' ]"
"$ct" tune --problem "$spec3" --families direct --max-variants 6 --final-trials 5 --db "$db" \
  --json > "$tmp/p2r.json" 2>/dev/null
check "priors: a rerun that screens nothing names none" "[ $? -eq 0 ] && [ $(jget "$tmp/p2r.json" screened) -eq 0 ] && [ '$(jget "$tmp/p2r.json" priors)' = '[]' ]"
"$ct" tune --problem "$spec3" --families direct --max-variants 6 --final-trials 5 --db "$db" \
  --fresh > "$tmp/p2.out" 2>/dev/null
check "priors: the summary's line" "grep -qF 'priors   screened first: $w1 (won $s1)' '$tmp/p2.out'"
"$ct" tune --problem "$spec3" --families direct --max-variants 6 --final-trials 5 --db "$db" \
  --fresh --no-priors --json > "$tmp/p3.json" 2>/dev/null
check "--no-priors: none" "[ $? -eq 0 ] && [ '$(jget "$tmp/p3.json" priors)' = '[]' ]"
"$ct" tune --problem "$spec3" --families direct --final-trials 5 --db "$db" --fresh \
  --json > "$tmp/p4.json" 2>/dev/null
check "exhaustive: no priors" "[ $? -eq 0 ] && [ '$(jget "$tmp/p4.json" search)' = exhaustive ] && [ '$(jget "$tmp/p4.json" priors)' = '[]' ]"
"$ct" tune --problem "$spec3" --precision fp32 --families direct --max-variants 6 --final-trials 5 \
  --db "$db" --json > "$tmp/p5.json" 2>/dev/null
check "priors: none from another precision" "[ $? -eq 0 ] && [ '$(jget "$tmp/p5.json" priors)' = '[]' ]"
"$ct" tune --problem "n=2,c=3,h=20,w=20,k=8,r=1,s=1" --families direct --max-variants 6 \
  --final-trials 5 --db "$db" --json > "$tmp/p6.json" 2>/dev/null
check "priors: none from another filter size" "[ $? -eq 0 ] && [ '$(jget "$tmp/p6.json" priors)' = '[]' ]"

# ---------------------------------------------------------------------------
# Report, db check, export / import / merge.
(cd "$tmp" && "$ct" report --problem "$spec" --db "$base" > "$tmp/rep.out")
check "report writes an SVG" "[ \$? -eq 0 ] && grep -q '<svg' '$tmp/convtune-report.svg'"
check "report marks the winner" "grep -q 'winner' '$tmp/convtune-report.svg' && grep -q \"\$(printf '%s' '$best' | sed 's/[.]/./g')\" '$tmp/convtune-report.svg'"
check "report: --out and problem ID" "'$ct' report 1 --db '$base' --out '$tmp/r1.svg' >/dev/null && python3 -c 'import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1])' '$tmp/r1.svg'"
check "report: unknown problem" "! '$ct' report --problem '$spec2' --db '$base' 2>/dev/null"
"$ct" db export --db "$base" --out "$tmp/x.txt" --cubins 2>/dev/null
check "db export" "[ \$? -eq 0 ] && head -1 '$tmp/x.txt' | grep -q '^convtune-export	1$' && grep -q '^end	' '$tmp/x.txt'"
"$ct" db import "$tmp/x.txt" --db "$tmp/imp.db" > "$tmp/imp.out"
check "db import" "[ \$? -eq 0 ] && [ $(sql "$tmp/imp.db" 'SELECT count(*) FROM trials') -eq $(distinct_trials "$base") ]"
"$ct" db import - --db "$tmp/imp.db" < "$tmp/x.txt" > "$tmp/imp2.out"
check "db import again adds nothing" "grep -q '(0 new)' '$tmp/imp2.out' && [ $(sql "$tmp/imp.db" 'SELECT count(*) FROM trials') -eq $(distinct_trials "$base") ]"
"$ct" tune "${common[@]}" --db "$tmp/imp.db" --json > "$tmp/imp.json" 2>/dev/null
check "an imported database resumes (and its cubins are used)" "[ $(jget "$tmp/imp.json" screened) -eq 0 ] && [ $(jget "$tmp/imp.json" compiled) -eq 0 ]"
head -n 5 "$tmp/x.txt" > "$tmp/cut.txt"
check "db import refuses a truncated file" "! '$ct' db import '$tmp/cut.txt' --db '$tmp/cut.db' 2>&1 | grep -q into"
"$ct" db merge "$tmp/two.db" --db "$tmp/imp.db" > "$tmp/m.out"
check "db merge" "[ \$? -eq 0 ] && [ $(sql "$tmp/imp.db" 'SELECT count(*) FROM winners') -ge 2 ] && integrity '$tmp/imp.db'"

# ---------------------------------------------------------------------------
# Problem lists: tune --problems (text and JSON forms, a problem named twice
# tuned once, a rerun skipping what is tuned, SIGKILL in the middle losing
# nothing), db list --problems, and the list's errors.
spec3="n=1,c=4,h=12,w=12,k=4,r=3,s=3,pad=1"
plist="$tmp/list.txt"
printf '# a comment\n%s\n\nsmall %s   # named\n%s,prec=tf32\n' "$spec" "$spec2" "$spec" > "$plist"
lopts=(--families direct --final-trials 5)
db="$tmp/list.db"
warm "$db"
"$ct" tune --problems "$plist" "${lopts[@]}" --db "$db" --json > "$tmp/l.json" 2> "$tmp/l.err"
check "list tune exits 0" "[ $? -eq 0 ]"
lget() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["problems"]; print(" ".join(str(eval(sys.argv[2], {}, {"p": p})) for p in d))' "$1" "$2"; }
check "list: two problems, both tuned" "[ '$(lget "$tmp/l.json" 'p["status"]')' = 'tuned tuned' ]"
check "list: the repeated problem counted twice, the name kept" "[ '$(lget "$tmp/l.json" 'p["calls"]')' = '2 1' ] && [ '$(lget "$tmp/l.json" 'p["name"]')' = 'None small' ]"
check "list: winners stored" "[ $(sql "$db" 'SELECT count(*) FROM winners') -eq 2 ]"
check "list: speed against the default" "[ '$(lget "$tmp/l.json" 'p["speedup_vs_default"] >= 1')' = 'True True' ]"
check "list: progress names problem i of n" "grep -q '^== problem 2/2: ' '$tmp/l.err' && grep -q 'ETA' '$tmp/l.err'"
"$ct" tune --problems "$plist" "${lopts[@]}" --db "$db" > "$tmp/l2.out" 2>&1
check "list rerun: everything skipped" "[ $? -eq 0 ] && grep -q '0 tuned, 2 skipped' '$tmp/l2.out' && [ $(sql "$db" 'SELECT count(*) FROM trials') -eq $(sql "$tmp/list.db" 'SELECT count(*) FROM trials') ]"
printf '{"problems": [{"spec": "%s", "calls": 3, "weight": 7.5}, "%s"]}\n' "$spec" "$spec2" > "$tmp/list.json"
"$ct" tune --problems "$tmp/list.json" "${lopts[@]}" --db "$db" --json > "$tmp/lj.json" 2>/dev/null
check "JSON list: read, both skipped" "[ $? -eq 0 ] && [ '$(lget "$tmp/lj.json" '"%s:%d:%g" % (p["status"], p["calls"], p["weight"])')' = 'skipped:3:7.5 skipped:1:1' ]"
printf '%s\n%s\n' "$spec2" "$spec3" > "$tmp/list3.txt"
"$ct" db list --problems "$tmp/list3.txt" --db "$db" > "$tmp/dl.out"
check "db list --problems: the list's rows, the untuned one said" "[ $? -eq 0 ] && grep -q '(not tuned)' '$tmp/dl.out' && grep -q '1 of the list.s 2 problems' '$tmp/dl.out' && ! grep -q 'h=20,' '$tmp/dl.out'"
printf 'a b c\n' > "$tmp/bad1.txt"
printf '%s\nn=1,c=0,h=5,w=5,k=1,r=1,s=1\n' "$spec" > "$tmp/bad2.txt"
printf '# nothing\n' > "$tmp/bad3.txt"
printf '{"problems": [{"calls": 2}]}' > "$tmp/bad4.json"
for f in bad1.txt bad2.txt bad3.txt bad4.json missing.txt; do
  "$ct" tune --problems "$tmp/$f" "${lopts[@]}" --db "$db" > /dev/null 2> "$tmp/bad.err"
  check "list $f refused with where" "[ $? -eq 2 ] && grep -q '$f' '$tmp/bad.err'"
done
check "list: line numbers" "'$ct' tune --problems '$tmp/bad2.txt' --db '$db' 2>&1 | grep -q 'bad2.txt:2: '"
check "--problem with --problems refused" "! '$ct' tune --problem '$spec' --problems '$plist' --db '$db' 2>/dev/null"
# --shard: the three shares of a three-problem list, tuned into three
# databases and merged, hold the winners of one unsharded run.
printf '%s\n%s\n%s\n' "$spec" "$spec2" "$spec3" > "$tmp/list3.txt"
db="$tmp/whole.db"
warm "$db"
"$ct" tune --problems "$tmp/list3.txt" "${lopts[@]}" --db "$db" > /dev/null 2>&1
winners() { sql "$1" "SELECT p.spec || ' ' || w.variant FROM winners w JOIN problems p ON p.id = w.problem_id ORDER BY p.spec" | tr '\n' ';'; }
src=0
for k in 0 1 2; do
  warm "$tmp/shard$k.db"
  "$ct" tune --problems "$tmp/list3.txt" --shard $k/3 "${lopts[@]}" --db "$tmp/shard$k.db" > "$tmp/shard$k.out" 2>&1 || src=1
  [ "$(sql "$tmp/shard$k.db" 'SELECT count(*) FROM winners')" = 1 ] || src=1
done
check "shards: each tunes its one problem" "[ $src -eq 0 ] && grep -q 'shard 1/3: 1 of the list.s 3 problems' '$tmp/shard1.out'"
"$ct" db merge "$tmp/shard1.db" --db "$tmp/shard0.db" > /dev/null && "$ct" db merge "$tmp/shard2.db" --db "$tmp/shard0.db" > /dev/null
check "shards merged: the winners of one unsharded run" "[ '$(winners "$tmp/shard0.db")' = '$(winners "$db")' ] && [ -n '$(winners "$db")' ]"
check "--shard without --problems refused" "! '$ct' tune --shard 0/2 --db '$db' 2>/dev/null"
check "--shard 2/2 refused" "! '$ct' tune --problems '$plist' --shard 2/2 --db '$db' 2>/dev/null"
# --weighted: --budget times the problems, shared by weight (a tenth of
# --budget at least).
printf '{"problems": [{"spec": "%s", "weight": 1}, {"spec": "%s", "weight": 9}]}' "$spec" "$spec2" > "$tmp/w.json"
db="$tmp/w.db"
warm "$db"
"$ct" tune --problems "$tmp/w.json" --weighted --budget 2 "${lopts[@]}" --db "$db" --json > "$tmp/w.out" 2>/dev/null
check "--weighted: budgets by weight" "[ $? -eq 0 ] && [ '$(lget "$tmp/w.out" 'p["budget_s"]')' = '0.4 3.6' ]"
check "--weighted without --budget refused" "! '$ct' tune --problems '$tmp/w.json' --weighted --db '$db' 2>/dev/null"
# --devices: a list spread over 2 and 4 fake GPUs, one worker each, into
# one database: every problem tuned once, the same trials as on one GPU,
# work on every device; a worker that faults is restarted and the others
# go on; a device that does not exist stops alone.
for k in 1 2 3 4 5 6; do echo "n=1,c=3,h=$((10 + k)),w=20,k=8,r=3,s=3,pad=1"; done > "$tmp/six.txt"
db="$tmp/dev1.db"
warm "$db"
"$ct" tune --problems "$tmp/six.txt" "${lopts[@]}" --db "$db" > /dev/null 2>&1
one=$(sql "$db" 'SELECT count(*) FROM trials')
for nd in 2 4; do
  db="$tmp/dev$nd.db"
  warm "$db"
  CONVTUNE_TEST_FAKE_DEVICES=$nd "$ct" tune --problems "$tmp/six.txt" --devices all "${lopts[@]}" --db "$db" > "$tmp/dev$nd.out" 2>&1
  rc=$?
  check "--devices all ($nd fake GPUs): every problem tuned" "[ $rc -eq 0 ] && [ $(sql "$db" 'SELECT count(*) FROM winners') -eq 6 ] && integrity '$db'"
  check "--devices ($nd): the trials of one GPU's run, none twice, none lost" "[ $(sql "$db" 'SELECT count(*) FROM trials') -eq $one ]"
  check "--devices ($nd): the winners of one GPU's run" "[ '$(winners "$db")' = '$(winners "$tmp/dev1.db")' ]"
  used=$(grep -o '^\[gpu [0-9]*\] == problem' "$tmp/dev$nd.out" | sort -u | wc -l)
  check "--devices ($nd): progress per GPU, each GPU used" "[ $used -eq $nd ] && grep -q '^per device: gpu 0: ' '$tmp/dev$nd.out' && grep -q '6/6 done' '$tmp/dev$nd.out'"
done
printf '%s\n%s\n' "$spec" "$spec2" > "$tmp/two.txt"
db="$tmp/devf.db"
warm "$db"
CONVTUNE_TEST_FAMILIES=1 CONVTUNE_TEST_FAKE_DEVICES=2 "$ct" tune --problems "$tmp/two.txt" --devices 0,1 \
  --families test_oob,test_wrong,direct --final-trials 5 --db "$db" > "$tmp/devf.out" 2>&1
check "--devices: a faulting worker is restarted on each GPU and the list finishes" "[ $? -eq 0 ] && [ $(sql "$db" 'SELECT count(*) FROM winners') -eq 2 ] && [ $(sql "$db" "SELECT count(*) FROM trials WHERE status = 'faulted'") -eq 2 ]"
db="$tmp/devx.db"
warm "$db"
CONVTUNE_TEST_FAKE_DEVICES=2 "$ct" tune --problems "$tmp/six.txt" --devices 0,5 "${lopts[@]}" --db "$db" > "$tmp/devx.out" 2>&1
rc=$?
check "--devices: a missing GPU stops alone, the other tunes the rest" "[ $rc -eq 1 ] && grep -q 'no fake device 5' '$tmp/devx.out' && [ $(sql "$db" 'SELECT count(*) FROM winners') -eq 5 ]"
check "--devices without --problems refused" "! '$ct' tune --devices 0,1 --db '$db' 2>/dev/null"
check "--devices 0,0 refused" "! '$ct' tune --problems '$tmp/six.txt' --devices 0,0 --db '$db' 2>/dev/null"

# SIGKILL during a list tune: the rerun finishes the list, keeps every
# trial the killed run recorded, and the database stays intact.
export CONVTUNE_TEST_FAKE_MS=60
for i in 1 2 3; do
  db="$tmp/lkill-$i.db"
  warm "$db"
  "$ct" tune --problems "$tmp/list3.txt" "${lopts[@]}" --db "$db" > /dev/null 2>&1 &
  pid=$!
  sleep "$(printf '0.%03d' $((RANDOM % 1000)))"; sleep $((RANDOM % 3))
  kill -KILL $pid 2>/dev/null; wait $pid 2>/dev/null
  sleep 0.3
  before=$(sql "$db" 'SELECT id FROM trials ORDER BY id' | tr '\n' ' ')
  "$ct" tune --problems "$tmp/list3.txt" "${lopts[@]}" --db "$db" --json > "$tmp/lk.json" 2>/dev/null
  rc=$?
  after=$(sql "$db" 'SELECT id FROM trials ORDER BY id' | tr '\n' ' ')
  check "SIGKILL in a list tune ($i): the rerun finishes it" "[ $rc -eq 0 ] && [ $(sql "$db" 'SELECT count(*) FROM winners') -eq 3 ] && integrity '$db'"
  check "SIGKILL in a list tune ($i): no trial lost" "case '$after' in '$before'*) true ;; *) false ;; esac"
done
export CONVTUNE_TEST_FAKE_MS=20

# ---------------------------------------------------------------------------
# The progress bar on a terminal.
if command -v script >/dev/null 2>&1; then
  db="$tmp/tty.db"
  warm "$db"
  script -qefc "'$ct' tune --problem '$spec' --families direct --final-trials 20 --db '$db'" /dev/null > "$tmp/tty.out" 2>&1
  check "progress bar on a terminal" "grep -q 'ETA' '$tmp/tty.out' && grep -q \$'\\r' '$tmp/tty.out' && ! grep -q '^\[1/' '$tmp/tty.out' && grep -q '^[0-9]* variants' '$tmp/tty.out'"
else
  echo "skip progress bar: no script(1)"
fi

echo "tune (fake GPU): $pass passed, $fail failed"
[ "$fail" -eq 0 ]
