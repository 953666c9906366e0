//! The `table` result mode: a query's changelog applied to a set of rows, as Flink's SQL client
//! materializes an updating result.

use riffle_connectors::print::ResultRow;
use riffle_connectors::RowKind;

/// The current rows of a query result, in the order they were first added; an update (`-U`
/// then `+U`) keeps the row's place, so the table updates in place.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MaterializedTable {
    rows: Vec<Vec<Option<String>>>,
    /// Where the last `-U` removed a row: its `+U` goes there.
    update_slot: Option<usize>,
}

impl MaterializedTable {
    /// An empty result.
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies one change: `+I`/`+U` add the row, `-U`/`-D` retract one equal row. A retraction
    /// of a row that is not there is an inconsistency of the changelog and is reported.
    pub fn apply(&mut self, change: &ResultRow) -> Result<(), String> {
        let slot = self.update_slot.take();
        match change.kind {
            RowKind::UpdateAfter if slot.is_some_and(|at| at <= self.rows.len()) => {
                let at = slot.unwrap_or(self.rows.len());
                self.rows.insert(at, change.values.clone());
                Ok(())
            }
            RowKind::Insert | RowKind::UpdateAfter => {
                self.rows.push(change.values.clone());
                Ok(())
            }
            RowKind::UpdateBefore | RowKind::Delete => {
                // The most recent equal row: an update replaces what was just added.
                match self.rows.iter().rposition(|r| *r == change.values) {
                    Some(at) => {
                        self.rows.remove(at);
                        if change.kind == RowKind::UpdateBefore {
                            self.update_slot = Some(at);
                        }
                        Ok(())
                    }
                    None => Err(format!(
                        "retraction {} of a row the result does not hold",
                        change.kind.short()
                    )),
                }
            }
        }
    }

    /// The current rows.
    pub fn rows(&self) -> &[Vec<Option<String>>] {
        &self.rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(kind: RowKind, values: &[&str]) -> ResultRow {
        ResultRow {
            kind,
            values: values.iter().map(|v| Some(v.to_string())).collect(),
        }
    }

    #[test]
    fn updates_keep_the_place_of_the_retracted_row() {
        let mut t = MaterializedTable::new();
        t.apply(&change(RowKind::Insert, &["a", "1"]))
            .expect("insert");
        t.apply(&change(RowKind::Insert, &["b", "1"]))
            .expect("insert");
        t.apply(&change(RowKind::UpdateBefore, &["a", "1"]))
            .expect("retract");
        t.apply(&change(RowKind::UpdateAfter, &["a", "2"]))
            .expect("update");
        assert_eq!(
            t.rows(),
            &[
                vec![Some("a".to_string()), Some("2".to_string())],
                vec![Some("b".to_string()), Some("1".to_string())]
            ]
        );
        t.apply(&change(RowKind::Delete, &["b", "1"]))
            .expect("delete");
        assert_eq!(t.rows().len(), 1);
    }

    #[test]
    fn retracting_a_missing_row_is_reported() {
        let mut t = MaterializedTable::new();
        let err = t
            .apply(&change(RowKind::Delete, &["x"]))
            .expect_err("nothing to delete");
        assert!(err.contains("-D"), "{err}");
    }
}
