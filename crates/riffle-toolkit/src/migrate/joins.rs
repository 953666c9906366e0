//! Lookup joins written rsqlDB's way, `JOIN dim FOR SYSTEM_TIME AS OF PROCTIME()`: Flink takes
//! only a processing-time attribute of the probe side there (`t.proc_time`, declared
//! `proc_time AS PROCTIME()` in its table and carried through views), so migrate reports them.

use std::ops::ControlFlow;

use riffle_sql::ast::Script;
use riffle_sql::Span;
use sqlparser::ast::{Expr, Spanned, TableFactor, TableVersion, Visit, Visitor};

use super::options::Log;
use super::tables::simple_name;

/// Reports every `FOR SYSTEM_TIME AS OF PROCTIME()` of the script.
pub(crate) fn report_proctime_calls(script: &Script, log: &mut Log) {
    let mut walker = Walker { log };
    for statement in &script.statements {
        let _ = statement_queries(&statement.kind, &mut walker);
    }
}

fn statement_queries(
    kind: &riffle_sql::ast::StatementKind,
    walker: &mut Walker,
) -> ControlFlow<()> {
    use riffle_sql::ast::StatementKind as K;
    match kind {
        K::Insert(i) => i.query.visit(walker),
        K::StatementSet(s) => {
            for i in &s.inserts {
                i.query.visit(walker)?;
            }
            ControlFlow::Continue(())
        }
        K::Query(q) => q.visit(walker),
        K::CreateView(v) => v.query.visit(walker),
        K::Explain(e) => statement_queries(&e.statement.kind, walker),
        _ => ControlFlow::Continue(()),
    }
}

struct Walker<'a> {
    log: &'a mut Log,
}

impl Visitor for Walker<'_> {
    type Break = ();

    fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
        if let TableFactor::Table {
            name,
            version: Some(TableVersion::ForSystemTimeAsOf(Expr::Function(f))),
            ..
        } = factor
        {
            if simple_name(&f.name).eq_ignore_ascii_case("PROCTIME") {
                self.log.manual(
                    "query.lookup-join",
                    Span::from(factor.span()),
                    format!("FOR SYSTEM_TIME AS OF PROCTIME() on `{name}`"),
                    "Flink joins on a processing-time attribute of the probe side: declare `proc_time AS PROCTIME()` in its table, carry it through the views in between, and write `FOR SYSTEM_TIME AS OF <probe>.proc_time`; the dimension table must also be a lookup source (a rocketmq topic is not)",
                );
            }
        }
        ControlFlow::Continue(())
    }
}
