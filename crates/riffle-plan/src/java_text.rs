//! Java's text forms of floating-point numbers (`Double.toString`, `Float.toString`), which
//! Flink uses when it prints or casts `DOUBLE` and `FLOAT` values.

/// `Double.toString(v)`.
pub fn java_double(v: f64) -> String {
    java_floating(
        v.is_nan(),
        v.is_infinite(),
        v == 0.0,
        v.is_sign_negative(),
        v.abs(),
        &format!("{v}"),
        &format!("{v:e}"),
    )
}

/// `Float.toString(v)`.
pub fn java_float(v: f32) -> String {
    java_floating(
        v.is_nan(),
        v.is_infinite(),
        v == 0.0,
        v.is_sign_negative(),
        f64::from(v.abs()),
        &format!("{v}"),
        &format!("{v:e}"),
    )
}

/// Java's floating-point rendering from Rust's shortest round-trip digits: plain notation in
/// `[1e-3, 1e7)`, otherwise `d.dddE±n`; always at least one fractional digit.
fn java_floating(
    nan: bool,
    infinite: bool,
    zero: bool,
    negative: bool,
    abs: f64,
    plain: &str,
    sci: &str,
) -> String {
    if nan {
        return "NaN".into();
    }
    if infinite {
        return if negative {
            "-Infinity".into()
        } else {
            "Infinity".into()
        };
    }
    if zero {
        return if negative {
            "-0.0".into()
        } else {
            "0.0".into()
        };
    }
    if (1e-3..1e7).contains(&abs) {
        if plain.contains('.') {
            plain.to_string()
        } else {
            format!("{plain}.0")
        }
    } else {
        let (mantissa, exponent) = sci.split_once('e').unwrap_or((sci, "0"));
        let mantissa = if mantissa.contains('.') {
            mantissa.to_string()
        } else {
            format!("{mantissa}.0")
        };
        format!("{mantissa}E{exponent}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_as_java() {
        assert_eq!(java_double(1e20), "1.0E20");
        assert_eq!(java_double(0.0001), "1.0E-4");
        assert_eq!(java_double(1.5), "1.5");
        assert_eq!(java_double(-0.0), "-0.0");
        assert_eq!(java_float(1.5), "1.5");
    }
}
