//! JSON paths as Flink evaluates them (Jayway JsonPath): `$`, `.name`, `['name']`, `[n]`
//! (negative from the end), `[n, m]`, `[a:b]` slices, `*` / `[*]` wildcards and `..` deep scan,
//! in Flink's `strict` (the default) and `lax` modes.

use super::value::Json;

/// How missing members and type mismatches are treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Missing members and mismatches are errors; a NULL result is an error too.
    Strict,
    /// Missing members and mismatches give no result.
    Lax,
}

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Property(String),
    Index(i64),
    Indexes(Vec<i64>),
    Slice(Option<i64>, Option<i64>),
    Wildcard,
    /// `..`: the following step applies at every depth.
    Scan,
}

impl Step {
    fn definite(&self) -> bool {
        matches!(self, Step::Property(_) | Step::Index(_))
    }
}

/// A compiled path with its mode.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct JsonPath {
    pub(crate) mode: Mode,
    steps: Vec<Step>,
}

/// The outcome of reading a path: a value (`None`: JSON null or nothing, in lax mode), or the
/// error Flink's ON ERROR clauses handle.
pub(crate) type PathResult = Result<Option<Json>, String>;

impl JsonPath {
    /// Compiles `[strict|lax] <path>`; features Riffle does not evaluate (filters, functions,
    /// several quoted names in brackets) are errors naming them.
    pub(crate) fn compile(spec: &str) -> Result<JsonPath, String> {
        let trimmed = spec.trim_start();
        let (mode, path) = match split_mode(trimmed) {
            Some((m, rest)) => (m, rest),
            None => (Mode::Strict, spec),
        };
        Ok(JsonPath {
            mode,
            steps: compile_steps(path.trim())?,
        })
    }

    fn definite(&self) -> bool {
        self.steps.iter().all(Step::definite)
    }

    /// Reads the path in `doc` (`Err`: the document did not parse).
    pub(crate) fn read(&self, doc: &Result<Json, String>) -> PathResult {
        let doc = match doc {
            Ok(d) => d,
            // Lax mode reads nothing from a malformed document; strict mode fails.
            Err(e) if self.mode == Mode::Strict => return Err(e.clone()),
            Err(_) => return Ok(None),
        };
        if *doc == Json::Null {
            return Err("json object can not be null".into());
        }
        let mut eval = Eval {
            lax: self.mode == Mode::Lax,
            results: Vec::new(),
        };
        let outcome = eval.steps(&self.steps, 0, doc, true);
        let value = match outcome {
            Err(e) if self.mode == Mode::Strict => return Err(e),
            Err(_) => {
                if self.definite() {
                    None
                } else {
                    Some(Json::Array(Vec::new()))
                }
            }
            Ok(()) if self.definite() => match eval.results.pop() {
                Some(v) => Some(v),
                None if self.mode == Mode::Strict => {
                    return Err("No results for path".into());
                }
                None => None,
            },
            Ok(()) => Some(Json::Array(eval.results)),
        };
        let value = value.filter(|v| *v != Json::Null);
        if value.is_none() && self.mode == Mode::Strict {
            return Err(
                "Strict jsonpath mode requires a non empty returned value, but is null".into(),
            );
        }
        Ok(value)
    }
}

fn split_mode(s: &str) -> Option<(Mode, &str)> {
    let word_end = s.find(char::is_whitespace)?;
    let mode = match s[..word_end].to_ascii_lowercase().as_str() {
        "strict" => Mode::Strict,
        "lax" => Mode::Lax,
        _ => return None,
    };
    let rest = s[word_end..].trim_start();
    (!rest.is_empty()).then_some((mode, rest))
}

