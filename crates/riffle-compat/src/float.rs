//! DOUBLE and FLOAT values compared at the precision Flink printed them.
//!
//! Flink prints floating-point values with Java's `Double.toString` / `Float.toString`: enough
//! digits to identify the value, in plain notation for magnitudes in [10^-3, 10^7) and
//! `d.dddE±n` otherwise. Before Java 19 those methods sometimes print more digits than needed
//! (JDK-4511638; Flink 2.3 runs on Java 17), and other engines print the same value differently
//! (`100000000.0`, `1e8`). Comparing the printed
//! text would fail such pairs although they hold the same value, so both sides are rewritten to
//! one canonical text: the shortest digits that identify the value (at the column's width),
//! laid out the way Java lays them out. Values that do not parse (`NaN`, `Infinity`, or text of
//! a mistyped column) stay as they are.

use crate::case::Column;

/// The width of a floating-point column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FloatWidth {
    /// `DOUBLE` (Java `double`).
    Double,
    /// `FLOAT` (Java `float`).
    Float,
}

/// For each column, its floating-point width, or `None` for other types.
pub(crate) fn float_columns(columns: &[Column]) -> Vec<Option<FloatWidth>> {
    columns
        .iter()
        .map(|c| {
            let ty = c.data_type.trim_start();
            let word = ty
                .split(|ch: char| !ch.is_ascii_alphanumeric())
                .next()
                .unwrap_or_default();
            match word {
                "DOUBLE" => Some(FloatWidth::Double),
                "FLOAT" => Some(FloatWidth::Float),
                _ => None,
            }
        })
        .collect()
}

/// The canonical printed form of a floating-point value (see the module docs).
pub(crate) fn canonical(text: &str, width: FloatWidth) -> String {
    if !text.contains(|c: char| c.is_ascii_digit()) {
        return text.to_string(); // NaN, Infinity, -Infinity, null, or not a number at all
    }
    let scientific = match width {
        FloatWidth::Double => text.parse::<f64>().ok().map(|v| format!("{v:e}")),
        FloatWidth::Float => text.parse::<f32>().ok().map(|v| format!("{v:e}")),
    };
    match scientific {
        Some(s) => java_layout(&s).unwrap_or_else(|| text.to_string()),
        None => text.to_string(),
    }
}

/// Lays out Rust's shortest scientific form (`-1.2345e3`) as Java prints it (`-1234.5`).
fn java_layout(scientific: &str) -> Option<String> {
    let (sign, rest) = match scientific.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", scientific),
    };
    let (mantissa, exponent) = rest.split_once('e')?;
    let exponent: i32 = exponent.parse().ok()?;
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if digits.chars().all(|c| c == '0') {
        return Some(format!("{sign}0.0"));
    }
    let text = if (-3..7).contains(&exponent) {
        if exponent >= 0 {
            let int_len = exponent as usize + 1;
            let padded = format!("{digits:0<int_len$}");
            let (int, frac) = padded.split_at(int_len);
            format!("{int}.{}", if frac.is_empty() { "0" } else { frac })
        } else {
            let zeros = "0".repeat((-exponent - 1) as usize);
            format!("0.{zeros}{digits}")
        }
    } else {
        let (first, frac) = digits.split_at(1);
        format!(
            "{first}.{}E{exponent}",
            if frac.is_empty() { "0" } else { frac }
        )
    };
    Some(format!("{sign}{text}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn double(text: &str) -> String {
        canonical(text, FloatWidth::Double)
    }

    #[test]
    fn java_printed_values_stay_as_they_are() {
        for text in [
            "1.0",
            "-1.5",
            "0.001",
            "1234567.0",
            "1.0E7",
            "1.0E-4",
            "1.2345E-7",
            "-0.0",
            "0.0",
            "NaN",
            "Infinity",
            "-Infinity",
            "0.30000000000000004",
            "1.7976931348623157E308",
        ] {
            assert_eq!(double(text), text);
        }
    }

    #[test]
    fn other_spellings_of_the_same_value_agree() {
        assert_eq!(double("100000000.0"), "1.0E8");
        assert_eq!(double("1e8"), "1.0E8");
        assert_eq!(double("0.00010"), "1.0E-4");
        assert_eq!(double("2.50"), "2.5");
        // Java before 19 may print more digits than needed; the value is the same.
        assert_eq!(double("2.0000000000000000E23"), double("2.0E23"));
    }

    #[test]
    fn different_values_stay_different() {
        assert_ne!(double("0.1"), double("0.10000000000000002"));
        assert_ne!(double("0.0"), double("-0.0"));
    }

    #[test]
    fn float_columns_use_float_precision() {
        // 0.1f widened to double prints 0.10000000149011612; as a FLOAT it is 0.1.
        assert_eq!(canonical("0.10000000149011612", FloatWidth::Float), "0.1");
        assert_eq!(canonical("3.4028235E38", FloatWidth::Float), "3.4028235E38");
    }

    #[test]
    fn recognises_float_column_types() {
        let col = |t: &str| Column {
            name: "c".into(),
            data_type: t.into(),
        };
        assert_eq!(
            float_columns(&[
                col("DOUBLE"),
                col("FLOAT NOT NULL"),
                col("DECIMAL(10, 2)"),
                col("ARRAY<DOUBLE>")
            ]),
            vec![
                Some(FloatWidth::Double),
                Some(FloatWidth::Float),
                None,
                None
            ]
        );
    }
}
