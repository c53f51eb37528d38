#!/usr/bin/env bash
# Issue 11's command-line acceptance check, reproducible with the release binary:
#
#   On a store made by `strata ingest --seal-every 200` of 2×10^6 rows, `strata compact` leaves
#   ≤ 16 live segment files per partition, and `strata survey` costs ≤ 2× the same rows ingested
#   in one seal (whole process).
#
# Usage: scripts/compact_check.sh [N_ROWS] [N_RUNS]   (defaults 2000000 and 9)
# Builds `strata` in release mode (honours CARGO_TARGET_DIR), makes two stores of the same rows
# in a scratch folder (kept, and named at the end), prints the live files per partition after
# compaction (from `strata fsck --json`), checks that both stores answer the survey identically,
# and prints the median whole-process survey time of each and their ratio. Needs bash, awk, jq.
set -euo pipefail

N_ROWS=${1:-2000000}
N_RUNS=${2:-9}
SEAL_EVERY=200
BUDGET=4000
FILES_PER_PARTITION_MAX=16

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cargo build --release --quiet --bin strata --manifest-path "$ROOT/Cargo.toml"
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
STRATA=$TARGET/release/strata
WORK=$(mktemp -d "${TMPDIR:-/tmp}/strata-compact-check.XXXXXX")
cd "$WORK"

# 2 runs × 2 probes = 4 partitions, one u64 axis, an f64 random walk: every barrier of 200 rows
# touches every partition, so each partition starts with N_ROWS / 200 files.
awk -v n="$N_ROWS" 'BEGIN {
  srand(7); print "run,probe,t,v"; split("0 0 0 0", walk, " ")
  for (i = 0; i < n; i++) {
    p = i % 4; walk[p + 1] += rand() - 0.5
    printf "r%d,p%d,%d,%.6f\n", p % 2, int(p / 2), i, walk[p + 1]
  }
}' > rows.csv

now_ns() { date +%s%N; }
declare_c() {
  "$STRATA" --store "$1" declare c --field run:str --field probe:str --field t:u64 \
    --field v:f64 --track run,probe --axis t > /dev/null
}

declare_c many
declare_c one
t0=$(now_ns)
"$STRATA" --store many ingest c rows.csv --seal-every "$SEAL_EVERY"
t1=$(now_ns)
"$STRATA" --store one ingest c rows.csv --seal-every "$N_ROWS"
echo "ingest with --seal-every $SEAL_EVERY took $(( (t1 - t0) / 1000000 )) ms"

"$STRATA" --store many survey c --budget "$BUDGET" --format json > survey-before.json
echo "== strata compact"
"$STRATA" --store many compact
"$STRATA" --store many survey c --budget "$BUDGET" --format json > survey-many.json
"$STRATA" --store one survey c --budget "$BUDGET" --format json > survey-one.json
cmp -s survey-before.json survey-many.json || { echo "FAIL: the survey changed after compaction"; exit 1; }
echo "survey answers: identical before and after compaction"
# Against the one-seal store, the f64 sums of a cell that straddled barriers were added in a
# different grouping, so sum and sum_sq may differ in the last bits; everything else is exact.
exact='del(.. | .sum?, .sum_sq?)'
cmp -s <(jq -c "$exact" survey-many.json) <(jq -c "$exact" survey-one.json) ||
  { echo "FAIL: the compacted store and the one-seal store answer differently"; exit 1; }
echo "  and to the one-seal store in everything but sum and sum_sq (not compared: f64 rounding)"

echo "== live segment files per partition after compaction (strata fsck --json)"
"$STRATA" --store many fsck --json > fsck-many.json || true
jq -r '.streams[].partitions[] | "  \(.track | join("/")): \(.live_files) files, \(.live_bytes) bytes, \(.rows) rows"' fsck-many.json
jq -r '.files | "  store: \(.live_files) live files; barrier files \(.barrier_files) (\(.barrier_bytes) bytes), merge outputs \(.merge_files) (\(.merge_bytes) bytes); write amplification \(.write_amplification)"' fsck-many.json
worst=$(jq '[.streams[].partitions[].live_files] | max' fsck-many.json)
echo "  one-seal store: $(jq '.files.live_files' <("$STRATA" --store one fsck --json || true)) live files"

# Whole-process survey time, the two stores interleaved so drift hits both alike; warm cache
# (the reads above mapped every file once).
times_many=(); times_one=()
for _ in $(seq "$N_RUNS"); do
  t0=$(now_ns); "$STRATA" --store many survey c --budget "$BUDGET" > /dev/null; t1=$(now_ns)
  "$STRATA" --store one survey c --budget "$BUDGET" > /dev/null; t2=$(now_ns)
  times_many+=($(( t1 - t0 ))); times_one+=($(( t2 - t1 )))
done
median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
m_many=$(median "${times_many[@]}"); m_one=$(median "${times_one[@]}")
echo "== strata survey c --budget $BUDGET, whole process, median of $N_RUNS runs"
awk -v a="$m_many" -v b="$m_one" -v w="$worst" -v fmax="$FILES_PER_PARTITION_MAX" 'BEGIN {
  printf "  compacted (sealed every 200): %.2f ms\n  one seal:                     %.2f ms\n", a / 1e6, b / 1e6
  printf "  ratio: %.2f (target <= 2)\n", a / b
  printf "  most live files in one partition: %d (target <= %d)\n", w, fmax
  ok = (a / b <= 2 && w <= fmax)
  print ok ? "PASS" : "FAIL"
  exit !ok
}' || verdict=1
echo "stores kept in $WORK"
exit "${verdict:-0}"