fn compile_steps(path: &str) -> Result<Vec<Step>, String> {
    let owned;
    let path = if path.starts_with('$') {
        path
    } else {
        // Jayway reads `a.b` as `$.a.b`.
        owned = format!("$.{path}");
        &owned
    };
    let chars: Vec<char> = path.chars().collect();
    let mut i = 1;
    let mut steps = Vec::new();
    let invalid = |m: &str| Err(format!("Illegal jsonpath spec '{path}': {m}"));
    while i < chars.len() {
        match chars[i] {
            '.' => {
                if chars.get(i + 1) == Some(&'.') {
                    steps.push(Step::Scan);
                    i += 2;
                    if chars.get(i) == Some(&'[') {
                        continue;
                    }
                } else {
                    i += 1;
                }
                if i >= chars.len() {
                    return invalid("path must not end with a '.' or '..'");
                }
                if chars[i] == '*' {
                    steps.push(Step::Wildcard);
                    i += 1;
                    continue;
                }
                let start = i;
                while i < chars.len() && !matches!(chars[i], '.' | '[' | ' ' | '(') {
                    i += 1;
                }
                if i < chars.len() && chars[i] == '(' {
                    return Err("JSON path functions are not supported".into());
                }
                if i < chars.len() && chars[i] == ' ' {
                    return invalid("use bracket notation ['my prop'] for names with blanks");
                }
                if start == i {
                    return invalid("empty property name");
                }
                steps.push(Step::Property(chars[start..i].iter().collect()));
            }
            '[' => {
                let close = chars[i..]
                    .iter()
                    .position(|&c| c == ']')
                    .map(|p| p + i)
                    .ok_or_else(|| format!("Illegal jsonpath spec '{path}': missing ']'"))?;
                let inner: String = chars[i + 1..close].iter().collect();
                let inner = inner.trim();
                steps.push(bracket_step(inner).ok_or_else(|| {
                    format!("Illegal jsonpath spec '{path}': could not parse '[{inner}]'")
                })??);
                i = close + 1;
            }
            _ => return invalid("unexpected character"),
        }
    }
    Ok(steps)
}

/// The step of a bracket's content; `Some(Err)` for syntax Riffle does not evaluate.
fn bracket_step(inner: &str) -> Option<Result<Step, String>> {
    if inner == "*" {
        return Some(Ok(Step::Wildcard));
    }
    if inner.starts_with('?') {
        return Some(Err("JSON path filter expressions are not supported".into()));
    }
    if let Some(q) = inner.chars().next().filter(|c| *c == '\'' || *c == '"') {
        let body = inner.strip_prefix(q)?.strip_suffix(q)?;
        if body.contains(q) {
            return Some(Err(
                "JSON paths selecting several properties are not supported".into(),
            ));
        }
        return Some(Ok(Step::Property(body.replace("\\'", "'"))));
    }
    if let Some((from, to)) = inner.split_once(':') {
        let bound = |s: &str| -> Option<Option<i64>> {
            let s = s.trim();
            if s.is_empty() {
                Some(None)
            } else {
                s.parse().ok().map(Some)
            }
        };
        return Some(Ok(Step::Slice(bound(from)?, bound(to)?)));
    }
    let indexes: Option<Vec<i64>> = inner.split(',').map(|s| s.trim().parse().ok()).collect();
    let indexes = indexes?;
    Some(Ok(match indexes.as_slice() {
        [one] => Step::Index(*one),
        _ => Step::Indexes(indexes),
    }))
}

struct Eval {
    lax: bool,
    results: Vec<Json>,
}

impl Eval {
    /// Evaluates `steps[at..]` on `model`; `upstream_definite`: every step before was definite.
    fn steps(
        &mut self,
        steps: &[Step],
        at: usize,
        model: &Json,
        upstream_definite: bool,
    ) -> Result<(), String> {
        let Some(step) = steps.get(at) else {
            self.results.push(model.clone());
            return Ok(());
        };
        let leaf = at + 1 == steps.len();
        let next_definite = upstream_definite && step.definite();
        // Mismatches are skipped when the path is already indefinite or in lax mode.
        let tolerate = !upstream_definite || self.lax;
        match step {
            Step::Property(name) => {
                let Json::Object(members) = model else {
                    return if tolerate {
                        Ok(())
                    } else {
                        Err(format!(
                            "Expected to find an object with property ['{name}']"
                        ))
                    };
                };
                match members.iter().find(|(k, _)| k == name) {
                    Some((_, v)) => self.steps(steps, at + 1, v, next_definite),
                    None if leaf || tolerate => Ok(()),
                    None => Err(format!("Missing property in path ['{name}']")),
                }
            }
            Step::Index(_) | Step::Indexes(_) | Step::Slice(..) => {
                let Json::Array(items) = model else {
                    return if tolerate {
                        Ok(())
                    } else {
                        Err("Filter can only be applied to arrays".into())
                    };
                };
                let len = items.len() as i64;
                let picked: Vec<i64> = match step {
                    Step::Index(i) => vec![*i],
                    Step::Indexes(is) => is.clone(),
                    Step::Slice(from, to) => slice(len, *from, *to),
                    _ => Vec::new(),
                };
                for i in picked {
                    let effective = if i < 0 { len + i } else { i };
                    if let Some(v) = usize::try_from(effective).ok().and_then(|e| items.get(e)) {
                        self.steps(steps, at + 1, v, next_definite)?;
                    }
                }
                Ok(())
            }
            Step::Wildcard => {
                match model {
                    Json::Object(members) => {
                        for (_, v) in members {
                            self.steps(steps, at + 1, v, false)?;
                        }
                    }
                    Json::Array(items) => {
                        for v in items {
                            self.steps(steps, at + 1, v, false)?;
                        }
                    }
                    _ => {}
                }
                Ok(())
            }
            Step::Scan => self.scan(steps, at + 1, model),
        }
    }

