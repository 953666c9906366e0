//! Comparing an engine's output with what Flink produced for a case.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;
use similar::TextDiff;

use crate::case::{CompareMode, Expected, ExpectedRows};
use crate::float::{self, FloatWidth};
use crate::row::{split_sink, PrintedRow, RowKind, Value};

/// What the engine under test produced for a case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum ActualOutput {
    /// Printed rows in Flink's format, one per element, in the order they were produced.
    Rows(Vec<String>),
    /// The statements were rejected or the job failed, with this message.
    Error(String),
}

/// Which comparison rule a mismatch comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Check {
    /// Error expected but rows produced, or the other way round.
    Outcome,
    /// `ordered = true`: the exact sequence of rows.
    Sequence,
    /// Append-only output (only `+I`): rows as a multiset.
    Multiset,
    /// Updating output: the changes of every key, in order.
    Changelog,
    /// Updating output: the table left after applying all changes.
    FinalTable,
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Check::Outcome => "outcome",
            Check::Sequence => "row sequence",
            Check::Multiset => "rows (as a multiset)",
            Check::Changelog => "changelog per key",
            Check::FinalTable => "final table",
        })
    }
}

/// One failed check with a unified diff (`-` expected, `+` actual).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mismatch {
    /// The rule that failed.
    pub check: Check,
    /// A unified diff between the expected and the actual side of that rule.
    pub diff: String,
}

/// The result of [`compare`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Comparison {
    /// Failed checks; empty when the output conforms.
    pub mismatches: Vec<Mismatch>,
    /// Remarks that do not fail the comparison (e.g. a differing error message).
    pub notes: Vec<String>,
}

impl Comparison {
    /// Whether every check passed.
    pub fn passed(&self) -> bool {
        self.mismatches.is_empty()
    }
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.passed() {
            writeln!(f, "PASS")?;
        }
        for m in &self.mismatches {
            writeln!(f, "FAIL {}:", m.check)?;
            f.write_str(&m.diff)?;
        }
        for n in &self.notes {
            writeln!(f, "note: {n}")?;
        }
        Ok(())
    }
}

/// Compares an engine's output with a case's expectation.
///
/// Rules:
/// * Expected error: the engine must fail too. Passing does not need the same message (the
///   engine is not Java); when the engine's message does not contain Flink's first message line,
///   a note says so.
/// * Expected rows, engine failed: mismatch ([`Check::Outcome`]).
/// * `ordered = true`: the rows must be the same sequence ([`Check::Sequence`]).
/// * Append-only (every expected and actual row is `+I`): the rows must be equal as multisets
///   ([`Check::Multiset`]).
/// * Updating (any `-U`, `+U`, `-D`): with `compare = changelog` (the default) the changes of
///   each key must be the same sequence ([`Check::Changelog`]), while changes of different keys
///   may interleave differently; and in every mode the table left after applying the changes
///   must be equal as a multiset ([`Check::FinalTable`]). The key is the `key` option, else the
///   sink's primary key, else the whole row: then each distinct row value has its own sequence,
///   so a `-U[a, 1]` must follow the `+I[a, 1]` or `+U[a, 1]` it retracts. Materialising with a
///   key replaces the key's row on `+I`/`+U` and removes it on `-U`/`-D`; without a key `+I`/`+U`
///   add one copy of the row and `-U`/`-D` remove one copy (retracting an absent row shows as a
///   `!` line in the final table).
/// * Rows printed by several `print` sinks (`name> +I[...]`) are compared per sink.
/// * Rows are compared in canonical form: parsed, with map entries sorted; a line that does not
///   parse as a row is compared as raw text.
pub fn compare(expected: &Expected, actual: &ActualOutput) -> Comparison {
    let mut result = Comparison::default();
    match (expected, actual) {
        (Expected::Error(e), ActualOutput::Error(message)) => {
            let first = e.message.lines().next().unwrap_or_default();
            if !message.contains(first) {
                result.notes.push(format!(
                    "Flink failed with `{}: {first}`; the engine's message differs: {message}",
                    e.class
                ));
            }
        }
        (Expected::Error(e), ActualOutput::Rows(rows)) => {
            let want = format!("error {}: {}\n", e.class, e.message);
            let got = lines_text(rows);
            result.mismatches.push(Mismatch {
                check: Check::Outcome,
                diff: unified(&want, &got),
            });
        }
        (Expected::Rows(e), ActualOutput::Error(message)) => {
            let want = lines_text(&e.rows);
            result.mismatches.push(Mismatch {
                check: Check::Outcome,
                diff: unified(&want, &format!("error {message}\n")),
            });
        }
        (Expected::Rows(e), ActualOutput::Rows(rows)) => compare_rows(e, rows, &mut result),
    }
    result
}

