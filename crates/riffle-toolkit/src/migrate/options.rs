//! Editing one `WITH (...)` clause: options are renamed, revalued, removed and added on a model of
//! the clause, which then becomes text patches on the original (the other options, their order,
//! layout and comments stay as written).

use riffle_sql::ast::TableOption;
use riffle_sql::Span;
use sqlparser::tokenizer::Token;

use super::patch::Patch;
use super::report::{Change, ManualItem};
use super::source::SourceText;

/// Changes and items for a human, collected while rewriting one job.
#[derive(Debug, Default)]
pub(crate) struct Log {
    pub changes: Vec<Change>,
    pub manual: Vec<ManualItem>,
}

impl Log {
    /// Records a change.
    pub fn change(
        &mut self,
        code: impl Into<String>,
        span: Span,
        message: impl Into<String>,
        note: Option<String>,
    ) {
        self.changes.push(Change {
            code: code.into(),
            message: message.into(),
            span,
            note,
        });
    }

    /// Records an item left for a human.
    pub fn manual(
        &mut self,
        code: impl Into<String>,
        span: Span,
        message: impl Into<String>,
        reason: impl Into<String>,
    ) {
        self.manual.push(ManualItem {
            code: code.into(),
            message: message.into(),
            span,
            reason: reason.into(),
        });
    }
}

/// A SQL string literal.
pub(crate) fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// The span of a whole option (`'key' = 'value'`).
pub(crate) fn option_span(option: &TableOption) -> Span {
    Span::new(option.key_span.start, option.value_span.end)
}

/// One option of the clause as it will be written.
#[derive(Debug, Clone)]
struct Slot {
    key: String,
    value: String,
    deleted: bool,
    /// Settled (rewritten or left for a human): later rules leave it alone.
    settled: bool,
    /// Options added right after this one.
    inserts: Vec<(String, String)>,
}

/// The model of one `WITH` clause.
#[derive(Debug)]
pub(crate) struct OptionEdit<'a> {
    options: &'a [TableOption],
    slots: Vec<Slot>,
}

impl<'a> OptionEdit<'a> {
    /// Starts from the options as written.
    pub fn new(options: &'a [TableOption]) -> OptionEdit<'a> {
        let slots = options
            .iter()
            .map(|o| Slot {
                key: o.key.clone(),
                value: o.value.clone(),
                deleted: false,
                settled: false,
                inserts: Vec::new(),
            })
            .collect();
        OptionEdit { options, slots }
    }

    /// The options as written.
    pub fn original(&self) -> &'a [TableOption] {
        self.options
    }

    /// Number of written options.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// The current key of option `i`.
    pub fn key(&self, i: usize) -> &str {
        self.slots.get(i).map_or("", |s| s.key.as_str())
    }

    /// The current value of option `i`.
    pub fn value(&self, i: usize) -> &str {
        self.slots.get(i).map_or("", |s| s.value.as_str())
    }

    /// Whether option `i` is removed.
    pub fn is_deleted(&self, i: usize) -> bool {
        self.slots.get(i).is_none_or(|s| s.deleted)
    }

    /// Whether option `i` is live and not settled by an earlier rule.
    pub fn is_open(&self, i: usize) -> bool {
        self.slots.get(i).is_some_and(|s| !s.deleted && !s.settled)
    }

    /// Marks option `i` settled: later rules leave it alone.
    pub fn settle(&mut self, i: usize) {
        if let Some(s) = self.slots.get_mut(i) {
            s.settled = true;
        }
    }

    /// The index of the live option with current key `key`.
    pub fn find(&self, key: &str) -> Option<usize> {
        self.slots.iter().position(|s| !s.deleted && s.key == key)
    }

    /// Whether `key` is set, as a live option or an added one.
    pub fn has(&self, key: &str) -> bool {
        self.find(key).is_some()
            || self
                .slots
                .iter()
                .any(|s| s.inserts.iter().any(|(k, _)| k == key))
    }

