//! Cutting typed or scripted text into complete statements.
//!
//! A statement ends at a `;` outside quotes (`'..'`, `".."`, `` `..` ``) and comments (`-- ..`,
//! `/* .. */`). A `BEGIN STATEMENT SET;` (or `EXECUTE STATEMENT SET BEGIN`) block is one
//! statement up to its `END;`, since its inserts only make sense together.

/// Collects text (lines typed in a REPL, a script file) and hands out complete statements.
#[derive(Debug, Default)]
pub struct StatementSplitter {
    buffer: String,
}

impl StatementSplitter {
    /// An empty splitter.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends `text` and returns the statements it completed (trimmed, without their `;`).
    pub fn push(&mut self, text: &str) -> Vec<String> {
        self.buffer.push_str(text);
        let mut statements = Vec::new();
        let mut start = 0;
        let mut set_block = false;
        for end in statement_ends(&self.buffer) {
            let statement = self.buffer[start..end].trim();
            if !set_block && starts_statement_set(statement) {
                set_block = true;
            }
            if set_block && !ends_statement_set(statement) {
                // Keep collecting the block's inserts.
                continue;
            }
            set_block = false;
            let code = without_leading_comments(statement);
            if !code.is_empty() {
                statements.push(code.to_string());
            }
            start = end + 1;
        }
        self.buffer.drain(..start);
        statements
    }

    /// True when no incomplete statement is pending (only blanks and comments).
    pub fn is_empty(&self) -> bool {
        is_blank(&self.buffer)
    }

    /// Takes what is pending (a script's last statement without `;`).
    pub fn finish(&mut self) -> Option<String> {
        let rest = std::mem::take(&mut self.buffer);
        let code = without_leading_comments(rest.trim());
        (!code.is_empty()).then(|| code.to_string())
    }
}

/// Byte positions of every statement-ending `;` in `text`.
fn statement_ends(text: &str) -> Vec<usize> {
    #[derive(PartialEq)]
    enum State {
        Code,
        Quoted(u8),
        LineComment,
        BlockComment,
    }
    let bytes = text.as_bytes();
    let mut state = State::Code;
    let mut ends = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let next = bytes.get(i + 1).copied();
        match state {
            State::Code => match b {
                b'\'' | b'"' | b'`' => state = State::Quoted(b),
                b'-' if next == Some(b'-') => state = State::LineComment,
                b'/' if next == Some(b'*') => {
                    state = State::BlockComment;
                    i += 1;
                }
                b';' => ends.push(i),
                _ => {}
            },
            // A doubled quote inside a quoted text is an escaped quote: leaving and re-entering
            // the quoted state handles it.
            State::Quoted(q) if b == q => state = State::Code,
            State::Quoted(_) => {}
            State::LineComment if b == b'\n' => state = State::Code,
            State::LineComment => {}
            State::BlockComment if b == b'*' && next == Some(b'/') => {
                state = State::Code;
                i += 1;
            }
            State::BlockComment => {}
        }
        i += 1;
    }
    ends
}

/// The statement's words, upper-cased, ignoring comments (enough to recognise a few keywords).
fn leading_words(statement: &str, count: usize) -> Vec<String> {
    let code: String = statement
        .lines()
        .map(|line| line.split("--").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join(" ");
    code.split_whitespace()
        .take(count)
        .map(str::to_ascii_uppercase)
        .collect()
}

fn starts_statement_set(statement: &str) -> bool {
    let words = leading_words(statement, 3);
    words == ["BEGIN", "STATEMENT", "SET"] || words == ["EXECUTE", "STATEMENT", "SET"]
}

/// The last part of a statement-set block is a lone `END`.
fn ends_statement_set(statement: &str) -> bool {
    let last = statement.rsplit(';').next().unwrap_or("");
    leading_words(last, 2) == ["END"]
}

/// `text` without its leading whitespace and comments: the statement's code starts it, so
/// a client recognises its keywords (`QUIT`, `SET`, `STOP JOB`).
fn without_leading_comments(text: &str) -> &str {
    let mut rest = text.trim_start();
    loop {
        if let Some(after) = rest.strip_prefix("--") {
            rest = after.split_once('\n').map_or("", |(_, r)| r).trim_start();
        } else if let Some(after) = rest.strip_prefix("/*") {
            rest = after.split_once("*/").map_or("", |(_, r)| r).trim_start();
        } else {
            return rest;
        }
    }
}

/// True when `text` holds nothing but whitespace and comments.
fn is_blank(text: &str) -> bool {
    without_leading_comments(text).is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_end_at_semicolons_outside_quotes_and_comments() {
        let mut s = StatementSplitter::new();
        assert!(s.push("SELECT 'a;b', \"c;\" -- d;\n").is_empty());
        assert!(!s.is_empty());
        assert_eq!(
            s.push("FROM t /* ; */;  SET 'k' = 'v';\n"),
            vec![
                "SELECT 'a;b', \"c;\" -- d;\nFROM t /* ; */".to_string(),
                "SET 'k' = 'v'".to_string()
            ]
        );
        assert!(s.is_empty());
    }

    #[test]
    fn escaped_quotes_stay_inside_the_literal() {
        let mut s = StatementSplitter::new();
        assert_eq!(s.push("SELECT 'it''s;';"), vec!["SELECT 'it''s;'"]);
    }

    #[test]
    fn a_statement_set_block_is_one_statement() {
        let mut s = StatementSplitter::new();
        assert!(s
            .push("BEGIN STATEMENT SET;\nINSERT INTO a SELECT 1;\n")
            .is_empty());
        assert_eq!(
            s.push("INSERT INTO b SELECT 2;\nEND;"),
            vec!["BEGIN STATEMENT SET;\nINSERT INTO a SELECT 1;\nINSERT INTO b SELECT 2;\nEND"]
        );
    }

    #[test]
    fn blank_statements_and_trailing_text() {
        let mut s = StatementSplitter::new();
        assert!(s.push(";; -- only a comment\n").is_empty());
        assert!(s.is_empty());
        assert!(s.push("SHOW TABLES").is_empty());
        assert_eq!(s.finish(), Some("SHOW TABLES".to_string()));
        assert_eq!(s.finish(), None);
    }
}
