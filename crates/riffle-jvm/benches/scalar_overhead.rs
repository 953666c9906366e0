//! Per-row cost of a Java scalar function against the same function built in (Arrow kernels),
//! on batches of 8192 rows: `cargo bench -p riffle-jvm --bench scalar_overhead`.
//!
//! The Java functions are the repository's fixtures (`AddInts`: `int + int`; `Shout`:
//! `s.toUpperCase() + "!"`), called through the bridge exactly as the engine calls them.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use arrow::array::{Array, ArrayRef, Int32Array, StringArray};
use arrow::compute::kernels::numeric::add_wrapping;
use arrow::datatypes::DataType;
use riffle_jvm::JavaScalarFunction;

const ROWS: usize = 8192;
const BATCHES: usize = 400;

fn main() {
    let sources = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/udf/java");
    let jar = match riffle_jvm::build::build_jar(&sources) {
        Ok(jar) => jar.display().to_string(),
        Err(e) => {
            eprintln!("scalar_overhead: cannot build the fixture jar: {e}");
            return;
        }
    };
    let ints: ArrayRef = Arc::new(Int32Array::from_iter_values(
        (0..ROWS as i32).map(|i| i % 1000),
    ));
    let words: ArrayRef = Arc::new(StringArray::from_iter_values(
        (0..ROWS).map(|i| format!("word-{}", i % 977)),
    ));

    let add = resolve(
        "riffle.fixtures.AddInts",
        &jar,
        &["INT NOT NULL", "INT NOT NULL"],
    );
    let java_add = time(|| {
        let out = add.eval(&[ints.clone(), ints.clone()], ROWS, &DataType::Int32);
        out.map(|a| a.len()).unwrap_or(0)
    });
    let native_add = time(|| add_wrapping(&ints, &ints).map(|a| a.len()).unwrap_or(0));
    report("INT + INT", java_add, native_add);

    let shout = resolve("riffle.fixtures.Shout", &jar, &["STRING"]);
    let java_upper = time(|| {
        let out = shout.eval(std::slice::from_ref(&words), ROWS, &DataType::Utf8);
        out.map(|a| a.len()).unwrap_or(0)
    });
    let native_upper = time(|| {
        let strings = words.as_any().downcast_ref::<StringArray>();
        let out: StringArray = strings
            .map(|s| {
                s.iter()
                    .map(|v| v.map(|v| format!("{}!", v.to_uppercase())))
                    .collect()
            })
            .unwrap_or_else(|| StringArray::from(Vec::<Option<String>>::new()));
        out.len()
    });
    report("UPPER(s) || '!'", java_upper, native_upper);
}

fn resolve(class: &str, jar: &str, types: &[&str]) -> JavaScalarFunction {
    let types: Vec<String> = types.iter().map(|t| t.to_string()).collect();
    match JavaScalarFunction::resolve("bench", class, &[jar.to_string()], &types) {
        Ok(f) => f,
        Err(e) => panic!("{e}"),
    }
}

/// Nanoseconds per row over BATCHES batches, after as many warm-up batches (JIT).
fn time(mut batch: impl FnMut() -> usize) -> f64 {
    let mut rows = 0;
    for _ in 0..BATCHES {
        rows += batch();
    }
    assert_eq!(rows, ROWS * BATCHES, "every batch evaluated");
    let started = Instant::now();
    for _ in 0..BATCHES {
        batch();
    }
    started.elapsed().as_secs_f64() * 1e9 / (ROWS * BATCHES) as f64
}

fn report(what: &str, java: f64, native: f64) {
    println!(
        "{what:<18} Java UDF {java:>7.1} ns/row   built in {native:>7.1} ns/row   overhead {:>7.1} ns/row",
        java - native
    );
}
