//! rustc-style text: `file:line:col`, the source line, a caret under the span, and a help line.

use codespan_reporting::diagnostic::{Diagnostic, Label, Severity};
use codespan_reporting::files::SimpleFile;
use codespan_reporting::term::{self, Config};

use crate::report::{JobReport, Status, Summary};

/// Renders findings at or above `min_status` for each job, then one summary line per job and a total.
pub fn render_text(jobs: &[JobReport], min_status: Status) -> String {
    let config = Config::default();
    let mut out = String::new();
    for job in jobs {
        let file = SimpleFile::new(job.path.as_str(), job.source.as_str());
        for finding in job.findings.iter().filter(|f| f.status >= min_status) {
            let severity = match finding.status {
                Status::Supported => Severity::Note,
                Status::NeedsMigration => Severity::Warning,
                Status::Unsupported | Status::Error => Severity::Error,
            };
            let range = finding.span.byte_range(&job.source);
            let label = match finding.status {
                Status::Supported => "supported",
                Status::NeedsMigration => "needs migration",
                Status::Unsupported => "unsupported",
                Status::Error => "error",
            };
            let mut diagnostic = Diagnostic::new(severity)
                .with_code(finding.code.as_str())
                .with_message(finding.message.as_str())
                .with_labels(vec![Label::primary((), range).with_message(label)]);
            if let Some(help) = &finding.help {
                diagnostic = diagnostic.with_notes(vec![format!("help: {help}")]);
            }
            // Rendering only fails for spans outside the file; fall back to a plain line then.
            match term::emit_into_string(&config, &file, &diagnostic) {
                Ok(text) => out.push_str(&text),
                Err(_) => {
                    let at = super::start_of(&finding.span);
                    out.push_str(&format!(
                        "{}:{}:{}: {}: {}\n",
                        job.path, at.line, at.column, label, finding.message
                    ));
                }
            }
        }
    }
    for job in jobs {
        out.push_str(&format!(
            "{}: {} ({} statements; {} supported, {} need migration, {} unsupported, {} errors)\n",
            job.path,
            job.status.as_str(),
            job.statements.len(),
            job.count(Status::Supported),
            job.count(Status::NeedsMigration),
            job.count(Status::Unsupported),
            job.count(Status::Error),
        ));
    }
    let s = Summary::of(jobs);
    out.push_str(&format!(
        "checked {} jobs: {} supported, {} need migration, {} unsupported, {} with errors\n",
        s.jobs, s.supported, s.needs_migration, s.unsupported, s.error
    ));
    out
}
