//! The `.test` case file format (described in full in `compat-tests/README.md`).
//!
//! ```text
//! # Description lines.
//! --- config
//! table.local-time-zone = Asia/Shanghai
//! --- options
//! ordered = true
//! --- input bids
//! 2020-04-15 08:05:00,4.00,C
//! --- sql
//! CREATE TABLE bids (...) WITH ('path' = '${bids}', ...);
//! SELECT ...;
//! --- columns (flink 2.3.0)
//! window_start: TIMESTAMP(3) NOT NULL
//! --- expected (flink 2.3.0)
//! +I[2020-04-15T08:00, 11.00]
//! ```
//!
//! `columns`, `expected` and `expected-error` are written by the oracle and come last.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use serde::Serialize;
use thiserror::Error;

/// Configuration every runner applies before a case's own `--- config` (the oracle does too).
pub const HARNESS_DEFAULTS: &[(&str, &str)] = &[
    ("parallelism.default", "1"),
    ("table.local-time-zone", "UTC"),
];

/// Seconds a case may run unless its options say otherwise.
const DEFAULT_TIMEOUT_SECS: u64 = 120;

/// A malformed or unreadable case file.
#[derive(Debug, Error)]
pub enum CaseError {
    /// The file's content breaks the format.
    #[error("{file}:{line}: {message}")]
    Malformed {
        /// The file (as given to the parser).
        file: String,
        /// 1-based line of the problem.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The file or directory could not be read.
    #[error("{file}: {source}")]
    Io {
        /// The path that failed.
        file: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

/// One materialised input: the harness writes `content` to a file and replaces `${name}` in the
/// SQL with that file's path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Input {
    /// The name used in `--- input <name>` and `${name}`.
    pub name: String,
    /// The file content: the section's lines, each ending in `\n`, trailing blank lines dropped.
    pub content: String,
}

/// One result column as Flink reported it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Column {
    /// Column name.
    pub name: String,
    /// Flink's summary of the logical type, e.g. `DECIMAL(38, 2) NOT NULL` or `TIMESTAMP(3) *ROWTIME*`.
    pub data_type: String,
}

/// How updating results are compared (the `compare` option).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum CompareMode {
    /// `compare = changelog` (default): the changes per key in order, and the final table.
    Changelog,
    /// `compare = final`: only the final materialised table, for cases whose intermediate
    /// changes depend on how Flink interleaves several sources.
    FinalTable,
}

/// The `--- options` section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CaseOptions {
    /// `ordered = true`: compare the output as an exact sequence.
    pub ordered: bool,
    /// `key = a, b`: the columns identifying a row in a changelog (overrides the sink's primary key).
    pub key: Option<Vec<String>>,
    /// `compare = changelog | final`.
    pub compare: CompareMode,
    /// `timeout = 90`: seconds the case may run.
    pub timeout_secs: u64,
}

impl Default for CaseOptions {
    fn default() -> Self {
        CaseOptions {
            ordered: false,
            key: None,
            compare: CompareMode::Changelog,
            timeout_secs: DEFAULT_TIMEOUT_SECS,
        }
    }
}

/// Expected rows with everything needed to compare them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExpectedRows {
    /// The printed rows, one per line, as Flink printed them (possibly with a `sink> ` prefix).
    pub rows: Vec<String>,
    /// Result columns (`--- columns`), when Flink reported one schema for the case.
    pub columns: Option<Vec<Column>>,
    /// The sink table's primary key (`PRIMARY KEY (...)` in `--- columns`).
    pub primary_key: Option<Vec<String>>,
    /// Positions of the changelog key columns: the `key` option if given, else the primary key;
    /// `None` means every column (the full row) is the key.
    pub key_indices: Option<Vec<usize>>,
    /// `ordered = true`.
    pub ordered: bool,
    /// The `compare` option.
    pub mode: CompareMode,
}

/// The error Flink raised for the case: the root cause's class and message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExpectedError {
    /// Fully qualified Java class name, e.g. `org.apache.calcite.sql.validate.SqlValidatorException`.
    pub class: String,
    /// The message (may span lines).
    pub message: String,
}

/// What running the case on Flink produced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Expected {
    /// Flink produced these rows.
    Rows(ExpectedRows),
    /// Flink rejected the statements or the job failed.
    Error(ExpectedError),
}