/// A printed line split into what the rules need.
struct Entry {
    sink: Option<String>,
    kind: Option<RowKind>,
    /// Canonical field list text `[a, 1]` (or the raw text after the kind when unparseable).
    fields: String,
    /// Canonical field texts, when the line parsed.
    values: Option<Vec<String>>,
}

impl Entry {
    /// Reads a printed line; `floats` gives the floating-point width of each column, whose
    /// values are compared at Flink's printed precision.
    fn new(line: &str, floats: &[Option<FloatWidth>]) -> Entry {
        match PrintedRow::parse(line) {
            Ok(p) => {
                let mut row = p.row.canonical();
                for (field, width) in row.fields.iter_mut().zip(floats) {
                    if let (Value::Scalar(text), Some(width)) = (&*field, width) {
                        *field = Value::Scalar(float::canonical(text, *width));
                    }
                }
                let values = row
                    .fields
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>();
                let text = row.to_string();
                Entry {
                    sink: p.sink,
                    kind: Some(row.kind),
                    fields: text[2..].to_string(),
                    values: Some(values),
                }
            }
            Err(_) => {
                let (sink, rest) = split_sink(line);
                let kind = rest.get(..2).and_then(RowKind::from_marker);
                let fields = if kind.is_some() { &rest[2..] } else { rest };
                Entry {
                    sink: sink.map(str::to_string),
                    kind,
                    fields: fields.to_string(),
                    values: None,
                }
            }
        }
    }

    fn prefix(&self) -> String {
        self.sink
            .as_ref()
            .map(|s| format!("{s}> "))
            .unwrap_or_default()
    }

    fn line(&self) -> String {
        let kind = self.kind.map(RowKind::marker).unwrap_or_default();
        format!("{}{kind}{}", self.prefix(), self.fields)
    }

    /// The changelog key: the key columns' values, or the whole field list.
    fn key(&self, key: Option<&[usize]>) -> String {
        match (key, &self.values) {
            (Some(indices), Some(values)) => {
                let picked: Vec<&str> = indices
                    .iter()
                    .map(|i| values.get(*i).map_or("<missing column>", String::as_str))
                    .collect();
                format!("{}[{}]", self.prefix(), picked.join(", "))
            }
            _ => format!("{}{}", self.prefix(), self.fields),
        }
    }
}

fn compare_rows(expected: &ExpectedRows, actual: &[String], result: &mut Comparison) {
    let floats = expected
        .columns
        .as_deref()
        .map(float::float_columns)
        .unwrap_or_default();
    let want: Vec<Entry> = expected
        .rows
        .iter()
        .map(|l| Entry::new(l, &floats))
        .collect();
    let got: Vec<Entry> = actual.iter().map(|l| Entry::new(l, &floats)).collect();
    if expected.ordered {
        check(
            result,
            Check::Sequence,
            &render(want.iter().map(Entry::line)),
            &render(got.iter().map(Entry::line)),
        );
        return;
    }
    let append_only = want
        .iter()
        .chain(&got)
        .all(|e| e.kind == Some(RowKind::Insert));
    if append_only {
        check(result, Check::Multiset, &sorted(&want), &sorted(&got));
        return;
    }
    let key = expected.key_indices.as_deref();
    if expected.mode == CompareMode::Changelog {
        check(
            result,
            Check::Changelog,
            &per_key(&want, key),
            &per_key(&got, key),
        );
    }
    check(
        result,
        Check::FinalTable,
        &materialise(&want, key),
        &materialise(&got, key),
    );
}

fn check(result: &mut Comparison, check: Check, want: &str, got: &str) {
    if want != got {
        result.mismatches.push(Mismatch {
            check,
            diff: unified(want, got),
        });
    }
}

fn sorted(entries: &[Entry]) -> String {
    let mut lines: Vec<String> = entries.iter().map(Entry::line).collect();
    lines.sort();
    render(lines)
}

