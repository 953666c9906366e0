//! `rsqldb.toml`: the rsqlDB dialect beyond its rocketmq option keys.

use serde::Deserialize;

use super::require_option;
use crate::Dialects;

/// The whole file (see its comments for the meaning of each field).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RsqldbMapping {
    /// The unquoted key naming an rsqlDB table's connector (`type`).
    pub type_key: String,
    /// The key saying whether bodies are JSON (`isJsonData`).
    pub json_key: String,
    /// Its default value.
    pub json_default: String,
    /// The format of JSON bodies.
    pub json_format: String,
    /// The format of non-JSON bodies read by a single column.
    pub single_column_format: String,
    /// The format of non-JSON bodies read by several columns.
    pub delimited_format: String,
    /// The option of `delimited_format` holding the field delimiter.
    pub delimited_format_delimiter_option: String,
    /// rsqlDB's field delimiter key.
    pub field_delimiter_key: String,
    /// The watermark function taking an offset in milliseconds (`withOffset`).
    pub watermark_function: String,
    /// The metadata key a header column reads, with `{column}` for the column's name.
    pub header_metadata_key: String,
    /// The type a bare-TIMESTAMP rowtime column gets.
    pub rowtime_type: String,
}

impl RsqldbMapping {
    /// The metadata key of a header column.
    pub fn header_key(&self, column: &str) -> String {
        self.header_metadata_key.replace("{column}", column)
    }

    pub(crate) fn check(&self, dialects: &Dialects) -> Result<(), String> {
        for key in [&self.type_key, &self.json_key, &self.field_delimiter_key] {
            require_option(dialects, "rocketmq", key)?;
        }
        for format in [
            &self.json_format,
            &self.single_column_format,
            &self.delimited_format,
        ] {
            if dialects.format(format).is_none() {
                return Err(format!("no format `{format}`"));
            }
        }
        let delimited = dialects
            .format(&self.delimited_format)
            .ok_or_else(|| format!("no format `{}`", self.delimited_format))?;
        if !delimited
            .options
            .iter()
            .any(|o| o.key == self.delimited_format_delimiter_option)
        {
            return Err(format!(
                "`{}` is not an option of format `{}`",
                self.delimited_format_delimiter_option, self.delimited_format
            ));
        }
        if !self.header_metadata_key.contains("{column}") {
            return Err("`header_metadata_key` lacks `{column}`".to_string());
        }
        if dialects.function(&self.watermark_function).is_some() {
            return Err(format!(
                "`{}` is a Flink function, not rsqlDB's watermark function",
                self.watermark_function
            ));
        }
        let precision = self
            .rowtime_type
            .strip_prefix("TIMESTAMP(")
            .and_then(|rest| rest.strip_suffix(')'))
            .and_then(|p| p.parse::<u8>().ok());
        match precision {
            Some(0..=3) => Ok(()),
            _ => Err(format!(
                "`{}` is not a rowtime type (TIMESTAMP(0) to TIMESTAMP(3))",
                self.rowtime_type
            )),
        }
    }
}
