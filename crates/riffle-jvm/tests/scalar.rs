//! Java scalar functions from the repository's fixture jar, called on Arrow arrays.

use std::path::PathBuf;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, Decimal128Array, Int32Array, StringArray};
use arrow::datatypes::DataType;
use riffle_jvm::JavaScalarFunction;

fn fixture_jar() -> String {
    let sources = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/udf/java");
    match riffle_jvm::build::build_jar(&sources) {
        Ok(jar) => jar.display().to_string(),
        Err(e) => panic!("cannot build the fixture jar: {e}"),
    }
}

fn resolve(class: &str, types: &[&str]) -> Result<JavaScalarFunction, riffle_jvm::JvmError> {
    let types: Vec<String> = types.iter().map(|t| t.to_string()).collect();
    JavaScalarFunction::resolve("f", class, &[fixture_jar()], &types)
}

#[test]
fn strings_cross_with_nulls_and_the_overload_follows_the_arity() {
    let mask = resolve("riffle.fixtures.Mask", &["STRING", "INT NOT NULL"]).expect("resolves");
    assert_eq!(mask.result_type(), "STRING");
    let names: ArrayRef = Arc::new(StringArray::from(vec![Some("alice"), None, Some("é✓x")]));
    let keep: ArrayRef = Arc::new(Int32Array::from(vec![1, 1, 2]));
    let out = mask
        .eval(&[names, keep], 3, &DataType::Utf8)
        .expect("evaluates");
    let out = out.as_any().downcast_ref::<StringArray>().expect("strings");
    assert_eq!(out.value(0), "****e");
    assert!(out.is_null(1));
    assert_eq!(out.value(2), "*✓x");
}

#[test]
fn decimals_cross_through_data_type_hints() {
    let tax = resolve("riffle.fixtures.AddTax", &["DECIMAL(10, 2)"]).expect("resolves");
    assert_eq!(tax.result_type(), "DECIMAL(12, 2)");
    let prices: ArrayRef = Arc::new(
        Decimal128Array::from(vec![Some(1000), None, Some(-5)])
            .with_precision_and_scale(10, 2)
            .expect("valid"),
    );
    let out = tax
        .eval(&[prices], 3, &DataType::Decimal128(12, 2))
        .expect("evaluates");
    let out = out
        .as_any()
        .downcast_ref::<Decimal128Array>()
        .expect("decimals");
    assert_eq!(out.value(0), 1080);
    assert!(out.is_null(1));
    assert_eq!(out.value(2), -5);
}

#[test]
fn nullable_arguments_do_not_reach_primitive_parameters() {
    let err = resolve("riffle.fixtures.AddInts", &["INT", "INT NOT NULL"]).unwrap_err();
    assert!(err.0.contains("eval(INT NOT NULL, INT NOT NULL)"), "{err}");
    let ok = resolve(
        "riffle.fixtures.AddInts",
        &["INT NOT NULL", "SMALLINT NOT NULL"],
    );
    assert_eq!(ok.expect("widens").result_type(), "INT NOT NULL");
}

#[test]
fn java_exceptions_name_the_function() {
    let shout = resolve("riffle.fixtures.Shout", &["STRING"]).expect("resolves");
    let words: ArrayRef = Arc::new(StringArray::from(vec!["hi", "boom"]));
    let err = shout.eval(&[words], 2, &DataType::Utf8).unwrap_err();
    assert!(
        err.0.contains("'f' (riffle.fixtures.Shout) failed"),
        "{err}"
    );
    assert!(
        err.0.contains("IllegalStateException: cannot shout boom"),
        "{err}"
    );
}

#[test]
fn unknown_classes_and_jars_are_clear_errors() {
    let err = resolve("riffle.fixtures.Nope", &[]).unwrap_err();
    assert!(
        err.0.contains("class riffle.fixtures.Nope not found"),
        "{err}"
    );
    let err = JavaScalarFunction::resolve("g", "X", &["/no/such.jar".into()], &[]).unwrap_err();
    assert!(err.0.contains("jar /no/such.jar not found"), "{err}");
}