/// A parsed case file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Case {
    /// `<area>/<name>`, from the path below the cases directory (or the label given to [`Case::parse`]).
    pub id: String,
    /// The file the case came from.
    pub path: PathBuf,
    /// The `#` lines before the first section, without the `# `.
    pub description: String,
    /// `--- config` entries in file order.
    pub config: Vec<(String, String)>,
    /// `--- options`.
    pub options: CaseOptions,
    /// `--- input` sections in file order.
    pub inputs: Vec<Input>,
    /// The `--- sql` section's text.
    pub sql: String,
    /// 1-based line of the first line of the sql text.
    pub sql_line: usize,
    /// The Flink version recorded in the generated sections.
    pub flink_version: Option<String>,
    /// The expectation; `None` until the oracle has run the case.
    pub expected: Option<Expected>,
}

/// A section header with its body lines (1-based line numbers).
struct Section<'a> {
    line: usize,
    kind: &'a str,
    arg: &'a str,
    body: Vec<(usize, &'a str)>,
}

const GENERATED: &[&str] = &["columns", "expected", "expected-error"];
const AUTHORED: &[&str] = &["config", "options", "input", "sql"];

impl Case {
    /// Parses case text; `file` names it in errors and gives the case id.
    pub fn parse(file: &str, text: &str) -> Result<Case, CaseError> {
        let err = |line: usize, message: String| CaseError::Malformed {
            file: file.to_string(),
            line,
            message,
        };
        let mut description = Vec::new();
        let mut sections: Vec<Section<'_>> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let n = i + 1;
            if let Some((kind, arg)) = header(line) {
                sections.push(Section {
                    line: n,
                    kind,
                    arg,
                    body: Vec::new(),
                });
            } else if let Some(section) = sections.last_mut() {
                section.body.push((n, line));
            } else if let Some(rest) = line.strip_prefix('#') {
                description.push(rest.strip_prefix(' ').unwrap_or(rest).to_string());
            } else if !line.trim().is_empty() {
                return Err(err(
                    n,
                    "text before the first section must be '#' description lines".into(),
                ));
            }
        }

