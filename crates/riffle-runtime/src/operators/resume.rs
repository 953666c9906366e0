//! Test support: an operator restored from a snapshot taken at any point of its input must
//! continue exactly as an operator that never stopped.

use datafusion::common::ScalarValue;
use riffle_connectors::ChangeBatch;

use super::{Emit, StreamOperator};

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
