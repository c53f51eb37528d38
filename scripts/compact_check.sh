#!/usr/bin/env bash
# Issue 11's command-line acceptance check, reproducible with the release binary:
#
#   On a store made by `strata ingest --seal-every 200` of 2×10^6 rows, then `strata compact`,
#   ≤ 16 live segment files per partition, and `strata survey` costs ≤ 2× the same rows ingested
#   in one seal (whole process).
#
# Two ways, since `strata ingest` compacts as it seals: "many" is ingested with compaction (up to
# 4 steps after each barrier, as `Served` takes), "backlog" with --no-compact (one file per
# barrier, all compacted afterwards by `strata compact`: what this check measured before ingest
# compacted). Both are then given `strata compact`, timed.
#
# Usage: scripts/compact_check.sh [N_ROWS] [N_RUNS]   (defaults 2000000 and 9)
# Builds `strata` in release mode (honours CARGO_TARGET_DIR), makes three stores of the same
# rows in a scratch folder (kept, and named at the end), prints each ingest's time and summary,
# the live files per partition and write amplification after compaction (from `strata fsck
# --json`), checks that every store answers the survey identically, and prints the median
# whole-process survey time of each compacted store, the one-seal store's, and the ratios.
# Needs bash, awk, jq.
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

ms_since() { echo $(( ($(now_ns) - $1) / 1000000 )); }
files() {
  "$STRATA" --store "$1" fsck --json > "fsck-$1.json" || true
  jq -r '.streams[].partitions[] | "    \(.track | join("/")): \(.live_files) files, \(.live_bytes) bytes, \(.rows) rows"' "fsck-$1.json"
  jq -r '.files | "    store: \(.live_files) live files; barrier files \(.barrier_files) (\(.barrier_bytes) bytes), merge outputs \(.merge_files) (\(.merge_bytes) bytes); write amplification \(.write_amplification)"' "fsck-$1.json"
  # What every command's boot replays: the frames since the last snapshot.
  jq -r '.manifest | "    manifest: \(.length) bytes, \(.frames) frames (generation \(.generation))"' "fsck-$1.json"
}

declare_c many
declare_c backlog
declare_c one
echo "== strata ingest --seal-every $SEAL_EVERY (compacting as it seals)"
t0=$(now_ns)
"$STRATA" --store many ingest c rows.csv --seal-every "$SEAL_EVERY"
echo "  took $(ms_since "$t0") ms"
files many
echo "== strata ingest --seal-every $SEAL_EVERY --no-compact"
t0=$(now_ns)
"$STRATA" --store backlog ingest c rows.csv --seal-every "$SEAL_EVERY" --no-compact
echo "  took $(ms_since "$t0") ms"
"$STRATA" --store one ingest c rows.csv --seal-every "$N_ROWS" > /dev/null

"$STRATA" --store backlog survey c --budget "$BUDGET" --format json > survey-before.json
for store in many backlog; do
  echo "== strata compact on $store"
  t0=$(now_ns)
  "$STRATA" --store "$store" compact
  echo "  took $(ms_since "$t0") ms (whole process)"
done
"$STRATA" --store many survey c --budget "$BUDGET" --format json > survey-many.json
"$STRATA" --store backlog survey c --budget "$BUDGET" --format json > survey-backlog.json
"$STRATA" --store one survey c --budget "$BUDGET" --format json > survey-one.json
cmp -s survey-before.json survey-backlog.json || { echo "FAIL: the survey changed after compaction"; exit 1; }
echo "survey answers: identical before and after \`strata compact\`"
# Against the one-seal store, the f64 sums of a cell that straddled barriers were added in a
# different grouping, so sum and sum_sq may differ in the last bits; everything else is exact.
# So too between the two compacted stores: compacting while barriers continue groups a cell's
# partials differently from compacting them all afterwards (docs/compaction.md).
exact='del(.. | .sum?, .sum_sq?)'
for other in backlog one; do
  cmp -s <(jq -c "$exact" survey-many.json) <(jq -c "$exact" "survey-$other.json") ||
    { echo "FAIL: the store compacted as it sealed and the $other store answer differently"; exit 1; }
done
echo "  compacted as sealed, compacted afterwards and one seal: the same in everything but sum and"
echo "  sum_sq (not compared: f64 rounding)"

echo "== live segment files per partition after compaction (strata fsck --json)"
for store in many backlog; do
  echo "  $store:"
  files "$store"
done
worst=$(jq -s '[.[].streams[].partitions[].live_files] | max' fsck-many.json fsck-backlog.json)
echo "  one-seal store: $(jq '.files.live_files' <("$STRATA" --store one fsck --json || true)) live files"

# Whole-process survey time, the two stores interleaved so drift hits both alike; warm cache
# (the reads above mapped every file once).
times_many=(); times_backlog=(); times_one=()
for _ in $(seq "$N_RUNS"); do
  t0=$(now_ns); "$STRATA" --store many survey c --budget "$BUDGET" > /dev/null; t1=$(now_ns)
  "$STRATA" --store backlog survey c --budget "$BUDGET" > /dev/null; t2=$(now_ns)
  "$STRATA" --store one survey c --budget "$BUDGET" > /dev/null; t3=$(now_ns)
  times_many+=($(( t1 - t0 ))); times_backlog+=($(( t2 - t1 ))); times_one+=($(( t3 - t2 )))
done
median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
m_many=$(median "${times_many[@]}"); m_backlog=$(median "${times_backlog[@]}")
m_one=$(median "${times_one[@]}")
echo "== strata survey c --budget $BUDGET, whole process, median of $N_RUNS runs"
awk -v a="$m_many" -v c="$m_backlog" -v b="$m_one" -v w="$worst" -v fmax="$FILES_PER_PARTITION_MAX" 'BEGIN {
  printf "  compacted as sealed (every 200):          %.2f ms, ratio %.2f (target <= 2)\n", a / 1e6, a / b
  printf "  --no-compact, then compacted (every 200): %.2f ms, ratio %.2f (target <= 2)\n", c / 1e6, c / b
  printf "  one seal:                                 %.2f ms\n", b / 1e6
  printf "  most live files in one partition: %d (target <= %d)\n", w, fmax
  ok = (a / b <= 2 && c / b <= 2 && w <= fmax)
  print ok ? "PASS" : "FAIL"
  exit !ok
}' || verdict=1
echo "stores kept in $WORK"
exit "${verdict:-0}"