/// Every key with its changes in order, keys sorted.
fn per_key(entries: &[Entry], key: Option<&[usize]>) -> String {
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for e in entries {
        groups.entry(e.key(key)).or_default().push(e.line());
    }
    let mut out = String::new();
    for (k, changes) in groups {
        out.push_str(&format!("key {k}:\n"));
        for c in changes {
            out.push_str(&format!("  {c}\n"));
        }
    }
    out
}

/// The rows left after applying the changelog, sorted.
fn materialise(entries: &[Entry], key: Option<&[usize]>) -> String {
    let mut table: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut problems = Vec::new();
    for e in entries {
        let k = e.key(key);
        let row = format!("{}+I{}", e.prefix(), e.fields);
        let adds = e.kind.is_some_and(RowKind::is_addition);
        let slot = table.entry(k).or_default();
        if key.is_some() {
            slot.clear();
            if adds {
                slot.push(row);
            }
        } else if adds {
            slot.push(row);
        } else if slot.pop().is_none() {
            problems.push(format!(
                "! {} retracts a row that is not in the table",
                e.line()
            ));
        }
    }
    let mut lines: Vec<String> = table.into_values().flatten().collect();
    lines.sort();
    lines.extend(problems);
    render(lines)
}

fn render(lines: impl IntoIterator<Item = String>) -> String {
    lines.into_iter().map(|l| l + "\n").collect()
}

fn lines_text(lines: &[String]) -> String {
    render(lines.iter().cloned())
}

