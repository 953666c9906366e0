//! Java's text rendering of numbers (`Double.toString`, `Float.toString`,
//! `BigDecimal.toString`), which Flink's printing and its JSON functions produce.

use std::fmt::Write;

/// `BigDecimal.toString()` of `unscaled × 10^-scale`.
pub fn java_big_decimal(unscaled: i128, scale: i8) -> String {
    big_decimal(
        unscaled < 0,
        &unscaled.unsigned_abs().to_string(),
        i64::from(scale),
    )
}

/// `BigDecimal.toString()` of `±digits × 10^-scale` (`digits`: decimal digits without leading
/// zeros, or `"0"`), for values beyond `i128`.
pub fn big_decimal(negative: bool, digits: &str, scale: i64) -> String {
    let adjusted = -scale + (digits.len() as i64 - 1);
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    if scale == 0 {
        out.push_str(digits);
    } else if scale > 0 && adjusted >= -6 {
        let len = digits.len() as i64;
        if len > scale {
            let (int, frac) = digits.split_at((len - scale) as usize);
            out.push_str(int);
            out.push('.');
            out.push_str(frac);
        } else {
            out.push_str("0.");
            for _ in 0..(scale - len) {
                out.push('0');
            }
            out.push_str(digits);
        }
    } else {
        let (first, rest) = digits.split_at(1);
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        out.push('E');
        if adjusted >= 0 {
            out.push('+');
        }
        let _ = write!(out, "{adjusted}");
    }
    out
}

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
    fn doubles_print_like_java() {
        assert_eq!(java_double(1e10), "1.0E10");
        assert_eq!(java_double(0.1), "0.1");
        assert_eq!(java_double(100.0), "100.0");
        assert_eq!(java_double(1234567.5), "1234567.5");
        assert_eq!(java_double(1.5e-5), "1.5E-5");
        assert_eq!(java_double(-2.0), "-2.0");
        assert_eq!(java_double(f64::NAN), "NaN");
        assert_eq!(java_float(2.5), "2.5");
    }

    #[test]
    fn decimals_keep_their_scale() {
        assert_eq!(java_big_decimal(400, 2), "4.00");
        assert_eq!(java_big_decimal(-5, 3), "-0.005");
        assert_eq!(java_big_decimal(12, 0), "12");
        assert_eq!(java_big_decimal(1, 8), "1E-8");
        assert_eq!(java_big_decimal(0, 2), "0.00");
    }
}
