//! The tables of a job as migrate and export see them: connector, option style, effective options
//! (after `LIKE`), and roles (read, written) from how the job's statements use them.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;

use riffle_dialects::Role;
use riffle_sql::ast::{CreateTable, LikeFeature, LikeStrategy, Script, StatementKind};
use sqlparser::ast::{ObjectName, Query, Visit, Visitor};

/// How a table names its connector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// `'connector' = '...'`.
    Current,
    /// rsqlDB's unquoted `type = '...'`.
    Rsqldb,
    /// Flink's pre-1.11 `'connector.type' = '...'`.
    ConnectorType,
}

/// What the job says about one table.
#[derive(Debug, Clone)]
pub(crate) struct TableInfo {
    /// The connector identifier, own or from the `LIKE` base.
    pub connector: Option<String>,
    /// How the table (or its base) names it.
    pub style: Style,
    /// Options after `LIKE` merging (base options overridden by the table's own).
    pub options: BTreeMap<String, String>,
    /// Roles from the job's statements (and from tables derived from it with `LIKE`).
    pub roles: BTreeSet<RoleKey>,
}

/// [`Role`] as an ordered set key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum RoleKey {
    Source,
    Sink,
}

impl RoleKey {
    pub fn role(self) -> Role {
        match self {
            RoleKey::Source => Role::Source,
            RoleKey::Sink => Role::Sink,
        }
    }
}

/// The tables of a script, by name (the last part of the name, as Flink compares it).
#[derive(Debug, Default)]
pub(crate) struct Tables {
    pub by_name: BTreeMap<String, TableInfo>,
}

/// The last part of an object name, unquoted.
pub(crate) fn simple_name(name: &ObjectName) -> String {
    name.0
        .last()
        .and_then(|p| p.as_ident())
        .map(|i| i.value.clone())
        .unwrap_or_default()
}

impl Tables {
    /// Collects every `CREATE TABLE` and every use of a table by the statements.
    pub fn collect(script: &Script) -> Tables {
        let mut tables = Tables::default();
        let mut like_edges: Vec<(String, String)> = Vec::new();
        let mut reads: BTreeSet<String> = BTreeSet::new();
        let mut writes: BTreeSet<String> = BTreeSet::new();
        for statement in &script.statements {
            collect_uses(&statement.kind, &mut reads, &mut writes);
            if let StatementKind::CreateTable(table) = &statement.kind {
                let name = simple_name(&table.name);
                if let Some(like) = &table.like {
                    like_edges.push((name.clone(), simple_name(&like.source)));
                }
                let info = tables.info_of(table);
                tables.by_name.insert(name, info);
            }
        }
        for (name, info) in tables.by_name.iter_mut() {
            if reads.contains(name) {
                info.roles.insert(RoleKey::Source);
            }
            if writes.contains(name) {
                info.roles.insert(RoleKey::Sink);
            }
        }
        // A LIKE base is used the way the tables derived from it are (derivations may chain).
        for _ in 0..like_edges.len() {
            for (derived, base) in &like_edges {
                let roles = tables
                    .by_name
                    .get(derived)
                    .map(|t| t.roles.clone())
                    .unwrap_or_default();
                if let Some(b) = tables.by_name.get_mut(base) {
                    b.roles.extend(roles);
                }
            }
        }
        tables
    }

    /// The table's connector, style and merged options.
    fn info_of(&self, table: &CreateTable) -> TableInfo {
        let base = table
            .like
            .as_ref()
            .filter(|like| includes_options(&like.options))
            .and_then(|like| self.by_name.get(&simple_name(&like.source)));
        let mut options = base.map(|b| b.options.clone()).unwrap_or_default();
        for o in &table.options {
            options.insert(o.key.clone(), o.value.clone());
        }
        let own_style = table.options.iter().find_map(|o| {
            if o.key == "connector" {
                Some((Style::Current, o.value.clone()))
            } else if o.key_unquoted && o.key.eq_ignore_ascii_case("type") {
                Some((Style::Rsqldb, o.value.clone()))
            } else if o.key == "connector.type" {
                Some((Style::ConnectorType, o.value.clone()))
            } else {
                None
            }
        });
        let (style, connector) = match own_style {
            Some((style, connector)) => (style, Some(connector)),
            None => (
                base.map_or(Style::Current, |b| b.style),
                base.and_then(|b| b.connector.clone()),
            ),
        };
        TableInfo {
            connector,
            style,
            options,
            roles: BTreeSet::new(),
        }
    }

    /// The info of a table by its name.
    pub fn get(&self, name: &ObjectName) -> Option<&TableInfo> {
        self.by_name.get(&simple_name(name))
    }
}

