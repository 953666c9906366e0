//! Messages between subtasks and the routing of a subtask's output over its edges.

use std::sync::Arc;

use arrow::array::UInt32Array;
use arrow::compute::take_record_batch;
use arrow::row::{RowConverter, SortField};
use riffle_connectors::{ChangeBatch, RowKind};
use riffle_plan::Partitioning;
use riffle_state::{fnv1a, KeyGroups};
use tokio::sync::mpsc::Sender;

use crate::task::RuntimeError;

/// What flows over a channel.
#[derive(Debug, Clone)]
pub enum Message {
    /// Rows.
    Data(ChangeBatch),
    /// Event time has reached this value (milliseconds) on the sending channel.
    Watermark(i64),
    /// Checkpoint barrier `n`: everything before it on the channel belongs to checkpoint `n`.
    Barrier(u64),
    /// The sending subtask is done.
    End,
}

/// A message tagged with the receiver's input channel it arrived on.
pub type Envelope = (usize, Message);

/// One outgoing edge of a subtask: where its rows go.
pub struct EdgeOutput {
    /// Distribution of rows over `targets`.
    pub partitioning: Partitioning,
    /// Consumer subtasks with the channel index this subtask has at each of them.
    pub targets: Vec<(Sender<Envelope>, usize)>,
    /// Index of the producing subtask (for forward edges).
    pub subtask: usize,
    /// Round-robin position (rebalance).
    pub next: usize,
    /// The job's key groups: a hash edge sends a row to the subtask owning its key's group.
    pub key_groups: KeyGroups,
}

/// All outgoing edges of a subtask.
#[derive(Default)]
pub struct Output {
    /// The edges.
    pub edges: Vec<EdgeOutput>,
}

/// The error of a subtask whose downstream ended early: a consequence of that subtask's own
/// failure, which is the one to report.
pub(crate) const DOWNSTREAM_STOPPED: &str = "a downstream task stopped unexpectedly";

fn closed() -> RuntimeError {
    RuntimeError::new(DOWNSTREAM_STOPPED)
}

