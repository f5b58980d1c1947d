# tune_test_lib.sh — shell helpers shared by the tune tests
# (test_tune_fake.sh on CPU, test_gpu_faults.sh and test_gpu_interrupt.sh on
# the GPU machine).  Sourced; expects $ct (the convtune binary) and $tmp (a
# scratch directory); interrupt() also expects $n (variants), $best (the
# exhaustive winner), warm() and the array common (the tune's options).
pass=0 fail=0
RANDOM=$$

ok()  { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
check() { if eval "$2"; then ok "$1"; else bad "$1: $2"; fi; }

# sql DB QUERY: the first column of each row, one per line.
sql() { python3 - "$1" "$2" <<'EOF'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1], timeout=30)
for row in c.execute(sys.argv[2]): print(row[0])
c.commit()
EOF
}
integrity() { [ "$(sql "$1" 'PRAGMA integrity_check')" = ok ] && "$ct" db check --db "$1" >/dev/null; }
# jget FILE KEY: a top-level field of the JSON in FILE.
jget() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))[sys.argv[2]]; print(json.dumps(v) if not isinstance(v, str) else v)' "$1" "$2"; }
# status_of FILE VARIANT: the status of a variant's trial in a tune's JSON.
status_of() { python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(" ".join(t["status"] for t in d["trials"] if t["variant"] == sys.argv[2]))' "$1" "$2"; }
# The worker processes whose parent is PID.
workers_of() { ps -o pid= --ppid "$1" 2>/dev/null | tr -d ' '; }
# running PID: 0 when it runs (a zombie, dead but not yet reaped, does not).
running() { [ -r "/proc/$1/stat" ] && ! sed 's/.*) //' "/proc/$1/stat" | grep -q '^Z'; }
# catches PID SIGNUM: 0 when PID has a handler for the signal installed
# (its SigCgt mask in /proc).
catches() {
  local m
  m=$(awk '/^SigCgt:/ {print $2}' "/proc/$1/status" 2>/dev/null)
  [ -n "$m" ] && (( (16#$m >> ($2 - 1)) & 1 ))
}
# finalists FILE: rows re-timed in a tune's JSON.
finalists() { python3 -c 'import json,sys; print(sum(r["finalist"] for r in json.load(open(sys.argv[1]))["rows"]))' "$1"; }
# timed_of FILE PREFIX: timed trials of variants starting with PREFIX.
timed_of() { python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(sum(t["status"] == "timed" and t["variant"].startswith(sys.argv[2]) for t in d["trials"]))' "$1" "$2"; }
# below A B: A <= B (reals).
below() { python3 -c 'import sys; sys.exit(not float(sys.argv[1]) <= float(sys.argv[2]))' "$1" "$2"; }
# distinct_trials DB: trials that differ in some field (the fake GPU's times
# repeat exactly, so two trials of one second can be equal in every field,
# and import keeps one of them).
distinct_trials() { sql "$1" "SELECT count(*) FROM (SELECT DISTINCT problem_id, device_id, variant, source_hash, status, n_timed, mean_ms, created_at FROM trials)"; }

# interrupt SIGNAL WANT_RC MAX_DELAY_MS: starts `convtune tune` on a warm
# copy of the database, sends SIGNAL after a random delay (INT, TERM: once
# its handlers are installed), then checks the exit status and message,
# that no worker is left, integrity, and that a rerun resumes exactly the
# variants recorded, screens the rest, loses no trial (ids: every trial id
# the killed run left) and names a winner ($best, when that is set: a
# deterministic device).
interrupt() {
  local sig=$1 want=$2 max=$3 db="$tmp/kill-$1-$RANDOM.db" ids="$tmp/ids"
  warm "$db"
  : > "$ids"
  "$ct" tune "${common[@]}" --db "$db" > "$tmp/k.out" 2> "$tmp/k.err" &
  local pid=$! delay=$((RANDOM % max)) i
  # INT and TERM: the delay counts from when the tuner's handlers are in
  # place.  Before that the signal's default action ends the process, which
  # no program can answer, and a slow start (a sanitizer build) can last
  # longer than a short delay.
  if [ "$sig" != KILL ]; then
    for i in $(seq 1000); do
      catches $pid "$(kill -l "$sig")" || ! running $pid && break
      sleep 0.01
    done
  fi
  sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
  local kids
  kids=$(workers_of $pid)
  kill -s "$sig" $pid 2>/dev/null
  wait $pid 2>/dev/null
  local rc=$? what="$sig after ${delay} ms"
  if [ $rc -eq 0 ]; then
    what="$what (it had finished)"
  elif [ $rc -ne "$want" ]; then
    bad "$what: exit $rc, wanted $want"; cat "$tmp/k.err"
    return
  elif [ "$sig" != KILL ] && ! grep -q "interrupted by SIG$sig" "$tmp/k.err"; then
    bad "$what: no message"; cat "$tmp/k.err"
    return
  fi
  sleep 0.3
  local k left=""
  for k in $kids; do running "$k" && left="$left $k"; done
  if [ -n "$left" ]; then
    bad "$what: worker(s)$left left running"
    kill -9 $left 2>/dev/null
    return
  fi
  if ! integrity "$db"; then bad "$what: integrity"; return; fi
  sql "$db" "SELECT id FROM trials" | sort > "$ids"
  local kept done_v
  kept=$(wc -l < "$ids")
  done_v=$(sql "$db" "SELECT count(DISTINCT variant) FROM trials")
  # The rerun: resumes exactly what was recorded, screens the rest.
  "$ct" tune "${common[@]}" --db "$db" --json > "$tmp/k.json" 2>/dev/null
  local rc2=$?
  if [ $rc2 -ne 0 ]; then bad "$what: the rerun exits $rc2"; return; fi
  if [ "$(jget "$tmp/k.json" resumed)" -ne "$done_v" ] ||
     [ "$(jget "$tmp/k.json" screened)" -ne $((n - done_v)) ]; then
    bad "$what: the rerun resumed $(jget "$tmp/k.json" resumed) and screened $(jget "$tmp/k.json" screened), wanted $done_v and $((n - done_v))"
    return
  fi
  if [ "$(comm -23 "$ids" <(sql "$db" "SELECT id FROM trials" | sort) | wc -l)" -ne 0 ]; then
    bad "$what: finished trials lost"; return
  fi
  local win
  win=$(jget "$tmp/k.json" winner)
  if [ "$win" = null ] || { [ -n "$best" ] && [ "$win" != "$best" ]; } ||
     ! integrity "$db"; then
    bad "$what: the rerun's winner ($win) or integrity"; return
  fi
  ok "$what: exit $rc, $kept trials of $done_v variants kept, no worker left, integrity ok; the rerun resumed $done_v, screened $((n - done_v)), winner $win"
}
