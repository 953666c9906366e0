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

    /// Takes back the changes recorded at `span` whose code starts with `prefix` (a later step
    /// undid them).
    pub fn retract(&mut self, span: Span, prefix: &str) {
        self.changes
            .retain(|c| !(c.span == span && c.code.starts_with(prefix)));
    }

    /// Whether a change with a code starting with `prefix` was recorded at `span`.
    pub fn has_change(&self, span: Span, prefix: &str) -> bool {
        self.changes
            .iter()
            .any(|c| c.span == span && c.code.starts_with(prefix))
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

/// One option of the clause as it will be written: a written option (possibly renamed, revalued
/// or removed) or an added one.
#[derive(Debug, Clone)]
struct Slot {
    key: String,
    value: String,
    /// The written option this is, or (for an added option) the one it follows.
    origin: usize,
    added: bool,
    deleted: bool,
    /// Settled (rewritten or left for a human): later rules of the same pass leave it alone.
    settled: bool,
    /// Left for a human: every later step leaves it alone.
    manual: bool,
}

/// The model of one `WITH` clause. Options are addressed by index in clause order; adding an
/// option shifts the indexes after it, so passes walk the clause with a `while` loop.
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
            .enumerate()
            .map(|(origin, o)| Slot {
                key: o.key.clone(),
                value: o.value.clone(),
                origin,
                added: false,
                deleted: false,
                settled: false,
                manual: false,
            })
            .collect();
        OptionEdit { options, slots }
    }

    /// Number of options (written and added).
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// The written option of option `i`, or the one an added option follows.
    fn written(&self, i: usize) -> Option<&'a TableOption> {
        self.slots.get(i).and_then(|s| self.options.get(s.origin))
    }

    /// The option as written, for a written option.
    pub fn written_option(&self, i: usize) -> Option<&'a TableOption> {
        self.written(i).filter(|_| !self.is_added(i))
    }

    /// The span of option `i` in the original (for an added option: the one it follows).
    pub fn span(&self, i: usize) -> Span {
        self.written(i).map(option_span).unwrap_or_default()
    }

    /// Whether option `i` was added.
    pub fn is_added(&self, i: usize) -> bool {
        self.slots.get(i).is_some_and(|s| s.added)
    }

    /// The current key of option `i`.
    pub fn key(&self, i: usize) -> &str {
        self.slots.get(i).map_or("", |s| s.key.as_str())
    }

    /// The current value of option `i`.
    pub fn value(&self, i: usize) -> &str {
        self.slots.get(i).map_or("", |s| s.value.as_str())
    }

    /// Whether option `i` is live and not settled by an earlier rule of this pass.
    pub fn is_open(&self, i: usize) -> bool {
        self.slots.get(i).is_some_and(|s| !s.deleted && !s.settled)
    }

    /// Whether option `i` is live and not left for a human (settled or not).
    pub fn is_live(&self, i: usize) -> bool {
        self.slots.get(i).is_some_and(|s| !s.deleted && !s.manual)
    }

    /// Marks option `i` settled: later rules of this pass leave it alone.
    pub fn settle(&mut self, i: usize) {
        if let Some(s) = self.slots.get_mut(i) {
            s.settled = true;
        }
    }

    /// Marks option `i` left for a human (and settled).
    pub fn leave(&mut self, i: usize) {
        if let Some(s) = self.slots.get_mut(i) {
            s.settled = true;
            s.manual = true;
        }
    }

    /// The index of the live option with current key `key`.
    pub fn find(&self, key: &str) -> Option<usize> {
        self.slots.iter().position(|s| !s.deleted && s.key == key)
    }

    /// Whether `key` is set by a live option.
    pub fn has(&self, key: &str) -> bool {
        self.find(key).is_some()
    }

    /// The current value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.find(key)
            .and_then(|i| self.slots.get(i))
            .map(|s| s.value.as_str())
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

    /// Removes option `i`.
    pub fn delete(&mut self, i: usize) {
        if let Some(s) = self.slots.get_mut(i) {
            s.deleted = true;
        }
    }

    /// Adds a (settled) option after option `i` and the options already added after it; returns
    /// its index.
    pub fn insert_after(
        &mut self,
        i: usize,
        key: impl Into<String>,
        value: impl Into<String>,
    ) -> usize {
        let Some(origin) = self.slots.get(i).map(|s| s.origin) else {
            return i;
        };
        let mut at = i + 1;
        while self
            .slots
            .get(at)
            .is_some_and(|s| s.added && s.origin == origin)
        {
            at += 1;
        }
        self.slots.insert(
            at,
            Slot {
                key: key.into(),
                value: value.into(),
                origin,
                added: true,
                deleted: false,
                settled: true,
                manual: false,
            },
        );
        at
    }

    /// Adds an option after the last option; returns its index.
    pub fn append(&mut self, key: impl Into<String>, value: impl Into<String>) -> usize {
        match self.slots.len().checked_sub(1) {
            Some(last) => self.insert_after(last, key, value),
            None => 0,
        }
    }

    /// The text patches that turn the written clause into the edited one.
    pub fn patches(&self, src: &SourceText) -> Vec<Patch> {
        let mut patches = Vec::new();
        let written: Vec<&Slot> = self.slots.iter().filter(|s| !s.added).collect();
        let alive: Vec<usize> = written
            .iter()
            .filter(|s| !s.deleted)
            .map(|s| s.origin)
            .collect();
        let (Some(&first_alive), Some(&last_alive)) = (alive.first(), alive.last()) else {
            // Every written option removed: only possible for clauses migrate never empties.
            return patches;
        };
        let comma_after = |i: usize| {
            let end = src.range(self.options[i].value_span).end;
            src.next_significant(end)
                .filter(|t| t.token == Token::Comma)
                .map(|t| t.range.clone())
        };
        for (slot, option) in written.iter().zip(self.options) {
            let i = slot.origin;
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
        if last_alive + 1 < self.options.len() {
            if let Some(comma) = comma_after(last_alive) {
                patches.push(Patch::delete(comma));
            }
        }
        // Added options follow the live written option at or before their origin.
        let mut groups: Vec<(usize, bool, String)> = Vec::new();
        for slot in self.slots.iter().filter(|s| s.added && !s.deleted) {
            let (anchor, before) = match alive.iter().rev().find(|&&a| a <= slot.origin) {
                Some(&a) => (a, false),
                None => (first_alive, true),
            };
            let sep = self.separator(src, anchor);
            let entry = self.entry(src, anchor, &slot.key, &slot.value);
            let text = if before {
                format!("{entry}{sep}")
            } else {
                format!("{sep}{entry}")
            };
            match groups.iter_mut().find(|g| g.0 == anchor && g.1 == before) {
                Some(g) => g.2.push_str(&text),
                None => groups.push((anchor, before, text)),
            }
        }
        for (anchor, before, text) in groups {
            let o = &self.options[anchor];
            let at = if before {
                src.range(o.key_span).start
            } else {
                src.range(o.value_span).end
            };
            patches.push(Patch::insert(at, text));
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
