//! The session catalog: the `CREATE` statements and `SET` options in force, kept as SQL text.
//!
//! Riffle plans a whole script at once, so the catalog does not hold resolved schemas: a job is
//! planned from the catalog's [`Catalog::prelude`] followed by its statement. That keeps one
//! source of truth (the planner) for what a table means.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What a catalog entry declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// `CREATE TABLE`
    Table,
    /// `CREATE VIEW`
    View,
    /// `CREATE FUNCTION`
    Function,
}

/// One declared object with the statement that declared it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogEntry {
    /// Object name as written (its last part, without quotes).
    pub name: String,
    /// Table, view or function.
    pub kind: EntryKind,
    /// The declaring statement (without `;`).
    pub ddl: String,
}

/// The session's declarations and configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Catalog {
    /// Declarations in the order they were made (views may use earlier tables).
    pub entries: Vec<CatalogEntry>,
    /// `SET` options in force.
    pub config: BTreeMap<String, String>,
}

impl Catalog {
    /// The entry named `name` of `kind` (names compare case-insensitively, as Flink's default
    /// catalog does for lookups in the SQL client).
    pub fn find(&self, kind: EntryKind, name: &str) -> Option<&CatalogEntry> {
        self.entries
            .iter()
            .find(|e| e.kind == kind && e.name.eq_ignore_ascii_case(name))
    }

    /// The table or view named `name`.
    pub fn relation(&self, name: &str) -> Option<&CatalogEntry> {
        self.find(EntryKind::Table, name)
            .or_else(|| self.find(EntryKind::View, name))
    }

    /// Adds a declaration; fails when a table or view (or a function) of that name exists.
    pub fn add(&mut self, entry: CatalogEntry) -> Result<(), String> {
        let clash = match entry.kind {
            EntryKind::Function => self.find(EntryKind::Function, &entry.name),
            EntryKind::Table | EntryKind::View => self.relation(&entry.name),
        };
        if let Some(existing) = clash {
            return Err(format!(
                "{} '{}' already exists in the session",
                kind_name(existing.kind),
                existing.name
            ));
        }
        self.entries.push(entry);
        Ok(())
    }

    /// Removes the declaration of `name` of `kind`; false when there is none.
    pub fn remove(&mut self, kind: EntryKind, name: &str) -> bool {
        let before = self.entries.len();
        self.entries
            .retain(|e| !(e.kind == kind && e.name.eq_ignore_ascii_case(name)));
        self.entries.len() != before
    }

    /// Names of tables and views, sorted (`SHOW TABLES`).
    pub fn relation_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .entries
            .iter()
            .filter(|e| e.kind != EntryKind::Function)
            .map(|e| e.name.clone())
            .collect();
        names.sort();
        names
    }

    /// The SQL that re-creates this catalog: `SET`s, then declarations in order. Every
    /// statement ends with `;` and a newline.
    pub fn prelude(&self) -> String {
        let mut out = String::new();
        for (key, value) in &self.config {
            out.push_str(&format!(
                "SET '{}' = '{}';\n",
                key.replace('\'', "''"),
                value.replace('\'', "''")
            ));
        }
        for entry in &self.entries {
            out.push_str(&entry.ddl);
            out.push_str(";\n");
        }
        out
    }
}

/// `table`, `view`, `function`.
pub fn kind_name(kind: EntryKind) -> &'static str {
    match kind {
        EntryKind::Table => "table",
        EntryKind::View => "view",
        EntryKind::Function => "function",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(name: &str) -> CatalogEntry {
        CatalogEntry {
            name: name.to_string(),
            kind: EntryKind::Table,
            ddl: format!("CREATE TABLE {name} (a INT) WITH ('connector' = 'datagen')"),
        }
    }

    #[test]
    fn names_clash_case_insensitively_and_drop_removes() {
        let mut c = Catalog::default();
        c.add(table("Orders")).expect("first table");
        assert!(c.add(table("orders")).is_err());
        assert_eq!(c.relation_names(), vec!["Orders"]);
        assert!(c.remove(EntryKind::Table, "ORDERS"));
        assert!(!c.remove(EntryKind::Table, "orders"));
    }

    #[test]
    fn prelude_sets_then_declarations() {
        let mut c = Catalog::default();
        c.add(table("t")).expect("table");
        c.config.insert("pipeline.name".into(), "it's".into());
        assert_eq!(
            c.prelude(),
            "SET 'pipeline.name' = 'it''s';\nCREATE TABLE t (a INT) WITH ('connector' = 'datagen');\n"
        );
    }
}
