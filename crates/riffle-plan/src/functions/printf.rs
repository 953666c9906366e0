//! `PRINTF(format, args...)`: Java's `Formatter` (Locale.US) over Flink's internal values, NULL
//! when formatting fails (e.g. `%f` of a DECIMAL, whose internal value is not a Java number).
//! Conversions `%s %S %b %B %d %x %X %o %f %e %E %n %%` with flags `-#+ 0,(`, width, precision
//! and argument indexes (`%2$s`).

use arrow::datatypes::DataType;
use datafusion::common::ScalarValue;

use super::row::{text, Arg, RowFunction};
use crate::java_text::{java_big_decimal, java_double, java_float};

/// `printf`.
pub(super) fn row_functions() -> Vec<RowFunction> {
    vec![
        RowFunction::new("printf", &[&[Arg::Str]], DataType::Utf8, |v| {
            let Some(format) = text(&v[0]) else {
                return Ok(ScalarValue::Utf8(None));
            };
            Ok(ScalarValue::Utf8(printf(format, &v[1..])))
        })
        .variadic(Arg::Any)
        .lenient(),
    ]
}

/// One `%...` specifier.
#[derive(Default)]
struct Spec {
    index: Option<usize>,
    flags: String,
    width: Option<usize>,
    precision: Option<usize>,
    conversion: char,
}

/// The formatted text, or None where Java's `Formatter` throws.
fn printf(format: &str, args: &[ScalarValue]) -> Option<String> {
    let chars: Vec<char> = format.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    let mut next_arg = 0;
    while i < chars.len() {
        if chars[i] != '%' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let (spec, end) = parse_spec(&chars, i + 1)?;
        i = end;
        match spec.conversion {
            '%' => out.push_str(&pad(&spec, "%".into())),
            'n' => out.push('\n'),
            _ => {
                let arg = match spec.index {
                    Some(n) => args.get(n.checked_sub(1)?)?,
                    None => {
                        next_arg += 1;
                        args.get(next_arg - 1)?
                    }
                };
                out.push_str(&convert(&spec, arg)?);
            }
        }
    }
    Some(out)
}

fn parse_spec(chars: &[char], mut i: usize) -> Option<(Spec, usize)> {
    let mut spec = Spec::default();
    let digits = |i: &mut usize| -> Option<usize> {
        let start = *i;
        while *i < chars.len() && chars[*i].is_ascii_digit() {
            *i += 1;
        }
        (*i > start).then(|| chars[start..*i].iter().collect::<String>().parse().ok())?
    };
    // An argument index is digits followed by '$'.
    let save = i;
    if let Some(n) = digits(&mut i) {
        if chars.get(i) == Some(&'$') {
            spec.index = Some(n);
            i += 1;
        } else {
            i = save;
        }
    }
    while let Some(&c) = chars.get(i) {
        if "-#+ 0,(".contains(c) {
            spec.flags.push(c);
            i += 1;
        } else {
            break;
        }
    }
    spec.width = digits(&mut i);
    if chars.get(i) == Some(&'.') {
        i += 1;
        spec.precision = Some(digits(&mut i)?);
    }
    spec.conversion = *chars.get(i)?;
    Some((spec, i + 1))
}

fn pad(spec: &Spec, body: String) -> String {
    let Some(width) = spec.width else {
        return body;
    };
    let len = body.chars().count();
    if len >= width {
        return body;
    }
    let fill = " ".repeat(width - len);
    if spec.flags.contains('-') {
        body + &fill
    } else {
        fill + &body
    }
}

fn convert(spec: &Spec, arg: &ScalarValue) -> Option<String> {
    let upper = spec.conversion.is_ascii_uppercase();
    let body = match spec.conversion.to_ascii_lowercase() {
        'b' => {
            let b = match arg {
                ScalarValue::Boolean(Some(b)) => *b,
                v => !v.is_null(),
            };
            truncate(spec, b.to_string())
        }
        's' => truncate(spec, display(arg)?),
        'd' => return integer(spec, arg),
        'x' | 'o' => {
            let (v, bits) = integer_bits(arg)?;
            let Some(v) = v else {
                return Some(pad(spec, "null".into()));
            };
            let unsigned = (v as u64)
                & if bits == 64 {
                    u64::MAX
                } else {
                    (1u64 << bits) - 1
                };
            let (digits, prefix) = if spec.conversion.eq_ignore_ascii_case(&'x') {
                (format!("{unsigned:x}"), "0x")
            } else {
                (format!("{unsigned:o}"), "0")
            };
            let prefix = if spec.flags.contains('#') { prefix } else { "" };
            let body = zero_pad(spec, prefix, &digits);
            if upper {
                body.to_uppercase()
            } else {
                body
            }
        }
        'f' | 'e' => return floating(spec, arg),
        _ => return None,
    };
    let body = if upper { body.to_uppercase() } else { body };
    Some(pad(spec, body))
}