impl Output {
    /// Sends rows downstream according to each edge's partitioning.
    pub async fn send(&mut self, batch: ChangeBatch) -> Result<(), RuntimeError> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        for edge in &mut self.edges {
            let n = edge.targets.len();
            if n == 0 {
                continue;
            }
            match &edge.partitioning {
                Partitioning::Forward => {
                    let (tx, ch) = &edge.targets[edge.subtask % n];
                    tx.send((*ch, Message::Data(batch.clone())))
                        .await
                        .map_err(|_| closed())?;
                }
                Partitioning::Global => {
                    let (tx, ch) = &edge.targets[0];
                    tx.send((*ch, Message::Data(batch.clone())))
                        .await
                        .map_err(|_| closed())?;
                }
                Partitioning::Rebalance => {
                    let (tx, ch) = &edge.targets[edge.next % n];
                    edge.next = edge.next.wrapping_add(1);
                    tx.send((*ch, Message::Data(batch.clone())))
                        .await
                        .map_err(|_| closed())?;
                }
                Partitioning::Broadcast => {
                    for (tx, ch) in &edge.targets {
                        tx.send((*ch, Message::Data(batch.clone())))
                            .await
                            .map_err(|_| closed())?;
                    }
                }
                Partitioning::Hash(keys) => {
                    if n == 1 {
                        let (tx, ch) = &edge.targets[0];
                        tx.send((*ch, Message::Data(batch.clone())))
                            .await
                            .map_err(|_| closed())?;
                        continue;
                    }
                    let parts = key_group_partition(&batch, keys, n, edge.key_groups)?;
                    for (target, part) in parts.into_iter().enumerate() {
                        if let Some(part) = part {
                            let (tx, ch) = &edge.targets[target];
                            tx.send((*ch, Message::Data(part)))
                                .await
                                .map_err(|_| closed())?;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Sends a watermark, a barrier or the end to every consumer subtask.
    pub async fn broadcast(&mut self, message: Message) -> Result<(), RuntimeError> {
        for edge in &self.edges {
            for (tx, ch) in &edge.targets {
                // A consumer that already finished (e.g. after an error) needs nothing more.
                let _ = tx.send((*ch, message.clone())).await;
            }
        }
        Ok(())
    }
}

/// The key group of every row of `batch` keyed by `keys`: the FNV-1a hash of the key columns
/// in Arrow's row format, as keyed operators encode their state's keys (so a row and its
/// key's state meet on one subtask, whatever the parallelism).
pub fn key_groups_of_rows(
    batch: &arrow::record_batch::RecordBatch,
    keys: &[usize],
    groups: KeyGroups,
) -> Result<Vec<u16>, RuntimeError> {
    if let Some(k) = keys.iter().find(|k| **k >= batch.num_columns()) {
        return Err(RuntimeError::new(format!(
            "hash key column {k} out of range"
        )));
    }
    let columns = crate::operators::key_columns(batch, keys);
    let types: Vec<_> = columns.iter().map(|c| c.data_type().clone()).collect();
    let rows = key_converter(&types)?.convert_columns(&columns)?;
    Ok(rows
        .iter()
        .map(|row| groups.of_hash(fnv1a(row.data())))
        .collect())
}

/// Splits rows over `n` subtasks by the key group of their key columns (same key, same
/// subtask: the one owning its group).
pub(crate) fn key_group_partition(
    batch: &ChangeBatch,
    keys: &[usize],
    n: usize,
    groups: KeyGroups,
) -> Result<Vec<Option<ChangeBatch>>, RuntimeError> {
    let mut indices: Vec<Vec<u32>> = vec![Vec::new(); n];
    for (row, group) in key_groups_of_rows(&batch.batch, keys, groups)?
        .into_iter()
        .enumerate()
    {
        indices[groups.subtask_of(group, n)].push(row as u32);
    }
    let mut out = Vec::with_capacity(n);
    for idx in indices {
        if idx.is_empty() {
            out.push(None);
            continue;
        }
        let kinds = batch.kinds.as_ref().map(|k| {
            idx.iter()
                .map(|i| k.get(*i as usize).copied().unwrap_or(RowKind::Insert))
                .collect::<Arc<[RowKind]>>()
        });
        let part = take_record_batch(&batch.batch, &UInt32Array::from(idx))?;
        out.push(Some(ChangeBatch { batch: part, kinds }));
    }
    Ok(out)
}

/// Encodes key columns into comparable, hashable byte rows.
pub fn key_converter(types: &[arrow::datatypes::DataType]) -> Result<RowConverter, RuntimeError> {
    RowConverter::new(types.iter().map(|t| SortField::new(t.clone())).collect())
        .map_err(RuntimeError::from)
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use arrow::array::{Int64Array, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};
    use arrow::record_batch::RecordBatch;

    use super::*;

    fn batch(rows: usize) -> ChangeBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, true),
            Field::new("user", DataType::Utf8, true),
        ]));
        let ids: Vec<i64> = (0..rows as i64).map(|i| i * 7919 % 100_003).collect();
        let users: Vec<String> = ids.iter().map(|i| format!("user-{i}")).collect();
        ChangeBatch::inserts(
            RecordBatch::try_new(
                schema,
                vec![
                    Arc::new(Int64Array::from(ids)),
                    Arc::new(StringArray::from(users)),
                ],
            )
            .unwrap(),
        )
    }

    #[test]
    fn rows_go_to_the_subtask_owning_their_key_group() {
        let groups = KeyGroups::default();
        let batch = batch(1000);
        let expected = key_groups_of_rows(&batch.batch, &[1], groups).unwrap();
        for n in [1, 2, 3, 7] {
            let parts = key_group_partition(&batch, &[1], n, groups).unwrap();
            let mut total = 0;
            for (subtask, part) in parts.iter().enumerate() {
                let Some(part) = part else { continue };
                total += part.num_rows();
                for g in key_groups_of_rows(&part.batch, &[1], groups).unwrap() {
                    assert!(groups.range_of(subtask, n).contains(&g));
                }
            }
            assert_eq!(total, 1000);
        }
        // The key group of a row is that of its key's encoded bytes, as keyed state computes it.
        let columns = crate::operators::key_columns(&batch.batch, &[1]);
        let rows = key_converter(&[DataType::Utf8])
            .unwrap()
            .convert_columns(&columns)
            .unwrap();
        assert_eq!(groups.of_key(rows.row(5).data()), expected[5]);
    }

    /// The cost of routing rows by key group (`cargo test --release -p riffle-runtime --lib
    /// routing_cost -- --ignored --nocapture`).
    #[test]
    #[ignore]
    fn routing_cost() {
        let rows = 8192;
        let batch = batch(rows);
        let groups = KeyGroups::default();
        for (name, keys) in [
            ("BIGINT", vec![0]),
            ("STRING", vec![1]),
            ("BIGINT, STRING", vec![0, 1]),
        ] {
            let rounds = 200;
            let t = Instant::now();
            for _ in 0..rounds {
                let parts = key_group_partition(&batch, &keys, 4, groups).unwrap();
                assert_eq!(
                    parts.iter().flatten().map(|p| p.num_rows()).sum::<usize>(),
                    rows
                );
            }
            let ns = t.elapsed().as_nanos() as f64 / (rounds * rows) as f64;
            println!("{name}: {ns:.1} ns/row");
        }
    }
}
