//! Showing a running query's result as it changes, in one of the SQL client's result modes.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use riffle_session::materialize::MaterializedTable;
use riffle_session::{QueryHandle, ResultRow};
use tokio::runtime::Runtime;

use crate::render::{cells, changelog_line, TableLayout};

/// How a query's result shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ResultMode {
    /// Every change as a row of a growing table, with its `op` column.
    #[default]
    Tableau,
    /// The materialized result, redrawn in place as it changes.
    Table,
    /// Every change as a `+I[..]` line.
    Changelog,
}

impl ResultMode {
    /// Parses `tableau`, `table` or `changelog` (any case).
    pub fn parse(text: &str) -> Result<Self, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "tableau" => Ok(ResultMode::Tableau),
            "table" => Ok(ResultMode::Table),
            "changelog" => Ok(ResultMode::Changelog),
            other => Err(format!(
                "unknown result mode '{other}' (expected tableau, table or changelog)"
            )),
        }
    }

    /// The mode's name.
    pub fn name(self) -> &'static str {
        match self {
            ResultMode::Tableau => "tableau",
            ResultMode::Table => "table",
            ResultMode::Changelog => "changelog",
        }
    }
}

/// How often a live view wakes up to check for Ctrl-C and redraw.
const TICK: Duration = Duration::from_millis(100);
/// The least time between two redraws of the `table` view.
const REDRAW_EVERY: Duration = Duration::from_millis(250);

/// Shows `query` until it ends or `interrupted` is set (then cancels it); returns the summary
/// line, or the query's failure. `redraw` (a terminal) redraws the `table` view as it changes;
/// otherwise it is printed once at the end.
pub fn show(
    runtime: &Runtime,
    mut query: QueryHandle,
    mode: ResultMode,
    interrupted: &AtomicBool,
    redraw: bool,
) -> Result<String, String> {
    let mut view = View::new(&query, mode, redraw);
    let mut cancelled = false;
    loop {
        if !cancelled && interrupted.swap(false, Ordering::SeqCst) {
            query.cancel();
            cancelled = true;
        }
        let next = runtime.block_on(async { tokio::time::timeout(TICK, query.rows.recv()).await });
        match next {
            Ok(Some(row)) => view.add(&row)?,
            Ok(None) => break,
            Err(_elapsed) => view.tick(),
        }
    }
    let ended = runtime
        .block_on(&mut query.done)
        .map_err(|e| format!("the query's task ended abnormally: {e}"))?;
    view.finish();
    if let Err(e) = ended {
        return Err(format!("query failed: {}", e.message));
    }
    let count = view.changes;
    let noun = if count == 1 { "row" } else { "rows" };
    Ok(if cancelled {
        format!("Query cancelled. Received a total of {count} {noun}")
    } else {
        format!("Received a total of {count} {noun}")
    })
}

/// The state of one live result view.
struct View {
    mode: ResultMode,
    layout: TableLayout,
    names: Vec<String>,
    table: MaterializedTable,
    changes: usize,
    redraw: bool,
    dirty: bool,
    last_draw: Instant,
}

impl View {
    fn new(query: &QueryHandle, mode: ResultMode, redraw: bool) -> Self {
        let with_op = mode == ResultMode::Tableau;
        let mut names: Vec<String> = query.columns.iter().map(|c| c.name.clone()).collect();
        if with_op {
            names.insert(0, "op".to_string());
        }
        let layout = TableLayout::for_columns(&query.columns, with_op);
        if mode == ResultMode::Tableau {
            println!("{}", layout.header(&names));
        }
        Self {
            mode,
            layout,
            names,
            table: MaterializedTable::new(),
            changes: 0,
            redraw,
            dirty: redraw,
            last_draw: Instant::now(),
        }
    }

    fn add(&mut self, row: &ResultRow) -> Result<(), String> {
        self.changes += 1;
        match self.mode {
            ResultMode::Tableau => println!("{}", self.layout.row(&cells(row, true))),
            ResultMode::Changelog => println!("{}", changelog_line(row)),
            ResultMode::Table => {
                self.table.apply(row)?;
                self.dirty = true;
                self.tick();
            }
        }
        Ok(())
    }

    /// Redraws the `table` view when it changed and enough time passed.
    fn tick(&mut self) {
        if self.mode == ResultMode::Table
            && self.redraw
            && self.dirty
            && self.last_draw.elapsed() >= REDRAW_EVERY
        {
            // Clear the screen and draw from its top: the table updates in place.
            print!("\x1b[H\x1b[2J");
            self.draw_table();
            let _ = std::io::stdout().flush();
            self.dirty = false;
            self.last_draw = Instant::now();
        }
    }

    fn finish(&mut self) {
        match self.mode {
            ResultMode::Tableau => println!("{}", self.layout.border()),
            ResultMode::Changelog => {}
            ResultMode::Table => {
                if self.redraw {
                    print!("\x1b[H\x1b[2J");
                }
                self.draw_table();
            }
        }
    }

    fn draw_table(&self) {
        println!("{}", self.layout.header(&self.names));
        for row in self.table.rows() {
            let cells: Vec<String> = row
                .iter()
                .map(|v| v.clone().unwrap_or_else(|| crate::render::NULL.to_string()))
                .collect();
            println!("{}", self.layout.row(&cells));
        }
        println!("{}", self.layout.border());
        println!("{} rows in the result", self.table.rows().len());
    }
}