fn truncate(spec: &Spec, s: String) -> String {
    match spec.precision {
        Some(p) => s.chars().take(p).collect(),
        None => s,
    }
}

/// `String.valueOf` of Flink's internal value.
fn display(v: &ScalarValue) -> Option<String> {
    if v.is_null() {
        return Some("null".into());
    }
    Some(match v {
        ScalarValue::Utf8(Some(s))
        | ScalarValue::LargeUtf8(Some(s))
        | ScalarValue::Utf8View(Some(s)) => s.clone(),
        ScalarValue::Boolean(Some(b)) => b.to_string(),
        ScalarValue::Int8(Some(i)) => i.to_string(),
        ScalarValue::Int16(Some(i)) => i.to_string(),
        ScalarValue::Int32(Some(i)) => i.to_string(),
        ScalarValue::Int64(Some(i)) => i.to_string(),
        ScalarValue::Float32(Some(f)) => java_float(*f),
        ScalarValue::Float64(Some(f)) => java_double(*f),
        ScalarValue::Decimal128(Some(u), _, s) => java_big_decimal(*u, *s),
        _ => return None,
    })
}

/// An integer argument and its Java type's width in bits (`None` value: NULL).
fn integer_bits(v: &ScalarValue) -> Option<(Option<i64>, u32)> {
    Some(match v {
        ScalarValue::Int8(i) => (i.map(i64::from), 8),
        ScalarValue::Int16(i) => (i.map(i64::from), 16),
        ScalarValue::Int32(i) => (i.map(i64::from), 32),
        ScalarValue::Int64(i) => (*i, 64),
        ScalarValue::Null => (None, 32),
        _ => return None,
    })
}

fn integer(spec: &Spec, arg: &ScalarValue) -> Option<String> {
    let (v, _) = integer_bits(arg)?;
    let Some(v) = v else {
        return Some(pad(spec, "null".into()));
    };
    let mut digits = v.unsigned_abs().to_string();
    if spec.flags.contains(',') {
        digits = group(&digits);
    }
    Some(signed(spec, v < 0, &digits))
}

/// Sign, parentheses and zero padding of a formatted number.
fn signed(spec: &Spec, negative: bool, digits: &str) -> String {
    let (prefix, suffix) = match (negative, spec.flags.contains('(')) {
        (true, true) => ("(", ")"),
        (true, false) => ("-", ""),
        (false, _) if spec.flags.contains('+') => ("+", ""),
        (false, _) if spec.flags.contains(' ') => (" ", ""),
        _ => ("", ""),
    };
    let body = zero_pad(spec, prefix, &format!("{digits}{suffix}"));
    pad(spec, body)
}

fn zero_pad(spec: &Spec, prefix: &str, digits: &str) -> String {
    match spec.width {
        Some(w) if spec.flags.contains('0') && prefix.len() + digits.len() < w => {
            format!(
                "{prefix}{}{digits}",
                "0".repeat(w - prefix.len() - digits.len())
            )
        }
        _ => format!("{prefix}{digits}"),
    }
}

