#!/usr/bin/env bash
# State size and checkpoint duration of a group aggregation over KEYS distinct keys (default
# 10 million), with the hashmap and the RocksDB state backend. Every row is a new key (datagen
# sequence), so the last checkpoint (taken when the input is exhausted) holds KEYS groups.
#
#   benches/checkpoint_state_size.sh [RIFFLE_BINARY] [KEYS] [INTERVAL] [BACKENDS]
#
# Prints each checkpoint's log line (number, size of the state files, duration) and the size
# on disk of the last completed checkpoint (RocksDB keeps its SST files there).
set -euo pipefail
riffle=$(realpath "${1:-target/debug/riffle}")
keys=${2:-10000000}
interval=${3:-60 s}
backends=${4:-hashmap rocksdb}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
for backend in $backends; do
  cat > job.sql <<SQL
SET 'execution.checkpointing.interval' = '$interval';
SET 'parallelism.default' = '1';
SET 'state.backend.type' = '$backend';
CREATE TABLE g (k BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '1000000000',
  'fields.k.kind' = 'sequence', 'fields.k.start' = '1', 'fields.k.end' = '$keys');
CREATE TABLE sink (k BIGINT, c BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO sink SELECT k, COUNT(*) FROM g GROUP BY k;
SQL
  echo "== $backend, $keys keys"
  start=$(date +%s.%N)
  RIFFLE_CHECKPOINT_LOG=1 /usr/bin/time -f "max RSS %M KB, CPU %U s user %S s system" \
    "$riffle" run job.sql --job-id "size-$backend" 2>&1 | grep -v triggered
  end=$(date +%s.%N)
  echo "job wall time: $(echo "$end - $start" | bc) s"
  last=$(ls -d .riffle/checkpoints/size-$backend/chk-* | sort -t- -k2 -n | tail -1)
  echo "last checkpoint on disk: $(du -sb "$last" | cut -f1) bytes ($last)"
done
