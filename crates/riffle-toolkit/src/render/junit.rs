//! JUnit XML: one test suite per job, one test case per statement, failing when the statement has
//! findings at or above the `--fail-on` level. CI systems show these as test results.

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use crate::report::{JobReport, Status};

/// Renders the report; `fail_on` decides which statements count as failed.
pub fn render_junit(jobs: &[JobReport], fail_on: Status) -> String {
    let mut report = Report::new("riffle check");
    for job in jobs {
        let mut suite = TestSuite::new(job.path.as_str());
        if job.statements.is_empty() || job.findings.iter().any(|f| f.statement.is_none()) {
            // Findings outside any parsed statement (e.g. a statement that failed to parse) get a
            // case of their own, so they are never lost.
            suite.add_test_case(case_for(job, None, "job", fail_on));
        }
        for (index, statement) in job.statements.iter().enumerate() {
            let name = format!(
                "{}:{} {}",
                statement.span.start.line, statement.span.start.column, statement.description
            );
            suite.add_test_case(case_for(job, Some(index), &name, fail_on));
        }
        report.add_test_suite(suite);
    }
    report.to_string().unwrap_or_default()
}

fn case_for(job: &JobReport, statement: Option<usize>, name: &str, fail_on: Status) -> TestCase {
    let failing: Vec<String> = job
        .findings
        .iter()
        .filter(|f| f.statement == statement && f.status >= fail_on)
        .map(|f| {
            let at = super::start_of(&f.span);
            let help = f
                .help
                .as_deref()
                .map(|h| format!(" (help: {h})"))
                .unwrap_or_default();
            format!(
                "{}:{}:{}: {} [{}]: {}{}",
                job.path,
                at.line,
                at.column,
                f.status.as_str(),
                f.code,
                f.message,
                help
            )
        })
        .collect();
    let status = if failing.is_empty() {
        TestCaseStatus::success()
    } else {
        let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
        status.set_message(format!(
            "{} finding(s) at or above {}",
            failing.len(),
            fail_on.as_str()
        ));
        status.set_description(failing.join("\n"));
        status
    };
    let mut case = TestCase::new(name, status);
    case.set_classname(job.path.as_str());
    case
}