        let mut case = Case {
            id: file.trim_end_matches(".test").to_string(),
            path: PathBuf::from(file),
            description: description.join("\n").trim().to_string(),
            config: Vec::new(),
            options: CaseOptions::default(),
            inputs: Vec::new(),
            sql: String::new(),
            sql_line: 0,
            flink_version: None,
            expected: None,
        };
        let mut seen: Vec<(&str, &str)> = Vec::new();
        let mut generated_started = false;
        let mut columns: Option<(Vec<Column>, Option<Vec<String>>)> = None;
        for section in &sections {
            let Section {
                line,
                kind,
                arg,
                body,
            } = section;
            if !AUTHORED.contains(kind) && !GENERATED.contains(kind) {
                return Err(err(*line, format!("unknown section '--- {kind}'")));
            }
            let identity = (*kind, if *kind == "input" { *arg } else { "" });
            if seen.contains(&identity) {
                return Err(err(*line, format!("duplicate section '--- {kind}'")));
            }
            seen.push(identity);
            if GENERATED.contains(kind) {
                generated_started = true;
                let version = parse_version(arg).ok_or_else(|| {
                    err(
                        *line,
                        format!("'--- {kind}' needs the Flink version, e.g. '(flink 2.3.0)'"),
                    )
                })?;
                if case.flink_version.as_deref().is_some_and(|v| v != version) {
                    return Err(err(
                        *line,
                        "generated sections record different Flink versions".into(),
                    ));
                }
                case.flink_version = Some(version.to_string());
                match *kind {
                    "columns" => columns = Some(parse_columns(body, &err)?),
                    "expected" => {
                        let rows = trimmed(body).iter().map(|(_, l)| l.to_string()).collect();
                        case.expected = Some(Expected::Rows(ExpectedRows {
                            rows,
                            columns: None,
                            primary_key: None,
                            key_indices: None,
                            ordered: false,
                            mode: CompareMode::Changelog,
                        }));
                    }
                    _ => {
                        case.expected =
                            Some(Expected::Error(parse_error_section(*line, body, &err)?))
                    }
                }
                continue;
            }
            if generated_started {
                return Err(err(
                    *line,
                    format!("'--- {kind}' must come before the generated sections"),
                ));
            }
            match *kind {
                "config" | "options" => {
                    if !arg.is_empty() {
                        return Err(err(*line, format!("'--- {kind}' takes no argument")));
                    }
                    let entries = parse_key_values(kind, body, &err)?;
                    if *kind == "config" {
                        case.config = entries;
                    } else {
                        case.options = parse_options(*line, &entries, &err)?;
                    }
                }
                "input" => {
                    if arg.is_empty() || !arg.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    {
                        return Err(err(
                            *line,
                            "'--- input' needs a name made of letters, digits and '_'".into(),
                        ));
                    }
                    let content = trimmed(body)
                        .iter()
                        .map(|(_, l)| format!("{l}\n"))
                        .collect();
                    case.inputs.push(Input {
                        name: arg.to_string(),
                        content,
                    });
                }
                _ => {
                    if !arg.is_empty() {
                        return Err(err(*line, "'--- sql' takes no argument".into()));
                    }
                    case.sql_line = line + 1;
                    case.sql = body.iter().map(|(_, l)| *l).collect::<Vec<_>>().join("\n");
                }
            }
        }
        if !seen.iter().any(|(k, _)| *k == "sql") {
            return Err(err(1, "missing '--- sql' section".into()));
        }
        if seen.iter().any(|(k, _)| *k == "expected")
            && seen.iter().any(|(k, _)| *k == "expected-error")
        {
            return Err(err(
                1,
                "a case has either '--- expected' or '--- expected-error', not both".into(),
            ));
        }
        if let Some(Expected::Rows(rows)) = &mut case.expected {
            if let Some((cols, pk)) = columns {
                rows.columns = Some(cols);
                rows.primary_key = pk;
            }
            rows.ordered = case.options.ordered;
            rows.mode = case.options.compare;
            let key = case.options.key.as_ref().or(rows.primary_key.as_ref());
            if let Some(key) = key {
                let cols = rows.columns.as_ref().ok_or_else(|| {
                    err(
                        1,
                        "a changelog key needs a '--- columns' section to resolve column names"
                            .into(),
                    )
                })?;
                let mut indices = Vec::new();
                for name in key {
                    let at = cols.iter().position(|c| &c.name == name).ok_or_else(|| {
                        err(1, format!("key column '{name}' is not a result column"))
                    })?;
                    indices.push(at);
                }
                rows.key_indices = Some(indices);
            }
        }
        case.statements()?;
        Ok(case)
    }

    /// Reads and parses one case file; the id is the path relative to `root`.
    pub fn load(root: &Path, path: &Path) -> Result<Case, CaseError> {
        let text = fs::read_to_string(path).map_err(|source| CaseError::Io {
            file: path.display().to_string(),
            source,
        })?;
        let mut case = Case::parse(&path.display().to_string(), &text)?;
        let rel = path.strip_prefix(root).unwrap_or(path).with_extension("");
        case.id = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        case.path = path.to_path_buf();
        Ok(case)
    }

    /// The SQL statements in order.
    ///
    /// A statement ends with `;` at the end of a line that is not a `--` comment line;
    /// `EXECUTE STATEMENT SET BEGIN ... END;` is one statement. The final `;` is removed, and a
    /// last statement may omit it.
    pub fn statements(&self) -> Result<Vec<String>, CaseError> {
        let mut statements = Vec::new();
        let mut current: Vec<&str> = Vec::new();
        let mut in_set = false;
        for line in self.sql.lines() {
            if current.is_empty() && line.trim().is_empty() {
                continue;
            }
            current.push(line);
            let is_comment = line.trim_start().starts_with("--");
            if !in_set && !is_comment {
                let code: Vec<&str> = current
                    .iter()
                    .copied()
                    .filter(|l| !l.trim_start().starts_with("--"))
                    .collect();
                let words: Vec<&str> = code
                    .iter()
                    .flat_map(|l| l.split_whitespace())
                    .take(3)
                    .collect();
                in_set = words.len() == 3
                    && words
                        .iter()
                        .zip(["EXECUTE", "STATEMENT", "SET"])
                        .all(|(w, k)| w.eq_ignore_ascii_case(k));
            }
            let trimmed = line.trim_end();
            if is_comment || !trimmed.ends_with(';') {
                continue;
            }
            if in_set && !is_set_end(trimmed) {
                continue;
            }
            let text = current.join("\n");
            let text = text.trim_end();
            statements.push(text[..text.len() - 1].trim_end().to_string());
            current.clear();
            in_set = false;
        }
        if current
            .iter()
            .any(|l| !l.trim().is_empty() && !l.trim_start().starts_with("--"))
        {
            if in_set {
                return Err(
                    self.malformed(self.sql_line, "EXECUTE STATEMENT SET is missing its 'END;'")
                );
            }
            statements.push(current.join("\n").trim().to_string());
        }
        if statements.is_empty() {
            return Err(self.malformed(self.sql_line, "the sql section holds no statement"));
        }
        Ok(statements)
    }

    /// The statements with every `${name}` replaced by the path of input `name`.
    pub fn statements_with_paths(
        &self,
        paths: &BTreeMap<String, String>,
    ) -> Result<Vec<String>, CaseError> {
        self.statements()?
            .into_iter()
            .map(|stmt| {
                let mut out = String::with_capacity(stmt.len());
                let mut rest = stmt.as_str();
                while let Some(at) = rest.find("${") {
                    out.push_str(&rest[..at]);
                    let after = &rest[at + 2..];
                    let end = after.find('}').ok_or_else(|| {
                        self.malformed(self.sql_line, "unclosed '${' in the sql section")
                    })?;
                    let name = &after[..end];
                    let path = paths.get(name).ok_or_else(|| {
                        self.malformed(
                            self.sql_line,
                            &format!("'${{{name}}}' names no '--- input {name}' section"),
                        )
                    })?;
                    out.push_str(path);
                    rest = &after[end + 1..];
                }
                out.push_str(rest);
                Ok(out)
            })
            .collect()
    }

    /// Writes every input into `dir` (one file per input, named after it) and returns the
    /// paths to pass to [`Case::statements_with_paths`]; `udf_jar` is the fixture functions'
    /// jar (compiled on first use) when the SQL names `${udf_jar}`.
    pub fn write_inputs(&self, dir: &Path) -> Result<BTreeMap<String, String>, CaseError> {
        let mut paths = BTreeMap::new();
        for input in &self.inputs {
            let path = dir.join(&input.name);
            fs::write(&path, &input.content).map_err(|source| CaseError::Io {
                file: path.display().to_string(),
                source,
            })?;
            paths.insert(input.name.clone(), path.display().to_string());
        }
        if self.sql.contains(crate::fixtures::UDF_JAR) {
            paths.insert("udf_jar".into(), crate::fixtures::udf_jar(self)?);
        }
        Ok(paths)
    }

    /// [`HARNESS_DEFAULTS`] overridden by the case's `--- config`, in application order.
    pub fn effective_config(&self) -> Vec<(String, String)> {
        let mut merged: Vec<(String, String)> = HARNESS_DEFAULTS
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        for (k, v) in &self.config {
            match merged.iter_mut().find(|(mk, _)| mk == k) {
                Some(entry) => entry.1 = v.clone(),
                None => merged.push((k.clone(), v.clone())),
            }
        }
        merged
    }

    /// The case's area: the first component of its id.
    pub fn area(&self) -> &str {
        self.id.split('/').next().unwrap_or(&self.id)
    }

    fn malformed(&self, line: usize, message: &str) -> CaseError {
        CaseError::Malformed {
            file: self.path.display().to_string(),
            line,
            message: message.to_string(),
        }
    }
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.id)
    }
}

