#!/usr/bin/env bash
# Bytes a scaled-out job (riffle run --group) appends to its state topics per checkpoint, for a
# large keyed state of which few keys change per checkpoint (docs/scale-out.md, State topics).
#
#   benches/state_topic.sh [RIFFLE] [BACKEND]      BACKEND: hashmap (default) or rocksdb
#
# The job: COUNT and SUM per key into an upsert topic, checkpoints every second, reading a topic
# of 2 queues (2 source units, 2 aggregation units). 100,000 distinct keys first, then, after
# 25 s, 10 rows of random existing keys per second for 15 s. Prints every checkpoint of the
# aggregation unit 1-0: bytes appended to the state topic, messages, size of the checkpoint's
# files (what a whole copy of the checkpoint would append).
set -euo pipefail
RIFFLE=$(realpath "${1:-target/debug/riffle}")
BACKEND=${2:-hashmap}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
cat > job.sql <<SQL
SET 'state.backend.type' = '$BACKEND';
SET 'execution.checkpointing.interval' = '1 s';
CREATE TABLE events (k STRING, v BIGINT) WITH (
  'connector' = 'rocketmq', 'rocketmq.source.topic' = 'events',
  'rocketmq.source.startup.scan.mode' = 'earliest', 'rocketmq.source.group' = 'm',
  'format' = 'json');
CREATE TABLE totals (k STRING, n BIGINT, s BIGINT, PRIMARY KEY (k) NOT ENFORCED)
WITH ('connector' = 'rocketmq', 'rocketmq.sink.topic' = 'totals', 'format' = 'json');
INSERT INTO totals SELECT k, COUNT(*), SUM(v) FROM events GROUP BY k;
SQL
python3 -c '
for i in range(100000): print("{\"k\":\"key%06d\",\"v\":%d}" % (i, i % 97))' > bulk.jsonl
"$RIFFLE" topic create events --queues 2 >/dev/null
"$RIFFLE" topic produce events --key-field k --file bulk.jsonl >/dev/null
RIFFLE_CHECKPOINT_LOG=1 "$RIFFLE" run job.sql --job-id m --group g >/dev/null 2>err.txt &
pid=$!
sleep 25
for _ in $(seq 15); do
  python3 -c '
import random
for _ in range(10): print("{\"k\":\"key%06d\",\"v\":1}" % random.randrange(100000))' > trickle.jsonl
  "$RIFFLE" topic produce events --key-field k --file trickle.jsonl >/dev/null 2>&1
  sleep 1
done
sleep 3
kill "$pid"
wait "$pid" || true
echo "checkpoint appended_bytes messages checkpoint_file_bytes"
grep "unit 1-0 checkpoint" err.txt | sed -E 's/.*checkpoint ([0-9]+): ([0-9]+) bytes in ([0-9]+) messages.*files: ([0-9]+) bytes.*/\1 \2 \3 \4/'