/// `1234567` → `1,234,567`.
fn group(digits: &str) -> String {
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `%f` / `%e` of a DOUBLE or FLOAT: Java rounds the shortest decimal form half-up.
fn floating(spec: &Spec, arg: &ScalarValue) -> Option<String> {
    let v = match arg {
        ScalarValue::Float64(v) => *v,
        ScalarValue::Float32(v) => v.map(f64::from),
        ScalarValue::Null => None,
        _ => return None,
    };
    let Some(v) = v else {
        return Some(pad(spec, "null".into()));
    };
    if !v.is_finite() {
        let s = if v.is_nan() {
            "NaN"
        } else if v > 0.0 {
            "Infinity"
        } else {
            "-Infinity"
        };
        return Some(pad(spec, s.into()));
    }
    let precision = spec.precision.unwrap_or(6);
    // Shortest round-trip digits and decimal exponent: v = 0.d1d2... × 10^exp.
    let sci = format!("{:e}", v.abs());
    let (mantissa, exponent) = sci.split_once('e')?;
    let exponent: i64 = exponent.parse().ok()?;
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let negative = v.is_sign_negative() && v != 0.0;
    let body = if spec.conversion.eq_ignore_ascii_case(&'e') {
        let (d, e) = round_half_up(&digits, exponent + 1, 1 + precision as i64);
        let (int, frac) = d.split_at(1);
        let mut s = int.to_string();
        if precision > 0 {
            s.push('.');
            s.push_str(frac);
        }
        let e = e - 1;
        s.push_str(&format!("e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs()));
        if spec.conversion == 'E' {
            s = s.to_uppercase();
        }
        s
    } else {
        let keep = exponent + 1 + precision as i64;
        let (d, e) = round_half_up(&digits, exponent + 1, keep);
        let int_len = e.max(0) as usize;
        let all = if e < 0 {
            format!("{}{d}", "0".repeat((-e) as usize))
        } else {
            d
        };
        let all = format!("{all:0<width$}", width = int_len + precision);
        let (int, frac) = all.split_at(int_len.min(all.len()));
        let int = if int.is_empty() {
            "0".to_string()
        } else {
            int.to_string()
        };
        let int = if spec.flags.contains(',') {
            group(&int)
        } else {
            int
        };
        if precision > 0 {
            format!("{int}.{frac}")
        } else {
            int
        }
    };
    Some(signed(spec, negative, &body))
}

/// Rounds the digits of `0.digits × 10^point` half-up to `keep` significant digits (counted
/// from the digits' start); returns the digits (exactly `keep` of them, at least 0) and the new
/// decimal point position.
fn round_half_up(digits: &str, point: i64, keep: i64) -> (String, i64) {
    let mut d: Vec<u8> = digits.bytes().map(|b| b - b'0').collect();
    if keep < 0 {
        return (String::new(), point);
    }
    let keep = keep as usize;
    let mut point = point;
    if d.len() > keep {
        let round_up = d[keep] >= 5;
        d.truncate(keep);
        if round_up {
            let mut i = d.len();
            loop {
                if i == 0 {
                    d.insert(0, 1);
                    point += 1;
                    d.pop();
                    break;
                }
                i -= 1;
                if d[i] == 9 {
                    d[i] = 0;
                } else {
                    d[i] += 1;
                    break;
                }
            }
            if keep == 0 {
                d = vec![1];
                point += 1;
            }
        }
    }
    while d.len() < keep {
        d.push(0);
    }
    (d.iter().map(|b| char::from(b'0' + b)).collect(), point)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(format: &str, args: &[ScalarValue]) -> Option<String> {
        printf(format, args)
    }

    #[test]
    fn formats_like_java() {
        assert_eq!(
            f("%x", &[ScalarValue::Int32(Some(255))]).as_deref(),
            Some("ff")
        );
        assert_eq!(
            f("%10s|", &[ScalarValue::Utf8(Some("right".into()))]).as_deref(),
            Some("     right|")
        );
        assert_eq!(
            f("%05d", &[ScalarValue::Int32(Some(42))]).as_deref(),
            Some("00042")
        );
        assert_eq!(
            f("%.2f", &[ScalarValue::Float64(Some(1.23456))]).as_deref(),
            Some("1.23")
        );
        assert_eq!(
            f("%.2f", &[ScalarValue::Float64(Some(0.125))]).as_deref(),
            Some("0.13")
        );
        assert_eq!(
            f("%.1f", &[ScalarValue::Float64(Some(9.96))]).as_deref(),
            Some("10.0")
        );
        assert_eq!(
            f("%.0f", &[ScalarValue::Float64(Some(0.4))]).as_deref(),
            Some("0")
        );
        assert_eq!(
            f("%,d", &[ScalarValue::Int64(Some(-1234567))]).as_deref(),
            Some("-1,234,567")
        );
        assert_eq!(
            f("%.3e", &[ScalarValue::Float64(Some(12345.678))]).as_deref(),
            Some("1.235e+04")
        );
        assert_eq!(f("%.2f", &[ScalarValue::Decimal128(Some(314), 3, 2)]), None);
        assert_eq!(
            f("%x", &[ScalarValue::Int32(Some(-1))]).as_deref(),
            Some("ffffffff")
        );
        assert_eq!(f("%d", &[]), None);
    }
}
