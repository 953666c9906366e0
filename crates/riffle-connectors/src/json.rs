//! The `json` format's options (one JSON object per line).

use crate::options::Options;
use crate::text::TimestampStyle;
use crate::{ConnectorError, Result};

/// Flink's JSON format options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonOptions {
    /// `json.fail-on-missing-field` (default false: missing fields are NULL).
    pub fail_on_missing_field: bool,
    /// `json.ignore-parse-errors` (default false).
    pub ignore_parse_errors: bool,
    /// `json.timestamp-format.standard`: `SQL` (default) or `ISO-8601`.
    pub timestamp_style: TimestampStyle,
}

impl JsonOptions {
    /// Reads the `json.*` options.
    pub fn from_options(options: &mut Options) -> Result<Self> {
        let fail_on_missing_field = options.bool("json.fail-on-missing-field", false)?;
        let ignore_parse_errors = options.bool("json.ignore-parse-errors", false)?;
        if fail_on_missing_field && ignore_parse_errors {
            return Err(ConnectorError::new(
                "fail-on-missing-field and ignore-parse-errors shouldn't both be true.",
            ));
        }
        let timestamp_style = match options.get("json.timestamp-format.standard") {
            None => TimestampStyle::Sql,
            Some(v) if v.eq_ignore_ascii_case("SQL") => TimestampStyle::Sql,
            Some(v) if v.eq_ignore_ascii_case("ISO-8601") => TimestampStyle::Iso,
            Some(v) => {
                return Err(ConnectorError::new(format!(
                    "Unsupported value '{v}' for timestamp-format.standard. Supported values are [SQL, ISO-8601]."
                )))
            }
        };
        for key in [
            "json.map-null-key.mode",
            "json.map-null-key.literal",
            "json.encode.decimal-as-plain-number",
            "json.encode.ignore-null-fields",
        ] {
            options.accept(key);
        }
        Ok(Self {
            fail_on_missing_field,
            ignore_parse_errors,
            timestamp_style,
        })
    }
}
