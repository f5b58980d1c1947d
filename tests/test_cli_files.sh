#!/usr/bin/env bash
# The CLI and the files it is given, without a GPU: databases made with
# `db import` from export text written here.
#   - the files commands write (report --out, db export --out): never the
#     database or its -wal / -shm, by identity; written whole or not at
#     all; a file of another kind replaced only with --force;
#   - the database path: a directory, a read-only directory or file, a
#     locked file and an empty --db are refused with what to do; a
#     read-only database can still be read by every command that reads;
#   - nothing made that should not be: a failed import leaves no file, a
#     missing directory is never made (only the default one is);
#   - --json: every command's output parses with a strict JSON parser, also
#     from a database holding hostile strings (quotes, backslashes, control
#     characters, bytes that are not UTF-8);
#   tests/test_cli_files.sh PATH/TO/convtune
set -u
ct=${1:?usage: test_cli_files.sh CONVTUNE}
ct=$(cd "$(dirname "$ct")" && pwd)/$(basename "$ct")
if ! python3 -c 'import sqlite3, json' 2>/dev/null; then
  echo "SKIP: needs python3 with sqlite3 and json"
  exit 77
fi
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
unset CONVTUNE_DB CONVTUNE_TEST_FAKE_GPU CONVTUNE_TEST_FAMILIES
pass=0 fail=0
ok()  { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
check() { if eval "$2"; then ok "$1"; else bad "$1: $2"; fi; }
# expect NAME WANT_RC PATTERN CMD...: exit code WANT_RC, output matching PATTERN
expect() {
  local name=$1 want=$2 pattern=$3 out rc
  shift 3
  out=$("$@" 2>&1)
  rc=$?
  if [ "$rc" -ne "$want" ]; then
    bad "$name: exit $rc, wanted $want"; echo "$out" | sed 's/^/    /'; return
  fi
  if ! printf '%s\n' "$out" | grep -q -- "$pattern"; then
    bad "$name: output lacks '$pattern'"; echo "$out" | sed 's/^/    /'; return
  fi
  ok "$name"
}
sum() { cksum < "$1"; }
intact() { # intact DB SUM: the file is unchanged and passes db check
  [ "$(sum "$1")" = "$2" ] && "$ct" db check --db "$1" >/dev/null 2>&1
}

# export_text [NAME]: an export with one device, two problems and trials;
# NAME (bytes, printf %b escapes) becomes the device's and a variant's
# name and a message.
export_text() {
  python3 - "${1:-}" <<'PYEOF'
import sys
name = sys.argv[1].encode().decode('unicode_escape').encode('latin-1') if sys.argv[1] else b"NVIDIA H200"
def esc(b):
    return b.replace(b"\\", b"\\\\").replace(b"\t", b"\\t").replace(b"\n", b"\\n").replace(b"\r", b"\\r")
spec = b"n=1,c=3,h=20,w=20,k=8,r=3,s=3,stride=1,pad=1,dil=1,bias=1,prec=tf32"
spec2 = b"n=1,c=3,h=20,w=20,k=8,r=3,s=3,stride=1,pad=1,dil=1,bias=1,prec=fp32"
out = [b"convtune-export\t1",
       b"device\tid=1\tname=" + esc(name) + b"\tcc_major=9\tcc_minor=0\tsm_count=132\tdriver_version=13000\tnvrtc_version=13.0\tarch=sm_90a",
       b"problem\tid=1\tspec=" + spec + b"\tprecision=tf32",
       b"problem\tid=2\tspec=" + spec2 + b"\tprecision=fp32"]
n = 0
for i in range(400):
    n += 1
    variant = b"direct:THREADS=128,TP=4,TK=%d" % (i + 1)
    status, msg = b"timed", b""
    if i == 3:
        variant, status, msg = b"direct:" + esc(name), b"compile-failed", esc(name)
    if i == 4:
        status, msg = b"wrong", esc(name)
    out.append(b"trial\tid=%d\tproblem=%d\tdevice=1\tvariant=%s\tstatus=%s\tsource_hash=%016x\tcompile_ms=90.5\tregs=64\tspill_bytes=0\tsmem_bytes=864\tmax_abs_err=1e-06\trel_err=1e-07\tmean_ms=%s\tmedian_ms=%s\tmin_ms=%s\tmax_ms=%s\tn_timed=%d\tmessage=%s\tcreated_at=%d"
               % (n, 1 + i % 2, variant, status, 0x1234 + i,
                  b"1.5" if status == b"timed" else b"nan", b"1.5" if status == b"timed" else b"nan",
                  b"1.4" if status == b"timed" else b"nan", b"1.6" if status == b"timed" else b"nan",
                  10 if status == b"timed" else 0, msg, 1796154708 + i))
out.append(b"end\tdevices=1\tproblems=2\ttrials=%d\twinners=0\tcubins=0" % n)
sys.stdout.buffer.write(b"\n".join(out) + b"\n")
PYEOF
}
export_text > "$tmp/plain.txt"
"$ct" db import "$tmp/plain.txt" --db "$tmp/a.db" > /dev/null 2>&1
check "a database from export text" "[ \$? -eq 0 ] && '$ct' db check --db '$tmp/a.db' >/dev/null"
db="$tmp/a.db"

# ---------------------------------------------------------------------------
# 1. Output files.
s=$(sum "$db")
expect "report --out DB refused" 1 'is the database' "$ct" report 1 --db "$db" --out "$db"
check "report --out DB: the database is intact" "intact '$db' '$s'"
expect "report --out DB --force still refused" 1 'is the database' "$ct" report 1 --db "$db" --out "$db" --force
expect "report --out DB-wal refused (a file not made yet)" 1 'database file' "$ct" report 1 --db "$db" --out "$db-wal"
check "report --out DB-wal: no SVG there" "! grep -qs '<svg' '$db-wal'"
expect "report --out DB-shm refused" 1 'database file' "$ct" report 1 --db "$db" --out "$db-shm"
expect "db export --out DB refused" 1 'is the database' "$ct" db export --db "$db" --out "$db"
check "db export --out DB: the database is intact" "intact '$db' '$s'"
ln -s "$db" "$tmp/link.db"
expect "db export --out a link to DB refused" 1 'is the database' "$ct" db export --db "$db" --out "$tmp/link.db"
mkdir "$tmp/sub"
expect "report --out DIR/../DB refused" 1 'is the database' "$ct" report 1 --db "$db" --out "$tmp/sub/../a.db"
expect "db export --out DB via another name of the directory" 1 'is the database' \
  "$ct" db export --db "$tmp/sub/../a.db" --out "$tmp/./a.db"
ln "$db" "$tmp/hard.db"
expect "db export --out a hard link to DB refused" 1 'is the database' "$ct" db export --db "$db" --out "$tmp/hard.db"
rm -f "$tmp/hard.db"
expect "db export >> DB refused" 1 'standard output is the database' sh -c "'$ct' db export --db '$db' >> '$db'"
check "every refusal left the database intact" "intact '$db' '$s'"
check "no temporary file left behind" "[ -z \"\$(ls -A '$tmp' | grep '^\\.')\" ]"

echo "some notes" > "$tmp/notes.txt"
expect "report over a file of another kind needs --force" 1 'pass --force' "$ct" report 1 --db "$db" --out "$tmp/notes.txt"
check "report: the other file is unchanged" "[ \"\$(cat '$tmp/notes.txt')\" = 'some notes' ]"
expect "db export over a file of another kind needs --force" 1 'pass --force' "$ct" db export --db "$db" --out "$tmp/notes.txt"
expect "report --force replaces it" 0 'wrote' "$ct" report 1 --db "$db" --out "$tmp/notes.txt" --force
check "report --force: an SVG now" "grep -q '<svg' '$tmp/notes.txt'"
expect "report over an SVG needs no --force" 0 'wrote' "$ct" report 1 --db "$db" --out "$tmp/notes.txt"
expect "db export --out a new file" 0 'exported' "$ct" db export --db "$db" --out "$tmp/x.txt"
expect "db export over an export needs no --force" 0 'exported' "$ct" db export --db "$db" --out "$tmp/x.txt"
check "db export: a whole export" "head -n 1 '$tmp/x.txt' | grep -q '^convtune-export' && grep -q '^end' '$tmp/x.txt'"
chmod 640 "$tmp/x.txt"
"$ct" db export --db "$db" --out "$tmp/x.txt" 2>/dev/null
check "db export keeps the file's permissions" "[ \"\$(stat -c %a '$tmp/x.txt')\" = 640 ]"
: > "$tmp/empty.txt"
expect "an empty file is replaced without --force" 0 'exported' "$ct" db export --db "$db" --out "$tmp/empty.txt"
expect "--out DIR refused" 1 'is a directory' "$ct" db export --db "$db" --out "$tmp/sub"
expect "--out a device refused" 1 'not a regular file' "$ct" db export --db "$db" --out /dev/null
expect "report --out - writes the chart to stdout" 0 '<svg' "$ct" report 1 --db "$db" --out -
ln -s "$tmp/x.txt" "$tmp/xlink.txt"
"$ct" db export --db "$db" --out "$tmp/xlink.txt" 2>/dev/null
check "--out through a link writes the file it names" "[ -L '$tmp/xlink.txt' ] && grep -q '^end' '$tmp/x.txt'"
# A write that fails half-way (a file size limit of 50 KB, above SQLite's
# 32 KB -shm, below the export's size) leaves the old file.
cp "$tmp/x.txt" "$tmp/old.txt"
(trap '' XFSZ; ulimit -f 100; "$ct" db export --db "$db" --out "$tmp/old.txt") > "$tmp/xfsz.out" 2>&1
rc=$?
check "a failed write exits 1 with a message" "[ $rc -eq 1 ] && grep -q 'cannot write' '$tmp/xfsz.out'"
check "a failed write leaves the old file" "cmp -s '$tmp/x.txt' '$tmp/old.txt'"
check "a failed write leaves no temporary file" "[ -z \"\$(ls -A '$tmp' | grep '^\\.')\" ]"
if [ -w /dev/full ]; then
  expect "db export > /dev/full fails" 1 'cannot write' sh -c "'$ct' db export --db '$db' > /dev/full"
  expect "db show --json > /dev/full fails" 1 'writing the standard output' sh -c "'$ct' db show 1 --json --db '$db' > /dev/full"
  expect "report --out - > /dev/full fails" 1 'cannot write' sh -c "'$ct' report 1 --db '$db' --out - > /dev/full"
fi

# ---------------------------------------------------------------------------
# 4. The database path.
expect "--db DIR: db list says it is a directory" 1 'is a directory; the database is a file' "$ct" db list --db "$tmp/sub"
expect "--db DIR: db import too" 1 'is a directory' "$ct" db import "$tmp/plain.txt" --db "$tmp/sub"
expect "--db DIR: tune too" 1 'is a directory' env CONVTUNE_TEST_FAKE_GPU=1 "$ct" tune --db "$tmp/sub"
expect "--db '': db list" 2 '--db is empty' "$ct" db list --db ""
expect "--db '': tune" 2 '--db is empty' "$ct" tune --db ""
expect "--db '': db import" 2 '--db is empty' "$ct" db import "$tmp/plain.txt" --db ""
expect "--db /dev/null refused" 1 'not a regular file' "$ct" db list --db /dev/null

# Permissions: as an unprivileged user (root writes anywhere).
as_user=
if [ "$(id -u)" -ne 0 ]; then
  as_user=env
elif setpriv --reuid=65534 --regid=65534 --clear-groups "$ct" --version >/dev/null 2>&1; then
  as_user="setpriv --reuid=65534 --regid=65534 --clear-groups" # nobody runs convtune
  chmod 711 "$tmp"
fi
if [ -n "$as_user" ]; then
  p="$tmp/perm"
  mkdir -p "$p/ro" "$p/rw"
  cp "$db" "$p/rw/r.db"
  cp "$tmp/plain.txt" "$p/plain.txt"
  [ "$(id -u)" -eq 0 ] && chown -R 65534:65534 "$p"
  chmod 755 "$p"
  chmod 555 "$p/ro"
  chmod 444 "$p/rw/r.db"
  rs=$(sum "$p/rw/r.db")
  expect "read-only directory: db import says so" 1 'directory .* is not writable' $as_user "$ct" db import "$p/plain.txt" --db "$p/ro/x.db"
  expect "read-only directory: tune says so" 1 'directory .* is not writable' $as_user env CONVTUNE_TEST_FAKE_GPU=1 "$ct" tune --db "$p/ro/x.db"
  expect "read-only database: db import says so" 1 'is read-only.*chmod u+w' $as_user "$ct" db import "$p/plain.txt" --db "$p/rw/r.db"
  expect "read-only database: tune says so" 1 'is read-only' $as_user env CONVTUNE_TEST_FAKE_GPU=1 "$ct" tune --db "$p/rw/r.db"
  expect "read-only database: db merge says so" 1 'is read-only' $as_user "$ct" db merge "$db" --db "$p/rw/r.db"
  expect "read-only database: db list reads it" 0 'n=1,c=3' $as_user "$ct" db list --db "$p/rw/r.db"
  expect "read-only database: db show reads it" 0 'problem 1' $as_user "$ct" db show 1 --db "$p/rw/r.db"
  expect "read-only database: db export reads it" 0 'exported' $as_user "$ct" db export --db "$p/rw/r.db" --out "$p/rw/x.txt"
  expect "read-only database: db check reads it" 0 '^ok' $as_user "$ct" db check --db "$p/rw/r.db"
  expect "read-only database: report reads it" 0 'wrote' $as_user "$ct" report 1 --db "$p/rw/r.db" --out "$p/rw/r.svg"
  expect "read-only database: check gets as far as the GPU" 1 'no CUDA driver' $as_user env CONVTUNE_LIBCUDA="$tmp/none/libcuda.so.1" "$ct" check --db "$p/rw/r.db"
  cp "$p/rw/r.db" "$p/ro2.db" 2>/dev/null || cp "$db" "$p/ro2.db"
  chmod 444 "$p/ro2.db"
  chmod 555 "$p"
  expect "read-only database in a read-only directory: db list reads it" 0 'n=1,c=3' $as_user "$ct" db list --db "$p/ro2.db"
  chmod 755 "$p"
  check "read-only database: unchanged" "[ \"\$(sum '$p/rw/r.db')\" = '$rs' ]"
  # The reads above may leave r.db-wal and r.db-shm with r.db's mode: made
  # writable again, the database's writers name the file still read-only.
  chmod 644 "$p/rw/r.db"
  if [ "$(stat -c %a "$p/rw/r.db-wal" 2>/dev/null)" = 444 ]; then
    expect "read-only -wal left by a read: tune names it" 1 'r.db-wal is read-only.*chmod u+w .*r.db-wal' $as_user env CONVTUNE_TEST_FAKE_GPU=1 "$ct" tune --db "$p/rw/r.db"
    expect "read-only -wal left by a read: db import names it" 1 'r.db-wal is read-only' $as_user "$ct" db import "$p/plain.txt" --db "$p/rw/r.db"
  else
    echo "skip read-only -wal: the reads left no read-only $p/rw/r.db-wal"
  fi
else
  echo "skip permission tests: root, and nobody cannot run $ct (setpriv)"
fi

# A locked database: another process holds the write lock.
cp "$db" "$tmp/locked.db"
python3 - "$tmp/locked.db" "$tmp/lock.ready" <<'PYEOF' &
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("BEGIN EXCLUSIVE")
open(sys.argv[2], "w").close()
time.sleep(9)
c.execute("ROLLBACK")
PYEOF
locker=$!
for i in $(seq 50); do [ -e "$tmp/lock.ready" ] && break; sleep 0.1; done
expect "a locked database: db import says who and what to do" 1 'locked by another process .* try again' "$ct" db import "$tmp/plain.txt" --db "$tmp/locked.db"
wait $locker

# ---------------------------------------------------------------------------
# 5. Nothing made that should not be.
printf 'convtune-export\t1\nbogus\n' > "$tmp/bad.txt"
expect "a failed import fails" 1 'nothing imported' "$ct" db import "$tmp/bad.txt" --db "$tmp/new.db"
check "a failed import leaves no database" "[ -z \"\$(ls '$tmp' | grep '^new.db')\" ]"
expect "a failed merge leaves no database" 1 '' "$ct" db merge "$tmp/none.db" --db "$tmp/new2.db"
check "  (no file)" "[ -z \"\$(ls '$tmp' | grep '^new2.db')\" ]"
expect "a missing directory: db import says so" 1 'does not exist.*mkdir -p' "$ct" db import "$tmp/plain.txt" --db "$tmp/no/such/dir/x.db"
expect "a missing directory: tune says so" 1 'does not exist' env CONVTUNE_TEST_FAKE_GPU=1 "$ct" tune --db "$tmp/no/such/dir/x.db"
expect "a missing directory: db list reads nothing" 0 'nothing tuned yet' "$ct" db list --db "$tmp/no/such/dir/x.db"
expect "a missing directory from CONVTUNE_DB is not made either" 1 'does not exist' env CONVTUNE_DB="$tmp/no/such/dir/x.db" "$ct" db import "$tmp/plain.txt"
check "no directory made" "[ ! -e '$tmp/no' ]"
expect "the default directory is made" 0 'into' env -u CONVTUNE_DB XDG_CACHE_HOME="$tmp/xdg" "$ct" db import "$tmp/plain.txt"
check "  (there)" "[ -f '$tmp/xdg/convtune/tuning.db' ]"

# ---------------------------------------------------------------------------
# 9. --json through a real parser: strict UTF-8, no NaN, nothing after.
jsonok() { # jsonok FILE: the file is one JSON document, valid UTF-8
  python3 - "$1" <<'PYEOF'
import json, sys
raw = open(sys.argv[1], "rb").read()
def no_constant(name):
    raise ValueError("not JSON: " + name)
try:
    json.loads(raw.decode("utf-8"), parse_constant=no_constant)
except Exception as e:
    print("%s: %s" % (sys.argv[1], e), file=sys.stderr)
    sys.exit(1)
PYEOF
}
hostile='q\x22uote b\\ack \x01\x1f\x7f ctl \xff\xfe bad \xc3\x28 \xed\xa0\x80 \xf4\x90\x80\x80 \xc0\xaf tab\t nl\n cr\r \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 end'
export_text "$hostile" > "$tmp/hostile.txt"
expect "a database with hostile strings" 0 'into' "$ct" db import "$tmp/hostile.txt" --db "$tmp/h.db"
check "  (they are in it)" "[ \"\$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(\"SELECT count(*) FROM devices WHERE instr(CAST(name AS BLOB), X\x27FFFE\x27)\").fetchone()[0])' '$tmp/h.db')\" = 1 ]"
n=0
for args in "db list --json" "db show 1 --json" "db show 2 --json"; do
  for d in "$tmp/h.db" "$db"; do
    n=$((n + 1))
    $ct $args --db "$d" > "$tmp/j$n.json" 2>"$tmp/j$n.err"
    check "--json parses: $args ($(basename "$d"))" "[ \$? -eq 0 ] && jsonok '$tmp/j$n.json'"
  done
done
# The text listings print no control character but the tab and the line ends.
# (db show prints the hostile device name and variant: 'ctl' is in them.)
for args in "db list" "db show 1" "db show 2"; do
  $ct $args --db "$tmp/h.db" > "$tmp/t.out" 2>&1
  rc=$?
  want=ctl; [ "$args" = "db list" ] && want=problem
  check "no control character in the text: $args (hostile)" "[ $rc -eq 0 ] && python3 -c 'import sys; d = open(sys.argv[1], \"rb\").read(); sys.exit(any(b < 32 and b not in (9, 10) or b == 127 for b in d))' '$tmp/t.out' && grep -q '$want' '$tmp/t.out'"
done
"$ct" db list --json --db "$tmp/none.db" > "$tmp/j0.json"
check "--json parses: db list, no database" "jsonok '$tmp/j0.json'"
check "hostile strings come back: U+FFFD for bad bytes, the rest as they were" "python3 - '$tmp/j3.json' <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1], encoding='utf-8'))
names = [t['variant'] for t in d['trials']] + [t['message'] for t in d['trials']]
want = 'q\"uote b\\\\ack \x01\x1f\x7f ctl \ufffd\ufffd bad \ufffd( \ufffd\ufffd\ufffd \ufffd\ufffd\ufffd\ufffd \ufffd\ufffd tab\t nl\n cr\r \xe9 \u20ac \U0001f600 end'
assert any(n == want for n in names), [n for n in names if 'end' in n]
PYEOF"
for args in "--precision fp32" "--families direct,tc" "--problem n=2,c=4,h=9,w=9,k=3,r=3,s=3,pad=1x0,stride=2"; do
  n=$((n + 1))
  $ct space --arch sm_90a --json $args > "$tmp/j$n.json"
  check "--json parses: space $args" "[ \$? -eq 0 ] && jsonok '$tmp/j$n.json'"
done
weird="$tmp/we\"ird\\$(printf '\377\001')name.db"
CONVTUNE_TEST_FAKE_GPU=1 CONVTUNE_TEST_FAKE_MS=1 "$ct" tune --problem "n=1,c=3,h=20,w=20,k=8,r=3,s=3,pad=1" \
  --families direct --max-variants 2 --final-trials 2 --db "$weird" --json > "$tmp/tune.json" 2>"$tmp/tune.err"
check "--json parses: tune (fake GPU, a database name with quotes and bad bytes)" "[ \$? -eq 0 ] && jsonok '$tmp/tune.json'"
CONVTUNE_TEST_FAKE_GPU=1 CONVTUNE_TEST_FAKE_MS=1 "$ct" tune --problem "n=1,c=3,h=20,w=20,k=8,r=3,s=3,pad=1" \
  --families direct --max-variants 2 --final-trials 2 --db "$weird" --json > "$tmp/tune2.json" 2>/dev/null
check "--json parses: a resumed tune" "[ \$? -eq 0 ] && jsonok '$tmp/tune2.json'"
check "a resumed tune has no rate in --json" "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (d[\"screened\"] == 0 and d[\"variants_per_s\"] is None))' '$tmp/tune2.json'"
CONVTUNE_TEST_FAKE_GPU=1 CONVTUNE_TEST_FAKE_MS=1 "$ct" tune --problem "n=1,c=3,h=20,w=20,k=8,r=3,s=3,pad=1" \
  --families direct --max-variants 2 --final-trials 2 --db "$weird" --quiet > "$tmp/tune3.out" 2>&1
check "a resumed tune reports no '0.0 variants/s'" "grep -q 'nothing screened: every variant resumed' '$tmp/tune3.out' && ! grep -q '0.0 variants/s' '$tmp/tune3.out'"

# Plurals.
head -n 4 "$tmp/plain.txt" > "$tmp/one.txt"
grep '^trial	id=1	' "$tmp/plain.txt" >> "$tmp/one.txt"
printf 'end\tdevices=1\tproblems=2\ttrials=1\twinners=0\tcubins=0\n' >> "$tmp/one.txt"
expect "plurals: 1 trial, 1 device" 0 ': 1 trial (1 new), 0 winners (0 stored), 0 cubins (0 new), 1 device, 2 problems$' "$ct" db import "$tmp/one.txt" --db "$tmp/one.db"
expect "plurals: exported 1 device, 1 trial" 0 'exported 1 device, 2 problems, 1 trial, 0 winners, 0 cubins' "$ct" db export --db "$tmp/one.db" --out "$tmp/one2.txt"
expect "plurals: wrote 1 trial" 0 'wrote .*: 1 trial of problem 1' "$ct" report 1 --db "$tmp/one.db" --out "$tmp/one.svg"

echo "cli files: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
