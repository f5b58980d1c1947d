#!/bin/bash
# Budgeted search against the exhaustive one on the attached GPU: tunes the
# problem exhaustively into a fresh database, then with each budget into a
# copy that keeps the compiled cubins but no trials (so only the search
# differs), and compares each winner's full-protocol mean with the
# exhaustive winner's; `convtune check` then re-times both winners in the
# same way.  The target: every budgeted winner within 3%.
# Usage (from the repository root, after building into build/):
#   scripts/budget-vs-exhaustive.sh OUTDIR [PRECISION] [BUDGETS]
# BUDGETS: --max-variants values and --budget seconds written "Ns"
# (default: "8 12 20 30 15s 20s").  PROBLEM=SPEC tunes another problem than
# the headline one.
set -u -o pipefail
out=${1:?usage: scripts/budget-vs-exhaustive.sh OUTDIR [PRECISION] [BUDGETS]}
prec=${2:-tf32}
budgets=${3:-"8 12 20 30 15s 20s"}
ct=${CT:-build/tuner/convtune}
problem=(${PROBLEM:+--problem "$PROBLEM"})
mkdir -p "$out"
jget() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }
fresh_copy() { # fresh_copy SRC DEST: the cubins, no trials or winners
  rm -f "$2" "$2-wal" "$2-shm"
  python3 - "$1" "$2" <<'PY'
import sqlite3, sys
src = sqlite3.connect(sys.argv[1])
dst = sqlite3.connect(sys.argv[2])
src.backup(dst)
dst.execute("DELETE FROM winners")
dst.execute("DELETE FROM trials")
dst.commit()
PY
}

echo "== exhaustive ($prec), cold"
rm -f "$out"/*.db "$out"/*.db-wal "$out"/*.db-shm
$ct tune "${problem[@]}" --precision "$prec" --db "$out/exhaustive.db" --json > "$out/exhaustive.json" 2> "$out/exhaustive.log"
ex_ms=$(jget "$out/exhaustive.json" winner_mean_ms)
printf "%-16s %4s screened  %7.1f s  winner %.4f ms  %s\n" exhaustive \
  "$(jget "$out/exhaustive.json" screened)" "$(jget "$out/exhaustive.json" wall_s)" \
  "$ex_ms" "$(jget "$out/exhaustive.json" winner)"
fails=0
for b in $budgets; do
  case $b in
    *s) opt=(--budget "${b%s}") ;;
    *) opt=(--max-variants "$b") ;;
  esac
  db="$out/budget-$b.db"
  fresh_copy "$out/exhaustive.db" "$db"
  $ct tune "${problem[@]}" --precision "$prec" --db "$db" "${opt[@]}" --json > "$out/budget-$b.json" 2> "$out/budget-$b.log"
  ms=$(jget "$out/budget-$b.json" winner_mean_ms)
  ratio=$(python3 -c "print(f'{$ms / $ex_ms:.4f}')")
  verdict=$(python3 -c "print('PASS' if $ms <= 1.03 * $ex_ms else 'FAIL')")
  [ "$verdict" = PASS ] || fails=$((fails + 1))
  printf "%-16s %4s screened  %7.1f s  winner %.4f ms  x%s %s  %s\n" "${opt[*]}" \
    "$(jget "$out/budget-$b.json" screened)" "$(jget "$out/budget-$b.json" wall_s)" \
    "$ms" "$ratio" "$verdict" "$(jget "$out/budget-$b.json" winner)"
  $ct check "${problem[@]}" --precision "$prec" --db "$db" --json > "$out/check-$b.json" 2>/dev/null
done
$ct check "${problem[@]}" --precision "$prec" --db "$out/exhaustive.db" --json > "$out/check-exhaustive.json" 2>/dev/null
echo "== the winners re-timed by convtune check (100 trials each)"
for f in "$out"/check-*.json; do
  [ -s "$f" ] || continue
  printf "%-24s %.4f ms  %s\n" "$(basename "$f" .json)" "$(jget "$f" mean_ms)" "$(jget "$f" variant)"
done
echo "== cold budgeted tune (empty database), --max-variants 20"
$ct tune "${problem[@]}" --precision "$prec" --db "$out/cold-20.db" --max-variants 20 --json > "$out/cold-20.json" 2>/dev/null
printf "%7.1f s wall, %s compiled, winner %.4f ms\n" "$(jget "$out/cold-20.json" wall_s)" \
  "$(jget "$out/cold-20.json" compiled)" "$(jget "$out/cold-20.json" winner_mean_ms)"
[ "$fails" -eq 0 ]