    /// The current value of `key`, live or added.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.slots.iter().find_map(|s| {
            if !s.deleted && s.key == key {
                Some(s.value.as_str())
            } else {
                s.inserts
                    .iter()
                    .find(|(k, _)| k == key)
                    .map(|(_, v)| v.as_str())
            }
        })
    }

    /// Renames option `i`.
    pub fn rename(&mut self, i: usize, key: impl Into<String>) {
        if let Some(s) = self.slots.get_mut(i) {
            s.key = key.into();
        }
    }

    /// Changes the value of option `i`.
    pub fn set_value(&mut self, i: usize, value: impl Into<String>) {
        if let Some(s) = self.slots.get_mut(i) {
            s.value = value.into();
        }
    }

    /// Removes option `i` (its added options stay).
    pub fn delete(&mut self, i: usize) {
        if let Some(s) = self.slots.get_mut(i) {
            s.deleted = true;
        }
    }

    /// Adds an option right after option `i`.
    pub fn insert_after(&mut self, i: usize, key: impl Into<String>, value: impl Into<String>) {
        if let Some(s) = self.slots.get_mut(i) {
            s.inserts.push((key.into(), value.into()));
        }
    }

    /// Adds an option after the last option.
    pub fn append(&mut self, key: impl Into<String>, value: impl Into<String>) {
        if let Some(last) = self.slots.len().checked_sub(1) {
            self.insert_after(last, key, value);
        }
    }

    /// The text patches that turn the written clause into the edited one.
    pub fn patches(&self, src: &SourceText) -> Vec<Patch> {
        let mut patches = Vec::new();
        let alive: Vec<usize> = (0..self.slots.len())
            .filter(|&i| !self.is_deleted(i))
            .collect();
        let Some(&last_alive) = alive.last() else {
            // Every option removed: only possible for option lists migrate never empties.
            return patches;
        };
        let comma_after = |i: usize| {
            let end = src.range(self.options[i].value_span).end;
            src.next_significant(end)
                .filter(|t| t.token == Token::Comma)
                .map(|t| t.range.clone())
        };
        for (i, (slot, option)) in self.slots.iter().zip(self.options).enumerate() {
            let key = src.range(option.key_span);
            let value = src.range(option.value_span);
            if slot.deleted {
                let end = comma_after(i).map_or(value.end, |c| c.end);
                let lines = src.whole_lines(key.start..end);
                let range = if lines != (key.start..end) {
                    lines
                } else if i > last_alive {
                    // `..., 'k' = 'v')`: the blanks after the previous comma go too.
                    src.prev_significant(key.start)
                        .map_or(key.start, |t| t.range.end)..end
                } else {
                    // `'k' = 'v', 'next' ...`: the blanks before the next option go too.
                    let rest = src.slice(end..src.text.len());
                    key.start..end + (rest.len() - rest.trim_start_matches([' ', '\t']).len())
                };
                patches.push(Patch::delete(range));
                continue;
            }
            if slot.key != option.key || option.key_unquoted {
                patches.push(Patch::replace(key, quote(&slot.key)));
            }
            if slot.value != option.value {
                patches.push(Patch::replace(value, quote(&slot.value)));
            }
        }
        // Options removed after the last live one: its comma goes too.
        if last_alive + 1 < self.slots.len() {
            if let Some(comma) = comma_after(last_alive) {
                patches.push(Patch::delete(comma));
            }
        }
        for (i, slot) in self.slots.iter().enumerate() {
            if slot.inserts.is_empty() {
                continue;
            }
            match alive.iter().rev().find(|&&a| a <= i) {
                Some(&anchor) => {
                    let sep = self.separator(src, anchor);
                    let text: String = slot
                        .inserts
                        .iter()
                        .map(|(k, v)| format!("{sep}{}", self.entry(src, anchor, k, v)))
                        .collect();
                    let at = src.range(self.options[anchor].value_span).end;
                    patches.push(Patch::insert(at, text));
                }
                None => {
                    // Nothing live before: put the options in front of the first live one.
                    let anchor = alive[0];
                    let sep = self.separator(src, anchor);
                    let text: String = slot
                        .inserts
                        .iter()
                        .map(|(k, v)| format!("{}{sep}", self.entry(src, anchor, k, v)))
                        .collect();
                    let at = src.range(self.options[anchor].key_span).start;
                    patches.push(Patch::insert(at, text));
                }
            }
        }
        patches
    }

    /// `'key' = 'value'` written with the anchor's spacing around `=`.
    fn entry(&self, src: &SourceText, anchor: usize, key: &str, value: &str) -> String {
        let o = &self.options[anchor];
        let between = src.slice(src.range(o.key_span).end..src.range(o.value_span).start);
        let eq = if between.trim() == "=" && !between.contains('\n') {
            between
        } else {
            " = "
        };
        format!("{}{eq}{}", quote(key), quote(value))
    }

    /// What goes before an option added after `anchor`: a comma and the anchor's line break and
    /// indentation when the anchor starts its own line, else `, `.
    fn separator(&self, src: &SourceText, anchor: usize) -> String {
        let key = src.range(self.options[anchor].key_span);
        if src.is_blank(src.line_start(key.start)..key.start) {
            format!(",\n{}", src.indent_of(key.start))
        } else {
            ", ".to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use riffle_sql::ast::StatementKind;

    /// Parses one CREATE TABLE, edits its options with `edit`, and returns the new text.
    fn edited(sql: &str, edit: impl FnOnce(&mut OptionEdit)) -> String {
        let parsed = riffle_sql::parse_script(sql);
        let Some(StatementKind::CreateTable(table)) =
            parsed.script.statements.first().map(|s| &s.kind)
        else {
            panic!("not a CREATE TABLE: {sql}");
        };
        let src = SourceText::new(sql).unwrap_or_else(|| panic!("tokenizes"));
        let mut e = OptionEdit::new(&table.options);
        edit(&mut e);
        super::super::patch::apply(sql, &e.patches(&src)).unwrap_or_else(|o| panic!("{o}"))
    }

    const TABLE: &str = "CREATE TABLE t (x INT) WITH (\n    'connector' = 'kafka', -- the bus\n    'topic' = 'a',\n    -- cluster\n    'properties.bootstrap.servers' = 'k:9092',\n    'format' = 'json'\n);";

    #[test]
    fn renames_and_revalues_in_place() {
        let out = edited(TABLE, |e| {
            e.set_value(0, "rocketmq");
            e.rename(1, "rocketmq.source.topic");
        });
        assert!(out.contains("    'connector' = 'rocketmq', -- the bus\n    'rocketmq.source.topic' = 'a',\n    -- cluster\n"), "{out}");
    }

    #[test]
    fn deletes_whole_lines_and_the_last_comma() {
        let out = edited(TABLE, |e| e.delete(2));
        assert_eq!(out, "CREATE TABLE t (x INT) WITH (\n    'connector' = 'kafka', -- the bus\n    'topic' = 'a',\n    -- cluster\n    'format' = 'json'\n);");
        let out = edited(TABLE, |e| {
            e.delete(2);
            e.delete(3);
        });
        assert_eq!(out, "CREATE TABLE t (x INT) WITH (\n    'connector' = 'kafka', -- the bus\n    'topic' = 'a'\n    -- cluster\n);");
    }

    #[test]
    fn inserts_after_with_the_anchor_layout() {
        let out = edited(TABLE, |e| {
            e.insert_after(1, "rocketmq.sink.topic", "a");
            e.append("riffle.changelog-mode", "upsert");
        });
        assert!(
            out.contains("    'topic' = 'a',\n    'rocketmq.sink.topic' = 'a',\n"),
            "{out}"
        );
        assert!(
            out.ends_with("    'format' = 'json',\n    'riffle.changelog-mode' = 'upsert'\n);"),
            "{out}"
        );
        let one_line = edited(
            "CREATE TABLE t (x INT) WITH ('connector'='a', 'k'='v');",
            |e| {
                e.delete(1);
                e.insert_after(1, "n", "it's");
            },
        );
        assert_eq!(
            one_line,
            "CREATE TABLE t (x INT) WITH ('connector'='a', 'n'='it''s');"
        );
    }

    #[test]
    fn quotes_unquoted_keys() {
        let out = edited(
            "CREATE TABLE t (x INT) WITH (type = 'print', topic = 'x');",
            |e| {
                e.rename(0, "connector");
            },
        );
        assert_eq!(
            out,
            "CREATE TABLE t (x INT) WITH ('connector' = 'print', 'topic' = 'x');"
        );
    }
}