    /// Deep scan: applies `steps[at..]` wherever its first step matches, walking the document
    /// depth first (Jayway's order).
    fn scan(&mut self, steps: &[Step], at: usize, model: &Json) -> Result<(), String> {
        let Some(step) = steps.get(at) else {
            return Ok(());
        };
        match model {
            Json::Object(members) => {
                let matches = match step {
                    Step::Property(name) => members.iter().any(|(k, _)| k == name),
                    Step::Wildcard => true,
                    _ => false,
                };
                if matches {
                    self.steps(steps, at, model, false)?;
                }
                for (_, v) in members {
                    self.scan(steps, at, v)?;
                }
            }
            Json::Array(items) => {
                let matches = matches!(
                    step,
                    Step::Wildcard | Step::Index(_) | Step::Indexes(_) | Step::Slice(..)
                );
                if matches {
                    if at + 1 == steps.len() {
                        self.steps(steps, at, model, false)?;
                    } else {
                        // Jayway applies the step after an array step to every element here.
                        for v in items {
                            self.steps(steps, at + 1, v, false)?;
                        }
                    }
                }
                for v in items {
                    self.scan(steps, at, v)?;
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// The indexes a slice `[from:to]` selects in an array of `len` elements.
fn slice(len: i64, from: Option<i64>, to: Option<i64>) -> Vec<i64> {
    let (start, end) = match (from, to) {
        (Some(f), None) => ((if f < 0 { len + f } else { f }).max(0), len),
        (None, Some(t)) => (0, (if t < 0 { len + t } else { t }).min(len)),
        (Some(f), Some(t)) => (
            (if f < 0 { len + f } else { f }).max(0),
            if t < 0 { len + t } else { t.min(len) },
        ),
        (None, None) => (0, len),
    };
    (start..end).collect()
}

#[cfg(test)]
mod tests {
    use super::super::value::parse;
    use super::*;

    fn read(doc: &str, path: &str) -> String {
        let path = match JsonPath::compile(path) {
            Ok(p) => p,
            Err(e) => return format!("compile error: {e}"),
        };
        match path.read(&parse(doc)) {
            Ok(Some(v)) => v.serialize(),
            Ok(None) => "none".into(),
            Err(_) => "error".into(),
        }
    }

    #[test]
    fn reads_like_jayway() {
        let doc = r#"{"a":{"b":[10,20,{"c":"x"}]},"z":null,"k":{"k":5},"arr":[{"k":6}]}"#;
        assert_eq!(read(doc, "$.a.b[1]"), "20");
        assert_eq!(read(doc, "$.a.b[-1].c"), "\"x\"");
        assert_eq!(read(doc, "$.nope"), "error");
        assert_eq!(read(doc, "lax $.nope"), "none");
        assert_eq!(read(doc, "$.z"), "error");
        assert_eq!(read(doc, "lax $.z"), "none");
        assert_eq!(read(doc, "$..k"), r#"[{"k":5},5,6]"#);
        assert_eq!(read(doc, "$.a.b[0:2]"), "[10,20]");
        assert_eq!(read(doc, "$[*].k"), "[5]");
        assert_eq!(read(doc, "$.nope[*]"), "error");
        assert_eq!(read(doc, "lax $.nope[*]"), "[]");
        assert_eq!(read("null", "lax $"), "error");
        assert_eq!(read("oops", "lax $.a"), "none");
        assert_eq!(read("oops", "$.a"), "error");
        assert!(read(doc, "$[?(@.a)]").starts_with("compile error"));
    }
}
