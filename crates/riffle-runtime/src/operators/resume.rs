//! Test support: an operator restored from a snapshot taken at any point of its input must
//! continue exactly as an operator that never stopped, also when the snapshots of its subtasks
//! are redistributed over another number of subtasks.

use datafusion::common::ScalarValue;
use riffle_connectors::ChangeBatch;
use riffle_state::KeyGroups;

use super::{Emit, StreamOperator};
use crate::exchange::key_group_partition;
use crate::keyed_snapshot::merge;

/// One input event of an operator.
#[derive(Clone)]
pub(super) enum Step {
    /// Rows on input `0` or `1`.
    Rows(usize, ChangeBatch),
    /// An input watermark.
    Watermark(i64),
    /// The watermark of one input alone (followed by a combined [`Step::Watermark`] when the
    /// minimum advances).
    InputWatermark(usize, i64),
}

fn apply(op: &mut dyn StreamOperator, step: &Step, out: &mut Vec<Emit>) {
    match step {
        Step::Rows(input, batch) => op.process(*input, batch.clone(), out),
        Step::Watermark(w) => op.watermark(*w, out),
        Step::InputWatermark(input, w) => {
            op.input_watermark(*input, *w);
            Ok(())
        }
    }
    .expect("operator step");
}

/// The output as lines; rows between two watermarks are sorted (operators emit the rows of
/// different keys in hash-map order, which differs between two instances).
fn render(out: &[Emit]) -> Vec<String> {
    let mut lines = Vec::new();
    let mut segment: Vec<String> = Vec::new();
    for emit in out {
        match emit {
            Emit::Data(b) => {
                for row in 0..b.num_rows() {
                    let values: Vec<String> = b
                        .batch
                        .columns()
                        .iter()
                        .map(|c| {
                            ScalarValue::try_from_array(c.as_ref(), row)
                                .map(|v| v.to_string())
                                .unwrap_or_else(|e| e.to_string())
                        })
                        .collect();
                    segment.push(format!("{}[{}]", b.kind(row).short(), values.join(", ")));
                }
            }
            Emit::Watermark(w) => {
                segment.sort();
                lines.append(&mut segment);
                lines.push(format!("WM {w}"));
            }
        }
    }
    segment.sort();
    lines.append(&mut segment);
    lines
}

/// For every position in `steps`: runs the steps before it, snapshots the operator, restores
/// the snapshot into a fresh operator (built by `make`) and runs the rest there (then the
/// end of input). The output must equal that of one operator running every step. Returns the
/// uninterrupted output, so callers can check it is not trivial.
pub(super) fn assert_resumes_anywhere(
    make: &dyn Fn() -> Box<dyn StreamOperator>,
    steps: &[Step],
) -> Vec<String> {
    let mut whole = make();
    assert_eq!(whole.checkpoint_unsupported(), None);
    let mut expected = Vec::new();
    for step in steps {
        apply(whole.as_mut(), step, &mut expected);
    }
    whole.end(&mut expected).expect("end");
    let expected = render(&expected);
    for split in 0..=steps.len() {
        let mut first = make();
        let mut out = Vec::new();
        for step in &steps[..split] {
            apply(first.as_mut(), step, &mut out);
        }
        let state = first.snapshot(split as u64).expect("snapshot");
        drop(first);
        let mut second = make();
        second.restore(&state).expect("restore");
        for step in &steps[split..] {
            apply(second.as_mut(), step, &mut out);
        }
        second.end(&mut out).expect("end");
        assert_eq!(render(&out), expected, "resumed after step {split}");
    }
    expected
}

/// Runs `steps` on subtasks `ops`, rows routed by the key group of their input's key columns
/// (`keys[input]`), watermarks to every subtask, as the exchange does.
fn apply_parallel(
    ops: &mut [Box<dyn StreamOperator>],
    steps: &[Step],
    keys: &[&[usize]],
    groups: KeyGroups,
    out: &mut Vec<Emit>,
) {
    for step in steps {
        match step {
            Step::Rows(input, batch) => {
                let parts =
                    key_group_partition(batch, keys[*input], ops.len(), groups).expect("partition");
                for (op, part) in ops.iter_mut().zip(parts) {
                    if let Some(part) = part {
                        apply(op.as_mut(), &Step::Rows(*input, part), out);
                    }
                }
            }
            _ => {
                for op in ops.iter_mut() {
                    apply(op.as_mut(), step, out);
                }
            }
        }
    }
}

/// The rows of an output, sorted (subtasks interleave their rows and watermarks freely).
fn rows_of(out: &[Emit]) -> Vec<String> {
    let mut rows: Vec<String> = render(out)
        .into_iter()
        .filter(|l| !l.starts_with("WM "))
        .collect();
    rows.sort();
    rows
}

/// For every position in `steps`: runs the steps before it on 2 subtasks, redistributes their
/// snapshots by key group over 3 subtasks and over 1 (as a restore with another parallelism
/// does) and runs the rest there. The rows must equal those of one operator running every
/// step. `keys[input]` are the key columns the exchange routes input `input` by.
pub(super) fn assert_rescales_anywhere(
    make: &dyn Fn() -> Box<dyn StreamOperator>,
    steps: &[Step],
    keys: &[&[usize]],
) {
    let groups = KeyGroups::new(16).expect("key groups");
    let mut whole = make();
    assert!(
        whole.keyed_snapshot(),
        "the operator writes keyed snapshots"
    );
    let mut expected = Vec::new();
    for step in steps {
        apply(whole.as_mut(), step, &mut expected);
    }
    whole.end(&mut expected).expect("end");
    let expected = rows_of(&expected);
    for split in 0..=steps.len() {
        for parallelism in [1, 3] {
            let mut out = Vec::new();
            let mut before: Vec<Box<dyn StreamOperator>> = (0..2).map(|_| make()).collect();
            apply_parallel(&mut before, &steps[..split], keys, groups, &mut out);
            let states: Vec<Vec<u8>> = before
                .iter_mut()
                .map(|op| op.snapshot(split as u64).expect("snapshot"))
                .collect();
            let states: Vec<&[u8]> = states.iter().map(Vec::as_slice).collect();
            let mut after: Vec<Box<dyn StreamOperator>> = (0..parallelism)
                .map(|i| {
                    let mut op = make();
                    let merged = merge(&states, groups.range_of(i, parallelism), groups, "test")
                        .expect("merge");
                    op.restore(&merged).expect("restore");
                    op
                })
                .collect();
            apply_parallel(&mut after, &steps[split..], keys, groups, &mut out);
            for op in &mut after {
                op.end(&mut out).expect("end");
            }
            assert_eq!(
                rows_of(&out),
                expected,
                "2 subtasks to {parallelism} after step {split}"
            );
        }
    }
}
