//! Python's `repr` of JSON values: ADK shows other agents' tool calls and results to the model as
//! `str(dict)`, so the text must be byte-identical to what Python prints.

use std::fmt::Write as _;

use serde_json::{Map, Number, Value};

/// `repr(value)` as Python prints the value `json.loads` would have made.
pub(crate) fn repr(value: &Value) -> String {
    let mut out = String::new();
    write(&mut out, value, Style::Repr);
    out
}

/// `json.dumps(value, ensure_ascii=False)` as Python writes it: `", "` and `": "` between items,
/// floats as Python prints them.
pub(crate) fn json_dumps(value: &Value) -> String {
    let mut out = String::new();
    write(&mut out, value, Style::Json);
    out
}

/// `str(dict)` of a JSON object.
pub(crate) fn repr_map(map: &Map<String, Value>) -> String {
    let mut out = String::new();
    write_entries(&mut out, map.iter(), Style::Repr);
    out
}

/// `str(dict(sorted(map.items())))`: the keys sorted at the top level only (byte order is
/// Python's code point order).
pub(crate) fn repr_sorted(map: &Map<String, Value>) -> String {
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    let mut out = String::new();
    write_entries(&mut out, entries.into_iter(), Style::Repr);
    out
}

/// Python's `repr` or its `json.dumps`: the same layout, different spellings.
#[derive(Clone, Copy, PartialEq)]
enum Style {
    Repr,
    Json,
}

fn write(out: &mut String, value: &Value, style: Style) {
    let json = style == Style::Json;
    match value {
        Value::Null => out.push_str(if json { "null" } else { "None" }),
        Value::Bool(b) => out.push_str(match (b, json) {
            (true, true) => "true",
            (false, true) => "false",
            (true, false) => "True",
            (false, false) => "False",
        }),
        Value::Number(n) if json => match n.as_f64().filter(|_| !(n.is_i64() || n.is_u64())) {
            Some(f) if f.is_nan() => out.push_str("NaN"),
            Some(f) if f.is_infinite() => out.push_str(if f > 0.0 { "Infinity" } else { "-Infinity" }),
            _ => write_number(out, n),
        },
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_text(out, s, style),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write(out, item, style);
            }
            out.push(']');
        }
        Value::Object(map) => write_entries(out, map.iter(), style),
    }
}

fn write_entries<'a>(out: &mut String, entries: impl Iterator<Item = (&'a String, &'a Value)>, style: Style) {
    out.push('{');
    for (i, (key, value)) in entries.enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_text(out, key, style);
        out.push_str(": ");
        write(out, value, style);
    }
    out.push('}');
}

fn write_text(out: &mut String, text: &str, style: Style) {
    match style {
        Style::Repr => write_str(out, text),
        // serde_json escapes as json.dumps(ensure_ascii=False) does.
        Style::Json => out.push_str(&serde_json::to_string(text).unwrap_or_default()),
    }
}

fn write_number(out: &mut String, n: &Number) {
    if n.is_i64() || n.is_u64() {
        let _ = write!(out, "{n}");
        return;
    }
    let Some(f) = n.as_f64() else {
        let _ = write!(out, "{n}");
        return;
    };
    write_float(out, f);
}

/// Python's float repr: the shortest digits that round-trip, positional for exponents from -4 to
/// 15, scientific (`1e+16`, `1.5e-07`) outside.
fn write_float(out: &mut String, f: f64) {
    if f.is_nan() {
        out.push_str("nan");
        return;
    }
    if f.is_infinite() {
        out.push_str(if f > 0.0 { "inf" } else { "-inf" });
        return;
    }
    // Rust's `{:e}` prints the shortest round-trip digits: `-1.5e-7`.
    let sci = format!("{f:e}");
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let (sign, mantissa) = mantissa.strip_prefix('-').map_or(("", mantissa), |m| ("-", m));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    out.push_str(sign);
    if (-4..16).contains(&exponent) {
        let point = exponent + 1;
        if point <= 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', point.unsigned_abs() as usize));
            out.push_str(&digits);
        } else {
            let point = point as usize;
            if digits.len() <= point {
                out.push_str(&digits);
                out.extend(std::iter::repeat_n('0', point - digits.len()));
                out.push_str(".0");
            } else {
                out.push_str(&digits[..point]);
                out.push('.');
                out.push_str(&digits[point..]);
            }
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let _ = write!(out, "e{}{:02}", if exponent < 0 { '-' } else { '+' }, exponent.unsigned_abs());
    }
}

/// Python's `repr(str)`: single quotes unless the text holds `'` and no `"`.
fn write_str(out: &mut String, s: &str) {
    let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if !printable(c) => {
                let code = u32::from(c);
                let _ = match code {
                    0..=0xff => write!(out, "\\x{code:02x}"),
                    0x100..=0xffff => write!(out, "\\u{code:04x}"),
                    _ => write!(out, "\\U{code:08x}"),
                };
            }
            c => out.push(c),
        }
    }
    out.push(quote);
}

/// Python's `str.isprintable` for one character: not a control, format, surrogate, private-use,
/// unassigned or separator character other than the space.
fn printable(c: char) -> bool {
    let code = u32::from(c);
    !(code < 0x20
        || (0x7f..=0xa0).contains(&code)
        || code == 0xad
        || (0x600..=0x605).contains(&code)
        || code == 0x61c
        || code == 0x6dd
        || code == 0x70f
        || code == 0x1680
        || code == 0x180e
        || (0x2000..=0x200f).contains(&code)
        || (0x2028..=0x202f).contains(&code)
        || (0x205f..=0x2064).contains(&code)
        || (0x2066..=0x206f).contains(&code)
        || code == 0x3000
        || (0xd800..=0xf8ff).contains(&code)
        || code == 0xfeff
        || (0xfff9..=0xfffb).contains(&code)
        || (0xe0000..=0x10ffff).contains(&code))
}

#[cfg(test)]
mod tests;