impl TableInfo {
    /// The roles migrate writes options for: the job's uses, else what the table's own options
    /// say (a consumer group means a source), else both.
    pub fn effective_roles(&self, hint: impl Fn(&str) -> Option<Role>) -> Vec<Role> {
        if !self.roles.is_empty() {
            return self.roles.iter().map(|r| r.role()).collect();
        }
        let mut hinted: Vec<Role> = Vec::new();
        for key in self.options.keys() {
            if let Some(role) = hint(key) {
                if !hinted.contains(&role) {
                    hinted.push(role);
                }
            }
        }
        if hinted.is_empty() {
            vec![Role::Source, Role::Sink]
        } else {
            hinted.sort_by_key(|r| matches!(r, Role::Sink));
            hinted
        }
    }
}

/// Whether a `LIKE` clause copies the base table's options (Flink's default does).
fn includes_options(options: &[riffle_sql::ast::LikeOption]) -> bool {
    let mut include = true;
    for o in options {
        if matches!(o.feature, LikeFeature::Options | LikeFeature::All) {
            include = o.strategy != LikeStrategy::Excluding;
        }
    }
    include
}

/// Records the tables a statement reads and writes.
fn collect_uses(kind: &StatementKind, reads: &mut BTreeSet<String>, writes: &mut BTreeSet<String>) {
    fn read(q: &Query, reads: &mut BTreeSet<String>) {
        let _ = q.visit(&mut Relations(reads));
    }
    match kind {
        StatementKind::Insert(i) => {
            writes.insert(simple_name(&i.table));
            read(&i.query, reads);
        }
        StatementKind::StatementSet(set) => {
            for i in &set.inserts {
                writes.insert(simple_name(&i.table));
                read(&i.query, reads);
            }
        }
        StatementKind::Query(q) => read(q, reads),
        StatementKind::CreateView(v) => read(&v.query, reads),
        StatementKind::CreateTable(t) => {
            if let Some(q) = &t.as_query {
                read(q, reads);
            }
        }
        StatementKind::Explain(e) => collect_uses(&e.statement.kind, reads, writes),
        _ => {}
    }
}

/// Collects the names of relations a query reads.
struct Relations<'a>(&'a mut BTreeSet<String>);

impl Visitor for Relations<'_> {
    type Break = ();

    fn pre_visit_relation(&mut self, relation: &ObjectName) -> ControlFlow<()> {
        self.0.insert(simple_name(relation));
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &sqlparser::ast::Expr) -> ControlFlow<()> {
        // `TABLE t` arguments of window TVFs read `t`.
        if let Some(arg) = riffle_sql::dialect::TableArgument::from_expr(expr) {
            self.0.insert(simple_name(&arg.name));
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tables(sql: &str) -> Tables {
        let parsed = riffle_sql::parse_script(sql);
        assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
        Tables::collect(&parsed.script)
    }

    fn roles(t: &Tables, name: &str) -> Vec<RoleKey> {
        t.by_name
            .get(name)
            .map(|i| i.roles.iter().copied().collect())
            .unwrap_or_default()
    }

    #[test]
    fn roles_follow_reads_writes_tvfs_and_like() {
        let t = tables(
            "CREATE TABLE a (x INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH ('connector' = 'kafka', 'topic' = 'a');
             CREATE TABLE b WITH ('topic' = 'b') LIKE a;
             CREATE TABLE c (x INT) WITH (type = 'rocketmq');
             CREATE TABLE d (x INT) WITH ('connector.type' = 'kafka');
             INSERT INTO c SELECT x FROM TABLE(TUMBLE(TABLE b, DESCRIPTOR(ts), INTERVAL '1' MINUTE));
             INSERT INTO d SELECT x FROM c;",
        );
        assert_eq!(roles(&t, "a"), vec![RoleKey::Source]);
        assert_eq!(roles(&t, "b"), vec![RoleKey::Source]);
        assert_eq!(roles(&t, "c"), vec![RoleKey::Source, RoleKey::Sink]);
        assert_eq!(roles(&t, "d"), vec![RoleKey::Sink]);
        let b = &t.by_name["b"];
        assert_eq!(b.connector.as_deref(), Some("kafka"));
        assert_eq!(b.options.get("topic").map(String::as_str), Some("b"));
        assert_eq!(t.by_name["c"].style, Style::Rsqldb);
        assert_eq!(t.by_name["d"].style, Style::ConnectorType);
    }

    #[test]
    fn unused_tables_take_roles_from_their_options() {
        let t = tables(
            "CREATE TABLE a (x INT) WITH ('connector' = 'kafka', 'properties.group.id' = 'g');",
        );
        let hint = |k: &str| (k == "properties.group.id").then_some(Role::Source);
        assert_eq!(t.by_name["a"].effective_roles(hint), vec![Role::Source]);
        assert_eq!(
            t.by_name["a"].effective_roles(|_| None),
            vec![Role::Source, Role::Sink]
        );
    }
}