/// Loads every `*.test` file below `dir` (sorted by id) whose id contains `filter`, if given.
/// Each file yields its own result so one malformed case does not hide the others.
pub fn load_cases(dir: &Path, filter: Option<&str>) -> Vec<Result<Case, CaseError>> {
    let mut files = Vec::new();
    if let Err(e) = collect_test_files(dir, &mut files) {
        return vec![Err(e)];
    }
    files.sort();
    files
        .iter()
        .filter(|path| {
            let id = path.strip_prefix(dir).unwrap_or(path).with_extension("");
            filter.is_none_or(|f| id.to_string_lossy().replace('\\', "/").contains(f))
        })
        .map(|path| Case::load(dir, path))
        .collect()
}

fn collect_test_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), CaseError> {
    let io = |source| CaseError::Io {
        file: dir.display().to_string(),
        source,
    };
    for entry in fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        if path.is_dir() {
            collect_test_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "test") {
            out.push(path);
        }
    }
    Ok(())
}

/// `--- kind rest` → (kind, rest).
fn header(line: &str) -> Option<(&str, &str)> {
    let rest = line.strip_prefix("--- ")?;
    let (kind, arg) = rest.split_once(' ').unwrap_or((rest, ""));
    if kind.is_empty() || !kind.chars().all(|c| c.is_ascii_lowercase() || c == '-') {
        return None;
    }
    Some((kind, arg.trim()))
}

