//! The web console in a real headless Chromium, driven over WebDriver: a job submitted from the
//! SQL editor shows in the job list with its graph and live figures, a query over the job's
//! output shows as a live result table, a savepoint is taken from the job's panel, and the
//! job's stop button stops it.
//!
//! Needs Debian's `chromium` and `chromium-driver` (or `RIFFLE_CHROMIUM` /
//! `RIFFLE_CHROMEDRIVER`). Without them the test skips loudly, and fails when
//! `RIFFLE_REQUIRE_BROWSER=1` (as CI sets it).

mod webdriver;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use riffle_server::{ServeOptions, Server};
use tokio::sync::oneshot;
use webdriver::{find_browser, sql_path, Browser};

/// The value of figure `name` in the job panel's figures (`name<TAB>value` lines).
fn figure<'a>(figures: &'a str, name: &str) -> &'a str {
    figures
        .lines()
        .find_map(|line| line.strip_prefix(name))
        .map_or("", str::trim)
}

/// The leading number of a figure's value (`12 rows/s` → 12).
fn leading_number(value: &str) -> Option<u64> {
    value.split_whitespace().next()?.parse().ok()
}

/// The rows of the console's live result table (the header row excluded).
async fn result_rows(browser: &Browser) -> usize {
    browser
        .find_all("#result table tr")
        .await
        .len()
        .saturating_sub(1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_console_submits_a_job_shows_its_graph_and_live_results_and_stops_it() {
    let tools = match find_browser() {
        Ok(tools) => tools,
        Err(why) if std::env::var("RIFFLE_REQUIRE_BROWSER").as_deref() == Ok("1") => {
            panic!("RIFFLE_REQUIRE_BROWSER=1 but {why}")
        }
        Err(why) => {
            eprintln!("\n*** SKIPPED the console browser test: {why} ***\n");
            return;
        }
    };

    let dir = tempfile::tempdir().expect("temp dir");
    let addr: SocketAddr = "127.0.0.1:0".parse().expect("address");
    let server = Server::bind(ServeOptions {
        addr,
        token: None,
        data_dir: dir.path().to_path_buf(),
    })
    .await
    .expect("bind the service");
    let base = format!("http://{}", server.local_addr().expect("address"));
    let (shutdown, stopped) = oneshot::channel::<()>();
    let service = tokio::spawn(server.run(async move {
        let _ = stopped.await;
    }));

    let browser = Browser::start(&tools).await;
    browser.open(&format!("{base}/")).await;
    browser
        .wait_for("#jobs", "the empty job list", |t| t.contains("No jobs"))
        .await;

    // A continuous, checkpointed job typed into the SQL editor and submitted.
    let editor = browser.find("#sql").await;
    let job = format!(
        "SET 'execution.checkpointing.interval' = '300 ms';\n\
         SET 'state.checkpoints.dir' = '{}';\n\
         CREATE TABLE ticks (id BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '20',\n\
         'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '1000000');\n\
         CREATE TABLE doubled (id BIGINT, twice BIGINT) WITH ('connector' = 'rocketmq',\n\
         'rocketmq.sink.topic' = 'doubled', 'format' = 'json');\n\
         SET 'pipeline.name' = 'doubler';\n\
         INSERT INTO doubled SELECT id, id * 2 FROM ticks WHERE id > 0;\n",
        sql_path(&dir.path().join("checkpoints"))
    );
    browser.type_into(&editor, &job).await;
    browser
        .click_on("#run", "the Run button", |t| t == "Run")
        .await;

    // The job shows in the list; its panel shows the graph with parallelism and edges.
    browser
        .click_on("#jobs .job", "the running job in the list", |t| {
            t.contains("doubler") && t.contains("RUNNING")
        })
        .await;
    browser
        .wait_for("#job-state", "the job's state", |t| t == "RUNNING")
        .await;
    let operators = browser.texts("#graph tr.op").await;
    assert!(operators.len() >= 2, "operators: {operators:?}");
    assert!(
        operators
            .iter()
            .any(|o| o.contains("Source(table=[ticks], connector=[datagen])") && o.contains("×1")),
        "no source operator in {operators:?}"
    );
    assert!(
        operators.iter().any(|o| o.contains("Sink(table=[doubled]")),
        "no sink operator in {operators:?}"
    );
    let edges = browser.texts("#edges .edge").await;
    assert_eq!(edges.len(), operators.len() - 1, "edges: {edges:?}");
    assert!(edges[0].starts_with("#0 → #"), "edges: {edges:?}");

    // Live figures: rows read and a throughput, completed checkpoints with their size.
    browser
        .wait_for("#figures", "live figures", |t| {
            leading_number(figure(t, "records read")).is_some_and(|n| n > 0)
                && leading_number(figure(t, "throughput")).is_some_and(|n| n > 0)
                && figure(t, "throughput").ends_with("rows/s")
                && leading_number(figure(t, "checkpoints")).is_some_and(|n| n > 0)
                && figure(t, "checkpoints").contains("(last #")
        })
        .await;
    // The operators' records in and out fill in.
    browser
        .wait_for("#graph tr.op", "the sink's records in", |t| {
            t.contains("Sink(table=[doubled]")
                && t.split('\t')
                    .nth(4)
                    .and_then(|n| n.trim().parse::<u64>().ok())
                    > Some(0)
        })
        .await;

    // A query over the job's output topic: its rows arrive in a live result table.
    browser
        .type_into(
            &editor,
            "RESET 'execution.checkpointing.interval';\n\
             CREATE TABLE doubled_in (id BIGINT, twice BIGINT) WITH ('connector' = 'rocketmq',\n\
             'rocketmq.source.topic' = 'doubled', 'rocketmq.source.group' = 'console',\n\
             'rocketmq.source.startup.scan.mode' = 'earliest', 'format' = 'json');\n\
             SELECT id, twice FROM doubled_in;\n",
        )
        .await;
    browser
        .click_on("#run", "the Run button", |t| t == "Run")
        .await;
    browser
        .wait_for("#result", "the result table's header", |t| {
            t.contains("id") && t.contains("twice")
        })
        .await;
    let start = Instant::now();
    let mut first = 0;
    while first < 3 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no result rows arrived"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
        first = result_rows(&browser).await;
    }
    // Every row is one the job wrote: (id, 2 * id).
    let rows = browser.texts("#result table tr").await;
    for row in &rows[1..] {
        let values: Vec<i64> = row
            .split_whitespace()
            .map(|v| v.parse().expect("a number"))
            .collect();
        assert!(
            values.len() == 2 && values[1] == 2 * values[0],
            "unexpected row {row:?} in {rows:?}"
        );
    }
    // Live: more rows arrive while the job runs.
    while result_rows(&browser).await <= first {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the result table stopped at {first} rows"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // A savepoint from the job panel: its directory shows.
    browser
        .click_on("#job-savepoint", "the Savepoint button", |t| {
            t == "Savepoint"
        })
        .await;
    let savepoint = browser
        .wait_for("#savepoint", "the savepoint's path", |t| {
            t.starts_with("savepoint: ")
        })
        .await;
    let path = std::path::PathBuf::from(savepoint.trim_start_matches("savepoint: "));
    assert!(
        path.starts_with(dir.path().join("savepoints")) && path.join("_metadata").is_file(),
        "{savepoint}"
    );

    // The job's stop button stops it; the list and the panel say so.
    browser
        .click_on("#job-action", "the Stop button", |t| t == "Stop")
        .await;
    browser
        .wait_for("#jobs .job", "the stopped job in the list", |t| {
            t.contains("doubler") && t.contains("STOPPED")
        })
        .await;
    browser
        .wait_for("#job-state", "the job panel's state", |t| t == "STOPPED")
        .await;
    browser
        .wait_for("#job-action", "the Resume button", |t| t == "Resume")
        .await;
    browser
        .click_on("#cancel", "the Cancel query button", |t| {
            t == "Cancel query"
        })
        .await;
    browser
        .wait_for("#status", "the query's cancellation", |t| {
            t.contains("cancelled")
        })
        .await;

    browser.quit().await;
    let _ = shutdown.send(());
    service
        .await
        .expect("service task")
        .expect("service ran cleanly");
}
