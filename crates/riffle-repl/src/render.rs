//! Text rendering of results: Flink SQL client's `tableau` layout (a boxed table whose rows
//! arrive one at a time, so column widths come from the column types), and `changelog` lines.

use riffle_session::{QueryColumn, ResultRow};

/// Widest a column gets; longer values are cut with `...`.
const MAX_WIDTH: usize = 30;

/// How NULL shows in a table.
pub const NULL: &str = "<NULL>";

/// Column widths of a boxed table, and the rendering of its lines.
pub struct TableLayout {
    widths: Vec<usize>,
}

impl TableLayout {
    /// Widths for a live result: from each column's type and name (`op` column first when
    /// `with_op`).
    pub fn for_columns(columns: &[QueryColumn], with_op: bool) -> Self {
        let mut widths: Vec<usize> = columns
            .iter()
            .map(|c| type_width(&c.data_type).max(c.name.chars().count()))
            .collect();
        if with_op {
            widths.insert(0, 2);
        }
        Self { widths }
    }

    /// Widths fitting every cell of a finished table.
    pub fn fitting(header: &[String], rows: &[Vec<String>]) -> Self {
        let widths = header
            .iter()
            .enumerate()
            .map(|(i, h)| {
                rows.iter()
                    .filter_map(|r| r.get(i))
                    .map(|v| v.chars().count())
                    .chain(std::iter::once(h.chars().count()))
                    .max()
                    .unwrap_or(0)
                    .min(MAX_WIDTH * 2)
            })
            .collect();
        Self { widths }
    }

    /// `+----+------+`
    pub fn border(&self) -> String {
        let mut line = String::from("+");
        for w in &self.widths {
            line.push_str(&"-".repeat(w + 2));
            line.push('+');
        }
        line
    }

    /// `| a | b |`, values right-aligned and cut to their column's width.
    pub fn row<S: AsRef<str>>(&self, cells: &[S]) -> String {
        let mut line = String::from("|");
        for (cell, width) in cells.iter().zip(&self.widths) {
            line.push_str(&format!(" {:>width$} |", cut(cell.as_ref(), *width)));
        }
        line
    }

    /// Border, header, border: the top of a table.
    pub fn header<S: AsRef<str>>(&self, names: &[S]) -> String {
        format!("{}\n{}\n{}", self.border(), self.row(names), self.border())
    }
}

/// A result row's cells for a table: the `op` column first when `with_op`, NULL as `<NULL>`.
pub fn cells(row: &ResultRow, with_op: bool) -> Vec<String> {
    let mut cells = Vec::with_capacity(row.values.len() + 1);
    if with_op {
        cells.push(row.kind.short().to_string());
    }
    cells.extend(
        row.values
            .iter()
            .map(|v| v.clone().unwrap_or_else(|| NULL.to_string())),
    );
    cells
}

/// A change as Flink prints it: `+U[a, 2]` (NULL as `null`).
pub fn changelog_line(row: &ResultRow) -> String {
    let values: Vec<&str> = row
        .values
        .iter()
        .map(|v| v.as_deref().unwrap_or("null"))
        .collect();
    format!("{}[{}]", row.kind.short(), values.join(", "))
}

/// The display width a column of Flink type `data_type` gets in a live table.
fn type_width(data_type: &str) -> usize {
    let ty = data_type.trim_end_matches(" NOT NULL");
    let base = ty.split('(').next().unwrap_or(ty).trim();
    let precision = || {
        ty.split_once('(')
            .and_then(|(_, rest)| rest.split([',', ')']).next())
            .and_then(|p| p.trim().parse::<usize>().ok())
    };
    let width = match base {
        "BOOLEAN" => 5,
        "TINYINT" => 4,
        "SMALLINT" => 6,
        "INT" | "INTEGER" => 11,
        "BIGINT" => 20,
        "FLOAT" | "DOUBLE" => 20,
        "DECIMAL" => precision().map_or(20, |p| p + 2),
        "DATE" => 10,
        "TIME" => 12,
        "TIMESTAMP" | "TIMESTAMP_LTZ" => 20 + precision().unwrap_or(6),
        "CHAR" | "VARCHAR" => precision().unwrap_or(MAX_WIDTH),
        _ => MAX_WIDTH,
    };
    width.clamp(NULL.len(), MAX_WIDTH)
}

/// `text` cut to `width` characters, ending with `...` when cut.
fn cut(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let kept: String = text.chars().take(width.saturating_sub(3)).collect();
    format!("{kept}...")
}

#[cfg(test)]
mod tests {
    use super::*;
    use riffle_session::RowKind;

    fn column(name: &str, data_type: &str) -> QueryColumn {
        QueryColumn {
            name: name.to_string(),
            data_type: data_type.to_string(),
        }
    }

    #[test]
    fn tableau_rows_are_aligned_under_typed_widths() {
        let layout =
            TableLayout::for_columns(&[column("name", "STRING"), column("n", "INT")], true);
        let row = ResultRow {
            kind: RowKind::UpdateAfter,
            values: vec![Some("alice".into()), None],
        };
        assert_eq!(
            layout.header(&["op", "name", "n"]),
            "+----+--------------------------------+-------------+\n\
             | op |                           name |           n |\n\
             +----+--------------------------------+-------------+"
        );
        assert_eq!(
            layout.row(&cells(&row, true)),
            "| +U |                          alice |      <NULL> |"
        );
        assert_eq!(changelog_line(&row), "+U[alice, null]");
    }

    #[test]
    fn long_values_are_cut() {
        let layout = TableLayout::for_columns(&[column("c", "CHAR(6)")], false);
        assert_eq!(layout.row(&["abcdefgh"]), "| abc... |");
    }
}
