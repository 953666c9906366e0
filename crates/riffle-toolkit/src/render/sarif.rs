//! SARIF 2.1.0, the format code-scanning services (GitHub, GitLab, Azure DevOps) ingest.
//!
//! Written directly as JSON: the subset Riffle emits is small, and a test validates it against the
//! official SARIF 2.1.0 schema.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::report::{JobReport, Status};

/// SARIF's `$schema` URI for version 2.1.0.
const SCHEMA_URI: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// Renders findings at or above `min_status` as one SARIF run with one rule per finding code.
pub fn render_sarif(jobs: &[JobReport], min_status: Status) -> String {
    let mut rules: BTreeMap<&str, &str> = BTreeMap::new();
    let mut results = Vec::new();
    for job in jobs {
        for finding in job.findings.iter().filter(|f| f.status >= min_status) {
            rules
                .entry(finding.code.as_str())
                .or_insert(finding.message.as_str());
            let start = super::start_of(&finding.span);
            let mut region = json!({ "startLine": start.line, "startColumn": start.column });
            if !finding.span.is_unknown() && finding.span.end >= finding.span.start {
                region["endLine"] = json!(finding.span.end.line);
                region["endColumn"] = json!(finding.span.end.column.max(1));
            }
            let mut text = finding.message.clone();
            if let Some(help) = &finding.help {
                text.push_str(&format!(" (help: {help})"));
            }
            results.push(json!({
                "ruleId": finding.code,
                "level": level(finding.status),
                "kind": if finding.status == Status::Supported { "informational" } else { "fail" },
                "message": { "text": text },
                "properties": { "riffleStatus": finding.status.as_str() },
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": { "uri": uri_of(&job.path) },
                        "region": region
                    }
                }]
            }));
        }
    }
    let rules: Vec<Value> = rules
        .into_iter()
        .map(|(id, message)| json!({ "id": id, "shortDescription": { "text": message } }))
        .collect();
    let sarif = json!({
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": "riffle",
                    "version": env!("CARGO_PKG_VERSION"),
                    "informationUri": "https://github.com/riffle-sql/riffle",
                    "rules": rules
                }
            },
            "columnKind": "unicodeCodePoints",
            "results": results
        }]
    });
    serde_json::to_string_pretty(&sarif).unwrap_or_default() + "\n"
}

/// SARIF result level for a status.
fn level(status: Status) -> &'static str {
    match status {
        Status::Supported => "none",
        Status::NeedsMigration => "warning",
        Status::Unsupported | Status::Error => "error",
    }
}

/// A relative URI reference for a path (SARIF wants `/` separators and percent-encoded spaces).
fn uri_of(path: &str) -> String {
    path.replace('\\', "/").replace(' ', "%20")
}
