//! Result schemas of queries, views and tables.

use riffle_sql::ast::DataType;

use crate::catalog::ColumnDef;

/// A time attribute: a column Flink's windows and interval joins can use as time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimeAttribute {
    /// Event time: the column a `WATERMARK` is declared on (and columns forwarded from it).
    Rowtime,
    /// Processing time: a `PROCTIME()` computed column.
    Proctime,
}

/// One column of a schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// Column name.
    pub name: String,
    /// Column type. An expression Riffle cannot type has the type `UNKNOWN`.
    pub data_type: DataType,
    /// Whether the column is a time attribute.
    pub time_attribute: Option<TimeAttribute>,
}

impl Field {
    /// A field that is not a time attribute.
    pub fn new(name: impl Into<String>, data_type: DataType) -> Self {
        Self {
            name: name.into(),
            data_type,
            time_attribute: None,
        }
    }
}

impl std::fmt::Display for Field {
    /// `name: TYPE`, with Flink's `*ROWTIME*` / `*PROCTIME*` markers for time attributes.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.name, self.data_type)?;
        match self.time_attribute {
            Some(TimeAttribute::Rowtime) => write!(f, " *ROWTIME*"),
            Some(TimeAttribute::Proctime) => write!(f, " *PROCTIME*"),
            None => Ok(()),
        }
    }
}

/// The columns a query, view or table produces, in order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Schema {
    /// The columns.
    pub columns: Vec<Field>,
}

impl Schema {
    /// A schema of the given fields.
    pub fn new(columns: Vec<Field>) -> Self {
        Self { columns }
    }

    /// The schema of the table columns that `keep` selects.
    pub fn from_columns(columns: &[ColumnDef], keep: impl Fn(&ColumnDef) -> bool) -> Self {
        Self {
            columns: columns
                .iter()
                .filter(|c| keep(c))
                .map(|c| Field {
                    name: c.name.clone(),
                    data_type: c.data_type.clone(),
                    time_attribute: c.time_attribute,
                })
                .collect(),
        }
    }

    /// A column by name.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.columns.iter().find(|f| f.name == name)
    }
}

impl std::fmt::Display for Schema {
    /// Flink's row summary: `[a: INT, b: STRING]`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[")?;
        for (i, field) in self.columns.iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{field}")?;
        }
        write!(f, "]")
    }
}
