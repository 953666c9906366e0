//! Fixtures cases refer to besides their inputs: the jar of the Java functions in
//! `fixtures/udf/java`, named `${udf_jar}` in a case's SQL.

use crate::case::{Case, CaseError};

/// How a case names the jar of the fixture Java functions.
pub(crate) const UDF_JAR: &str = "${udf_jar}";

/// The jar of the Java functions in `fixtures/udf/java` (next to the case's `compat-tests`),
/// compiled like the oracle compiles it.
pub(crate) fn udf_jar(case: &Case) -> Result<String, CaseError> {
    let path = case
        .path
        .canonicalize()
        .unwrap_or_else(|_| case.path.clone());
    let sources = path
        .ancestors()
        .map(|dir| dir.join("fixtures/udf/java"))
        .find(|dir| dir.is_dir())
        .ok_or_else(|| CaseError::Io {
            file: case.path.display().to_string(),
            source: std::io::Error::other("no fixtures/udf/java above the case for ${udf_jar}"),
        })?;
    riffle_jvm::build::build_jar(&sources)
        .map(|jar| jar.display().to_string())
        .map_err(|e| CaseError::Io {
            file: sources.display().to_string(),
            source: std::io::Error::other(e.to_string()),
        })
}