/// `(flink 2.3.0)` → `2.3.0`.
fn parse_version(arg: &str) -> Option<&str> {
    let version = arg.strip_prefix("(flink ")?.strip_suffix(')')?.trim();
    (!version.is_empty()).then_some(version)
}

fn is_set_end(line: &str) -> bool {
    let t = line.trim();
    t.get(..3).is_some_and(|w| w.eq_ignore_ascii_case("END"))
        && t.get(3..).is_some_and(|r| r.trim() == ";")
}

/// The body without trailing blank lines.
fn trimmed<'a>(body: &'a [(usize, &'a str)]) -> &'a [(usize, &'a str)] {
    let end = body
        .iter()
        .rposition(|(_, l)| !l.trim().is_empty())
        .map_or(0, |i| i + 1);
    &body[..end]
}

type ErrFn<'a> = dyn Fn(usize, String) -> CaseError + 'a;

fn parse_key_values(
    kind: &str,
    body: &[(usize, &str)],
    err: &ErrFn<'_>,
) -> Result<Vec<(String, String)>, CaseError> {
    let mut entries: Vec<(String, String)> = Vec::new();
    for (n, line) in body {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let (k, v) = t
            .split_once('=')
            .ok_or_else(|| err(*n, format!("expected 'key = value' in the {kind} section")))?;
        let (k, v) = (k.trim().to_string(), v.trim().to_string());
        if entries.iter().any(|(ek, _)| *ek == k) {
            return Err(err(*n, format!("duplicate {kind} key '{k}'")));
        }
        entries.push((k, v));
    }
    Ok(entries)
}

fn parse_options(
    line: usize,
    entries: &[(String, String)],
    err: &ErrFn<'_>,
) -> Result<CaseOptions, CaseError> {
    let mut options = CaseOptions::default();
    for (k, v) in entries {
        match k.as_str() {
            "ordered" => {
                options.ordered = match v.as_str() {
                    "true" => true,
                    "false" => false,
                    _ => return Err(err(line, "option 'ordered' must be true or false".into())),
                }
            }
            "key" => {
                let names: Vec<String> = v.split(',').map(|s| s.trim().to_string()).collect();
                if names.iter().any(String::is_empty) {
                    return Err(err(
                        line,
                        "option 'key' must list column names separated by ','".into(),
                    ));
                }
                options.key = Some(names);
            }
            "compare" => {
                options.compare = match v.as_str() {
                    "changelog" => CompareMode::Changelog,
                    "final" => CompareMode::FinalTable,
                    _ => {
                        return Err(err(
                            line,
                            "option 'compare' must be 'changelog' or 'final'".into(),
                        ))
                    }
                }
            }
            "timeout" => {
                options.timeout_secs = v.parse().map_err(|_| {
                    err(
                        line,
                        "option 'timeout' must be a whole number of seconds".into(),
                    )
                })?;
            }
            _ => {
                return Err(err(
                    line,
                    format!("unknown option '{k}' (known: ordered, key, compare, timeout)"),
                ));
            }
        }
    }
    Ok(options)
}

fn parse_columns(
    body: &[(usize, &str)],
    err: &ErrFn<'_>,
) -> Result<(Vec<Column>, Option<Vec<String>>), CaseError> {
    let mut columns = Vec::new();
    let mut pk = None;
    for (n, line) in trimmed(body) {
        if let Some(list) = line
            .strip_prefix("PRIMARY KEY (")
            .and_then(|r| r.strip_suffix(')'))
        {
            pk = Some(list.split(", ").map(str::to_string).collect());
            continue;
        }
        let (name, data_type) = line
            .split_once(": ")
            .ok_or_else(|| err(*n, "expected 'name: TYPE' in the columns section".into()))?;
        columns.push(Column {
            name: name.to_string(),
            data_type: data_type.to_string(),
        });
    }
    Ok((columns, pk))
}

fn parse_error_section(
    line: usize,
    body: &[(usize, &str)],
    err: &ErrFn<'_>,
) -> Result<ExpectedError, CaseError> {
    let lines: Vec<&str> = trimmed(body).iter().map(|(_, l)| *l).collect();
    let first = lines
        .first()
        .ok_or_else(|| err(line, "'--- expected-error' is empty".into()))?;
    let (class, head) = match first.split_once(": ") {
        Some((class, head)) => (class, head),
        None => (first.trim_end_matches(':'), ""),
    };
    let mut message = head.to_string();
    for l in &lines[1..] {
        message.push('\n');
        message.push_str(l);
    }
    Ok(ExpectedError {
        class: class.to_string(),
        message,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
# Sum per window.
# Second line.
--- config
table.local-time-zone = Asia/Shanghai
--- options
key = item
--- input bids
a,1

--- sql
CREATE TABLE bids (item STRING, v INT) WITH ('path' = '${bids}');
-- a comment;
SELECT item,
  SUM(v) FROM bids GROUP BY item;

--- columns (flink 2.3.0)
item: STRING
EXPR$1: INT
--- expected (flink 2.3.0)
+I[a, 1]
";

    #[test]
    fn parses_every_section() {
        let case = Case::parse("agg/sum.test", SAMPLE).unwrap();
        assert_eq!(case.id, "agg/sum");
        assert_eq!(case.description, "Sum per window.\nSecond line.");
        assert_eq!(
            case.config,
            vec![(
                "table.local-time-zone".to_string(),
                "Asia/Shanghai".to_string()
            )]
        );
        assert_eq!(
            case.inputs,
            vec![Input {
                name: "bids".into(),
                content: "a,1\n".into()
            }]
        );
        assert_eq!(case.flink_version.as_deref(), Some("2.3.0"));
        assert_eq!(case.sql_line, 11);
        let Some(Expected::Rows(rows)) = &case.expected else {
            panic!("expected rows")
        };
        assert_eq!(rows.rows, vec!["+I[a, 1]"]);
        assert_eq!(rows.key_indices, Some(vec![0]));
        assert_eq!(rows.columns.as_ref().map(Vec::len), Some(2));
    }

    #[test]
    fn splits_statements_and_substitutes_paths() {
        let case = Case::parse("agg/sum.test", SAMPLE).unwrap();
        let paths = BTreeMap::from([("bids".to_string(), "/tmp/x/bids".to_string())]);
        let stmts = case.statements_with_paths(&paths).unwrap();
        assert_eq!(stmts.len(), 2);
        assert_eq!(
            stmts[0],
            "CREATE TABLE bids (item STRING, v INT) WITH ('path' = '/tmp/x/bids')"
        );
        assert_eq!(
            stmts[1],
            "-- a comment;\nSELECT item,\n  SUM(v) FROM bids GROUP BY item"
        );
    }

    #[test]
    fn statement_sets_are_one_statement() {
        let text = "--- sql\nCREATE TABLE t (a INT);\nEXECUTE STATEMENT SET BEGIN\nINSERT INTO t VALUES (1);\nINSERT INTO t VALUES (2);\nEND;\nSELECT 1\n";
        let stmts = Case::parse("x.test", text).unwrap().statements().unwrap();
        assert_eq!(stmts.len(), 3);
        assert!(stmts[1].starts_with("EXECUTE STATEMENT SET BEGIN") && stmts[1].ends_with("END"));
        assert_eq!(stmts[2], "SELECT 1");
    }

    #[test]
    fn writes_inputs_for_the_statements() {
        let case = Case::parse("agg/sum.test", SAMPLE).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let paths = case.write_inputs(dir.path()).unwrap();
        let written = fs::read_to_string(&paths["bids"]).unwrap();
        assert_eq!(written, "a,1\n");
        let stmts = case.statements_with_paths(&paths).unwrap();
        assert!(stmts[0].contains(&paths["bids"]));
    }

    #[test]
    fn effective_config_overrides_defaults() {
        let case = Case::parse("agg/sum.test", SAMPLE).unwrap();
        let config = case.effective_config();
        assert_eq!(
            config[0],
            ("parallelism.default".to_string(), "1".to_string())
        );
        assert_eq!(
            config[1],
            (
                "table.local-time-zone".to_string(),
                "Asia/Shanghai".to_string()
            )
        );
    }

    #[test]
    fn parses_expected_error() {
        let text = "--- sql\nSELECT x\n--- expected-error (flink 2.3.0)\norg.apache.X: line one\nline two\n";
        let case = Case::parse("errors/x.test", text).unwrap();
        assert_eq!(
            case.expected,
            Some(Expected::Error(ExpectedError {
                class: "org.apache.X".into(),
                message: "line one\nline two".into()
            }))
        );
    }

    #[test]
    fn primary_key_becomes_the_changelog_key() {
        let text = "--- sql\nINSERT INTO s SELECT 1, 2\n--- columns (flink 2.3.0)\na: INT\nb: INT NOT NULL\nPRIMARY KEY (b)\n--- expected (flink 2.3.0)\n+I[1, 2]\n";
        let Some(Expected::Rows(rows)) = Case::parse("x.test", text).unwrap().expected else {
            panic!()
        };
        assert_eq!(rows.primary_key, Some(vec!["b".to_string()]));
        assert_eq!(rows.key_indices, Some(vec![1]));
    }

    fn error_of(text: &str) -> String {
        Case::parse("bad.test", text).unwrap_err().to_string()
    }

    #[test]
    fn malformed_files_name_file_and_line() {
        assert_eq!(
            error_of("hello\n--- sql\nSELECT 1\n"),
            "bad.test:1: text before the first section must be '#' description lines"
        );
        assert_eq!(
            error_of("--- sql\nSELECT 1\n--- bogus\n"),
            "bad.test:3: unknown section '--- bogus'"
        );
        assert_eq!(
            error_of("--- config\nnovalue\n--- sql\nSELECT 1\n"),
            "bad.test:2: expected 'key = value' in the config section"
        );
        assert_eq!(
            error_of("# only\n"),
            "bad.test:1: missing '--- sql' section"
        );
        assert_eq!(
            error_of("--- sql\nSELECT 1\n--- expected (flink 2.3.0)\n--- sql\nSELECT 2\n"),
            "bad.test:4: duplicate section '--- sql'"
        );
        assert_eq!(
            error_of("--- expected (flink 2.3.0)\n--- sql\nSELECT 1\n"),
            "bad.test:2: '--- sql' must come before the generated sections"
        );
        assert_eq!(
            error_of("--- sql\nSELECT 1\n--- expected\n"),
            "bad.test:3: '--- expected' needs the Flink version, e.g. '(flink 2.3.0)'"
        );
        assert_eq!(
            error_of("--- options\nordered = maybe\n--- sql\nSELECT 1\n"),
            "bad.test:1: option 'ordered' must be true or false"
        );
        assert_eq!(
            error_of("--- input a-b\nx\n--- sql\nSELECT 1\n"),
            "bad.test:1: '--- input' needs a name made of letters, digits and '_'"
        );
        assert_eq!(
            error_of("--- sql\n\n"),
            "bad.test:2: the sql section holds no statement"
        );
        assert_eq!(
            error_of("--- sql\nEXECUTE STATEMENT SET BEGIN\nINSERT INTO t VALUES (1);\n"),
            "bad.test:2: EXECUTE STATEMENT SET is missing its 'END;'"
        );
        assert_eq!(
            error_of("--- options\nkey = nope\n--- sql\nSELECT 1\n--- columns (flink 2.3.0)\na: INT\n--- expected (flink 2.3.0)\n"),
            "bad.test:1: key column 'nope' is not a result column"
        );
    }

    #[test]
    fn unknown_placeholder_is_an_error() {
        let case = Case::parse("x.test", "--- sql\nSELECT '${nope}'\n").unwrap();
        let err = case.statements_with_paths(&BTreeMap::new()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "x.test:2: '${nope}' names no '--- input nope' section"
        );
    }
}
