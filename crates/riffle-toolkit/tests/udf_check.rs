//! `riffle check` classifies every `CREATE FUNCTION`: Java classes that load from their jar run
//! as they are; table functions, missing classes and jars, Python and Rust functions do not, each
//! with the reason. The Java fixtures come from the repository's `fixtures/udf/java` jar.

use std::path::Path;

use riffle_toolkit::{check_job, JobSource};

fn fixture_jar() -> String {
    let sources = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/udf/java");
    match riffle_jvm::build::build_jar(&sources) {
        Ok(jar) => jar.display().to_string(),
        Err(e) => panic!("cannot build the fixture jar: {e}"),
    }
}

/// `status code: message (help)` per finding about the function, the jar path redacted.
fn classify(create: &str) -> Vec<String> {
    let jar = fixture_jar();
    let sql = format!("{}\nSELECT 1;", create.replace("$JAR", &jar));
    let report = check_job(&JobSource {
        path: "job.sql".into(),
        text: sql,
    });
    report
        .findings
        .iter()
        .filter(|f| f.statement == Some(0))
        .map(|f| {
            format!(
                "{:?} {}: {}{}",
                f.status,
                f.code,
                f.message,
                f.help
                    .as_ref()
                    .map(|h| format!(" ({h})"))
                    .unwrap_or_default()
            )
            .replace(&jar, "$JAR")
        })
        .collect()
}

#[test]
fn create_function_is_classified_with_its_reason() {
    let cases = [
        "CREATE FUNCTION mask AS 'riffle.fixtures.Mask' USING JAR '$JAR';",
        "CREATE TEMPORARY FUNCTION wavg AS 'riffle.fixtures.WeightedAvg' LANGUAGE JAVA USING JAR '$JAR';",
        "CREATE FUNCTION split AS 'riffle.fixtures.SplitWords' USING JAR '$JAR';",
        "CREATE FUNCTION nope AS 'riffle.fixtures.Nope' USING JAR '$JAR';",
        "CREATE FUNCTION gone AS 'com.acme.Gone' USING JAR '/no/such/udfs.jar';",
        "CREATE FUNCTION py AS 'udfs.normalize' LANGUAGE PYTHON;",
        "CREATE FUNCTION rs AS 'normalize' LANGUAGE RUST USING JAR 'libudfs.so';",
    ];
    let report: Vec<String> = cases
        .iter()
        .map(|c| format!("{c}\n  {}", classify(c).join("\n  ")))
        .collect();
    insta::assert_snapshot!(report.join("\n\n"));
}
