//! Option value types and Flink's rules for parsing option values from strings.

/// The type of a connector, format or configuration option value.
///
/// Values always arrive as strings (`'scan.startup.mode' = 'earliest-offset'`);
/// [`OptionType::validate`] applies the parsing rules Flink's `Configuration` uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OptionType {
    /// Any string.
    String,
    /// A single character; Java escapes such as `\t` or `\u0001` count as one character,
    /// as Flink's CSV format unescapes them before checking.
    Char,
    /// A 32-bit signed integer.
    Int,
    /// A 64-bit signed integer.
    Long,
    /// A double-precision float.
    Double,
    /// `true` or `false`, case-insensitive.
    Boolean,
    /// A duration: digits, optional spaces, optional unit label (`500ms`, `5 s`, `10min`, `1 h`,
    /// `1 d`); no unit means milliseconds.
    Duration,
    /// A memory size: digits, optional spaces, optional unit (`64mb`, `1 gb`, `512k`); no unit
    /// means bytes.
    MemorySize,
    /// One of a fixed set of values.
    Enum {
        /// The allowed values, spelled as Flink documents them.
        values: Vec<String>,
        /// Whether the value must match exactly. Flink's enum-typed options ignore case; some
        /// string options with a fixed value set (validated by the factory) do not.
        case_sensitive: bool,
    },
    /// A list of strings separated by `;` (Flink's list syntax).
    List,
    /// A map written as `k1:v1,k2:v2` (Flink's map syntax).
    Map,
}

impl OptionType {
    /// The type's name as written in the data files (`type = "duration"`).
    pub fn name(&self) -> &'static str {
        match self {
            OptionType::String => "string",
            OptionType::Char => "char",
            OptionType::Int => "int",
            OptionType::Long => "long",
            OptionType::Double => "double",
            OptionType::Boolean => "boolean",
            OptionType::Duration => "duration",
            OptionType::MemorySize => "memory-size",
            OptionType::Enum { .. } => "enum",
            OptionType::List => "list",
            OptionType::Map => "map",
        }
    }

    /// Builds a type from its data-file name; `values`/`case_sensitive` are only valid for `enum`.
    pub(crate) fn from_parts(
        name: &str,
        values: Option<Vec<String>>,
        case_sensitive: Option<bool>,
    ) -> Result<OptionType, String> {
        let ty = match name {
            "string" => OptionType::String,
            "char" => OptionType::Char,
            "int" => OptionType::Int,
            "long" => OptionType::Long,
            "double" => OptionType::Double,
            "boolean" => OptionType::Boolean,
            "duration" => OptionType::Duration,
            "memory-size" => OptionType::MemorySize,
            "list" => OptionType::List,
            "map" => OptionType::Map,
            "enum" => {
                let values = values.filter(|v| !v.is_empty()).ok_or_else(|| {
                    "`type = \"enum\"` needs a non-empty `values` list".to_string()
                })?;
                return Ok(OptionType::Enum {
                    values,
                    case_sensitive: case_sensitive.unwrap_or(false),
                });
            }
            other => return Err(format!("unknown option type `{other}`")),
        };
        if values.is_some() || case_sensitive.is_some() {
            return Err(format!(
                "`values`/`case_sensitive` are only allowed for enums, not `{name}`"
            ));
        }
        Ok(ty)
    }

    /// Builds a type from its data-file fields and checks that `default` (if any) parses as it.
    pub(crate) fn from_spec(
        name: &str,
        values: Option<Vec<String>>,
        case_sensitive: Option<bool>,
        default: Option<&str>,
    ) -> Result<OptionType, String> {
        let ty = OptionType::from_parts(name, values, case_sensitive)?;
        if let Some(default) = default {
            ty.validate(default)
                .map_err(|e| format!("default does not parse: {e}"))?;
        }
        Ok(ty)
    }

    /// Checks `value` against the type, returning a message that names what was expected.
    pub fn validate(&self, value: &str) -> Result<(), String> {
        match self {
            OptionType::String | OptionType::List => Ok(()),
            OptionType::Char => parse_char(value).map(|_| ()),
            OptionType::Int => value
                .trim()
                .parse::<i32>()
                .map(|_| ())
                .map_err(|_| format!("'{value}' is not an INT (32-bit integer)")),
            OptionType::Long => value
                .trim()
                .parse::<i64>()
                .map(|_| ())
                .map_err(|_| format!("'{value}' is not a LONG (64-bit integer)")),
            OptionType::Double => value
                .trim()
                .parse::<f64>()
                .map(|_| ())
                .map_err(|_| format!("'{value}' is not a DOUBLE")),
            OptionType::Boolean => {
                let v = value.trim();
                if v.eq_ignore_ascii_case("true") || v.eq_ignore_ascii_case("false") {
                    Ok(())
                } else {
                    Err(format!(
                        "'{value}' is not a boolean (expected 'true' or 'false')"
                    ))
                }
            }
            OptionType::Duration => parse_duration_nanos(value).map(|_| ()),
            OptionType::MemorySize => parse_memory_size(value).map(|_| ()),
            OptionType::Enum {
                values,
                case_sensitive,
            } => {
                let found = values.iter().any(|allowed| {
                    if *case_sensitive {
                        allowed == value
                    } else {
                        allowed.eq_ignore_ascii_case(value)
                    }
                });
                if found {
                    Ok(())
                } else {
                    Err(format!("'{value}' is not one of: {}", values.join(", ")))
                }
            }
            OptionType::Map => {
                let bad = value
                    .split(',')
                    .filter(|entry| !entry.trim().is_empty())
                    .find(|entry| !entry.contains(':'));
                match bad {
                    Some(entry) => Err(format!("map entry '{entry}' is not of the form key:value")),
                    None => Ok(()),
                }
            }
        }
    }
}