fn unified(want: &str, got: &str) -> String {
    TextDiff::from_lines(want, got)
        .unified_diff()
        .context_radius(3)
        .header("expected", "actual")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::{Case, ExpectedError};

    fn rows(lines: &[&str]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    fn expected(lines: &[&str]) -> ExpectedRows {
        ExpectedRows {
            rows: rows(lines),
            columns: None,
            primary_key: None,
            key_indices: None,
            ordered: false,
            mode: CompareMode::Changelog,
        }
    }

    fn run(e: ExpectedRows, actual: &[&str]) -> Comparison {
        compare(&Expected::Rows(e), &ActualOutput::Rows(rows(actual)))
    }

    #[test]
    fn append_only_is_a_multiset() {
        let e = expected(&["+I[a, 1]", "+I[b, 2]", "+I[a, 1]"]);
        assert!(run(e.clone(), &["+I[b, 2]", "+I[a, 1]", "+I[a, 1]"]).passed());
        let c = run(e, &["+I[b, 2]", "+I[a, 1]"]);
        assert_eq!(c.mismatches.len(), 1);
        assert_eq!(c.mismatches[0].check, Check::Multiset);
    }

    #[test]
    fn changing_one_row_fails_with_a_readable_diff() {
        let e = expected(&[
            "+I[2020-04-15T08:00, 2020-04-15T08:10, 11.00]",
            "+I[2020-04-15T08:10, 2020-04-15T08:20, 10.00]",
        ]);
        let c = run(
            e,
            &[
                "+I[2020-04-15T08:00, 2020-04-15T08:10, 11.00]",
                "+I[2020-04-15T08:10, 2020-04-15T08:20, 10.50]",
            ],
        );
        assert!(!c.passed());
        insta::assert_snapshot!(c.to_string(), @r"
        FAIL rows (as a multiset):
        --- expected
        +++ actual
        @@ -1,2 +1,2 @@
         +I[2020-04-15T08:00, 2020-04-15T08:10, 11.00]
        -+I[2020-04-15T08:10, 2020-04-15T08:20, 10.00]
        ++I[2020-04-15T08:10, 2020-04-15T08:20, 10.50]
        ");
    }

    #[test]
    fn ordered_compares_the_sequence() {
        let mut e = expected(&["+I[1]", "+I[2]"]);
        e.ordered = true;
        assert!(run(e.clone(), &["+I[1]", "+I[2]"]).passed());
        let c = run(e, &["+I[2]", "+I[1]"]);
        assert_eq!(c.mismatches[0].check, Check::Sequence);
    }

    #[test]
    fn maps_compare_regardless_of_entry_order() {
        assert!(run(expected(&["+I[{a=1, b=2}]"]), &["+I[{b=2, a=1}]"]).passed());
    }

    #[test]
    fn updating_changes_of_different_keys_may_interleave() {
        let e = expected(&["+I[a, 1]", "+I[b, 1]", "-U[a, 1]", "+U[a, 2]"]);
        assert!(run(e, &["+I[a, 1]", "-U[a, 1]", "+I[b, 1]", "+U[a, 2]"]).passed());
    }

    #[test]
    fn updating_changes_of_one_row_must_keep_their_order() {
        let e = expected(&["+I[a, 1]", "-U[a, 1]", "+U[a, 2]"]);
        // Same final table, but the retraction comes before the row it retracts.
        let c = run(e, &["-U[a, 1]", "+I[a, 1]", "+U[a, 2]"]);
        assert_eq!(
            c.mismatches.iter().map(|m| m.check).collect::<Vec<_>>(),
            vec![Check::Changelog, Check::FinalTable]
        );
        insta::assert_snapshot!(c.mismatches[1].diff, @r"
        --- expected
        +++ actual
        @@ -1 +1,3 @@
        ++I[a, 1]
         +I[a, 2]
        +! -U[a, 1] retracts a row that is not in the table
        ");
    }

    #[test]
    fn updating_with_missing_intermediate_change_fails_changelog_only() {
        let e = expected(&["+I[a, 1]", "-U[a, 1]", "+U[a, 2]"]);
        let c = run(e, &["+I[a, 2]"]);
        assert_eq!(
            c.mismatches.iter().map(|m| m.check).collect::<Vec<_>>(),
            vec![Check::Changelog]
        );
    }

    #[test]
    fn final_mode_ignores_intermediate_changes() {
        let mut e = expected(&["+I[1, null]", "-D[1, null]", "+I[1, x]"]);
        e.mode = CompareMode::FinalTable;
        assert!(run(e.clone(), &["+I[1, x]"]).passed());
        let c = run(e, &["+I[1, y]"]);
        assert_eq!(
            c.mismatches.iter().map(|m| m.check).collect::<Vec<_>>(),
            vec![Check::FinalTable]
        );
    }

    #[test]
    fn key_columns_group_upserts() {
        // An upsert stream (no -U) keyed by the first column.
        let mut e = expected(&["+I[a, 1]", "+I[b, 5]", "+U[a, 2]", "-D[b, 5]"]);
        e.key_indices = Some(vec![0]);
        assert!(run(e.clone(), &["+I[b, 5]", "+I[a, 1]", "-D[b, 5]", "+U[a, 2]"]).passed());
        // Per key the order matters: a's updates swapped.
        let c = run(e, &["+I[b, 5]", "+U[a, 2]", "-D[b, 5]", "+I[a, 1]"]);
        assert_eq!(
            c.mismatches.iter().map(|m| m.check).collect::<Vec<_>>(),
            vec![Check::Changelog, Check::FinalTable]
        );
        insta::assert_snapshot!(c.mismatches[0].diff, @r"
        --- expected
        +++ actual
        @@ -1,6 +1,6 @@
         key [a]:
        +  +U[a, 2]
           +I[a, 1]
        -  +U[a, 2]
         key [b]:
           +I[b, 5]
           -D[b, 5]
        ");
    }

    #[test]
    fn sinks_are_kept_apart() {
        let e = expected(&[
            "raw> +I[1]",
            "agg> +I[x, 1]",
            "agg> -U[x, 1]",
            "agg> +U[x, 2]",
        ]);
        assert!(run(
            e.clone(),
            &[
                "agg> +I[x, 1]",
                "raw> +I[1]",
                "agg> -U[x, 1]",
                "agg> +U[x, 2]"
            ]
        )
        .passed());
        let c = run(
            e,
            &[
                "agg> +I[x, 1]",
                "agg> +I[1]",
                "agg> -U[x, 1]",
                "agg> +U[x, 2]",
            ],
        );
        assert!(!c.passed());
    }

    #[test]
    fn unparseable_lines_compare_as_text() {
        assert!(run(expected(&["+I[a, b]c]"]), &["+I[a, b]c]"]).passed());
        assert!(!run(expected(&["+I[a, b]c]"]), &["+I[a, b]d]"]).passed());
    }

    #[test]
    fn expected_error_passes_on_any_engine_error_with_a_note() {
        let e = Expected::Error(ExpectedError {
            class: "org.apache.calcite.sql.validate.SqlValidatorException".into(),
            message: "Column 'x' not found in any table".into(),
        });
        let c = compare(
            &e,
            &ActualOutput::Error("error: Column 'x' not found in any table".into()),
        );
        assert!(c.passed() && c.notes.is_empty());
        let c = compare(&e, &ActualOutput::Error("unknown column x".into()));
        assert!(c.passed());
        assert_eq!(c.notes.len(), 1);
        let c = compare(&e, &ActualOutput::Rows(rows(&["+I[1]"])));
        assert_eq!(c.mismatches[0].check, Check::Outcome);
    }

    #[test]
    fn engine_error_when_rows_expected_fails() {
        let c = compare(
            &Expected::Rows(expected(&["+I[1]"])),
            &ActualOutput::Error("boom".into()),
        );
        insta::assert_snapshot!(c.to_string(), @r"
        FAIL outcome:
        --- expected
        +++ actual
        @@ -1 +1 @@
        -+I[1]
        +error boom
        ");
    }

    #[test]
    fn compares_a_parsed_case() {
        let text = "--- sql\nSELECT 1\n--- columns (flink 2.3.0)\nk: STRING\nc: BIGINT\nPRIMARY KEY (k)\n--- expected (flink 2.3.0)\n+I[a, 1]\n+U[a, 2]\n";
        let case = Case::parse("x.test", text).unwrap();
        let Some(e) = &case.expected else { panic!() };
        assert!(compare(e, &ActualOutput::Rows(rows(&["+I[a, 1]", "+U[a, 2]"]))).passed());
        assert!(!compare(e, &ActualOutput::Rows(rows(&["+I[a, 2]", "+U[a, 1]"]))).passed());
    }

    fn typed(lines: &[&str], types: &[&str]) -> ExpectedRows {
        let mut e = expected(lines);
        e.columns = Some(
            types
                .iter()
                .enumerate()
                .map(|(i, t)| crate::case::Column {
                    name: format!("c{i}"),
                    data_type: t.to_string(),
                })
                .collect(),
        );
        e
    }

    #[test]
    fn doubles_compare_at_flinks_printed_precision() {
        let e = typed(
            &["+I[a, 1.0E8, 0.1]"],
            &["STRING", "DOUBLE", "DOUBLE NOT NULL"],
        );
        assert!(run(e.clone(), &["+I[a, 100000000.0, 0.1]"]).passed());
        let c = run(e, &["+I[a, 1.0E8, 0.10000000000000002]"]);
        assert_eq!(c.mismatches[0].check, Check::Multiset);
        // A column not typed as floating point keeps its text, e.g. a string.
        let e = typed(&["+I[1.0E8]"], &["STRING"]);
        assert!(!run(e, &["+I[100000000.0]"]).passed());
    }

    #[test]
    fn floats_are_canonical_in_keys_and_final_tables_too() {
        let mut e = typed(
            &["+I[1.0E7, 1]", "-U[1.0E7, 1]", "+U[1.0E7, 2]"],
            &["DOUBLE", "BIGINT"],
        );
        e.key_indices = Some(vec![0]);
        assert!(run(e, &["+I[10000000.0, 1]", "-U[10000000.0, 1]", "+U[1e7, 2]"]).passed());
    }

    #[test]
    fn decimals_keep_their_scale() {
        let e = typed(&["+I[4.00]"], &["DECIMAL(10, 2)"]);
        assert!(!run(e, &["+I[4.0]"]).passed());
    }

    #[test]
    fn timestamps_compare_as_flink_prints_them() {
        let e = typed(&["+I[2020-04-15T08:00]"], &["TIMESTAMP(3)"]);
        assert!(run(e.clone(), &["+I[2020-04-15T08:00]"]).passed());
        assert!(!run(e.clone(), &["+I[2020-04-15T08:00:00]"]).passed());
        assert!(!run(e, &["+I[2020-04-15 08:00:00.000]"]).passed());
    }

    #[test]
    fn updating_results_check_changelog_and_final_table() {
        // Keys interleave freely; losing b's delete breaks b's changelog and leaves b behind.
        let e = expected(&["+I[a, 1]", "-U[a, 1]", "+U[a, 2]", "+I[b, 1]", "-D[b, 1]"]);
        assert!(run(
            e.clone(),
            &["+I[b, 1]", "+I[a, 1]", "-D[b, 1]", "-U[a, 1]", "+U[a, 2]"]
        )
        .passed());
        let c = run(e, &["+I[a, 1]", "-U[a, 1]", "+U[a, 2]", "+I[b, 1]"]);
        assert_eq!(
            c.mismatches.iter().map(|m| m.check).collect::<Vec<_>>(),
            vec![Check::Changelog, Check::FinalTable]
        );
    }
}