/// Duration unit labels Flink accepts (lower-cased), with their length in nanoseconds.
const DURATION_UNITS: &[(&[&str], u128)] = &[
    (&["d", "day", "days"], 86_400_000_000_000),
    (&["h", "hour", "hours"], 3_600_000_000_000),
    (&["m", "min", "minute", "minutes"], 60_000_000_000),
    (&["s", "sec", "secs", "second", "seconds"], 1_000_000_000),
    (
        &["ms", "milli", "millis", "millisecond", "milliseconds"],
        1_000_000,
    ),
    (
        &["µs", "micro", "micros", "microsecond", "microseconds"],
        1_000,
    ),
    (&["ns", "nano", "nanos", "nanosecond", "nanoseconds"], 1),
];

/// Splits `text` into its leading digits and the (trimmed, lower-cased) unit label after them.
fn split_number(text: &str, what: &str) -> Result<(u64, String), String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(format!("empty {what}"));
    }
    let digits_end = trimmed
        .char_indices()
        .find(|(_, c)| !c.is_ascii_digit())
        .map_or(trimmed.len(), |(i, _)| i);
    let (number, unit) = trimmed.split_at(digits_end);
    if number.is_empty() {
        return Err(format!(
            "'{text}' is not a {what}: it does not start with a number"
        ));
    }
    // Flink parses the number as a Java long, so anything past i64::MAX overflows.
    let value = number
        .parse::<i64>()
        .ok()
        .and_then(|v| u64::try_from(v).ok())
        .ok_or_else(|| format!("'{number}' cannot be represented as a 64-bit number"))?;
    Ok((value, unit.trim().to_lowercase()))
}

/// Parses a Flink duration into nanoseconds (`5 s`, `10min`, `500ms`; no unit = milliseconds).
pub fn parse_duration_nanos(text: &str) -> Result<u128, String> {
    let (value, unit) = split_number(text, "duration")?;
    if unit.is_empty() {
        return Ok(u128::from(value) * 1_000_000);
    }
    DURATION_UNITS
        .iter()
        .find(|(labels, _)| labels.contains(&unit.as_str()))
        .map(|(_, nanos)| u128::from(value) * nanos)
        .ok_or_else(|| {
            format!(
                "'{text}' is not a duration: unknown time unit '{unit}' \
                 (use d, h, min, s, ms, µs or ns, e.g. '5 s' or '10min')"
            )
        })
}

/// Memory size unit labels Flink accepts (lower-cased), with their size in bytes.
const MEMORY_UNITS: &[(&[&str], u64)] = &[
    (&["b", "bytes"], 1),
    (&["k", "kb", "kibibytes"], 1 << 10),
    (&["m", "mb", "mebibytes"], 1 << 20),
    (&["g", "gb", "gibibytes"], 1 << 30),
    (&["t", "tb", "tebibytes"], 1 << 40),
];

/// Parses a Flink memory size into bytes (`64mb`, `1 gb`; no unit = bytes).
pub fn parse_memory_size(text: &str) -> Result<u64, String> {
    let (value, unit) = split_number(text, "memory size")?;
    let multiplier = if unit.is_empty() {
        1
    } else {
        MEMORY_UNITS
            .iter()
            .find(|(labels, _)| labels.contains(&unit.as_str()))
            .map(|(_, bytes)| *bytes)
            .ok_or_else(|| {
                format!(
                    "'{text}' is not a memory size: unknown unit '{unit}' \
                     (use b, kb, mb, gb or tb, e.g. '64mb')"
                )
            })?
    };
    value
        .checked_mul(multiplier)
        .filter(|bytes| i64::try_from(*bytes).is_ok())
        .ok_or_else(|| format!("'{text}' is too large for a memory size"))
}

/// Parses a one-character option value, resolving a Java escape (`\t`, `\\`, `\u0001`).
pub fn parse_char(text: &str) -> Result<char, String> {
    let mut chars = text.chars();
    let unescaped = match (chars.next(), chars.next()) {
        (Some(c), None) => Some(c),
        (Some('\\'), Some(escape)) => {
            let rest: String = chars.collect();
            match (escape, rest.as_str()) {
                ('t', "") => Some('\t'),
                ('n', "") => Some('\n'),
                ('r', "") => Some('\r'),
                ('b', "") => Some('\u{8}'),
                ('f', "") => Some('\u{c}'),
                ('0', "") => Some('\0'),
                ('\\', "") => Some('\\'),
                ('\'', "") => Some('\''),
                ('"', "") => Some('"'),
                ('u', hex) if hex.len() == 4 => {
                    u32::from_str_radix(hex, 16).ok().and_then(char::from_u32)
                }
                _ => None,
            }
        }
        _ => None,
    };
    unescaped.ok_or_else(|| format!("'{text}' is not a single character"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_follow_flink_labels() {
        assert_eq!(parse_duration_nanos("500ms"), Ok(500_000_000));
        assert_eq!(parse_duration_nanos("5 s"), Ok(5_000_000_000));
        assert_eq!(parse_duration_nanos("10min"), Ok(600_000_000_000));
        assert_eq!(parse_duration_nanos("1h"), Ok(3_600_000_000_000));
        assert_eq!(parse_duration_nanos(" 1 d "), Ok(86_400_000_000_000));
        assert_eq!(parse_duration_nanos("2 Seconds"), Ok(2_000_000_000));
        assert_eq!(parse_duration_nanos("100"), Ok(100_000_000));
        assert!(parse_duration_nanos("").is_err());
        assert!(parse_duration_nanos("s").is_err());
        assert!(parse_duration_nanos("1.5s").is_err());
        assert!(parse_duration_nanos("-1s").is_err());
        assert!(parse_duration_nanos("5 weeks").is_err());
        assert!(parse_duration_nanos("99999999999999999999ms").is_err());
    }

    #[test]
    fn memory_sizes_follow_flink_units() {
        assert_eq!(parse_memory_size("64mb"), Ok(64 << 20));
        assert_eq!(parse_memory_size("1 GB"), Ok(1 << 30));
        assert_eq!(parse_memory_size("512k"), Ok(512 << 10));
        assert_eq!(parse_memory_size("100"), Ok(100));
        assert!(parse_memory_size("64 mib").is_err());
        assert!(parse_memory_size("mb").is_err());
        assert!(parse_memory_size("9000000000 tb").is_err());
    }

    #[test]
    fn scalar_types_validate() {
        assert!(OptionType::Boolean.validate("TRUE").is_ok());
        assert!(OptionType::Boolean.validate("yes").is_err());
        assert!(OptionType::Int.validate("42").is_ok());
        assert!(OptionType::Int.validate("4294967296").is_err());
        assert!(OptionType::Long.validate("4294967296").is_ok());
        assert!(OptionType::Double.validate("0.5").is_ok());
        assert!(OptionType::Double.validate("half").is_err());
        assert!(OptionType::Map.validate("a:1,b:2").is_ok());
        assert!(OptionType::Map.validate("a=1").is_err());
    }

    #[test]
    fn chars_accept_java_escapes() {
        assert_eq!(parse_char(","), Ok(','));
        assert_eq!(parse_char("\\t"), Ok('\t'));
        assert_eq!(parse_char("\\u0001"), Ok('\u{1}'));
        assert!(parse_char("ab").is_err());
        assert!(parse_char("").is_err());
        assert!(parse_char("\\q").is_err());
    }

    #[test]
    fn enums_respect_case_sensitivity() {
        let loose = OptionType::Enum {
            values: vec!["earliest-offset".into()],
            case_sensitive: false,
        };
        assert!(loose.validate("EARLIEST-OFFSET").is_ok());
        assert!(loose.validate("earliest").is_err());
        let strict = OptionType::Enum {
            values: vec!["SQL".into()],
            case_sensitive: true,
        };
        assert!(strict.validate("sql").is_err());
        assert!(strict.validate("SQL").is_ok());
    }

    #[test]
    fn from_parts_checks_enum_fields() {
        assert!(OptionType::from_parts("enum", None, None).is_err());
        assert!(OptionType::from_parts("string", Some(vec!["a".into()]), None).is_err());
        assert!(OptionType::from_parts("bogus", None, None).is_err());
        assert_eq!(
            OptionType::from_parts("memory-size", None, None),
            Ok(OptionType::MemorySize)
        );
    }
}
