//! What the run did not cover, gathered from every place the bundle records
//! it, so no report can leave a gap out.

use agent_zero_contracts::{EvidenceBundle, FileReview, SkipReason};

use crate::format::{argv, thousands};

/// One thing not covered. `subject` is untrusted (paths, argv, hunk
/// headers); `kind` and `reason` come from the run but are escaped too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Gap {
    pub(crate) kind: String,
    pub(crate) subject: String,
    pub(crate) reason: String,
}

/// Every gap, in a stable order: checks first (missing, stopped, cut
/// output), then a review's unread files, then the run's own omissions,
/// then cut issue text.
pub(crate) fn gaps(bundle: &EvidenceBundle) -> Vec<Gap> {
    let mut out = Vec::new();
    if bundle.checks.is_empty() {
        out.push(Gap { kind: "check".into(), subject: String::new(), reason: "no check ran".into() });
    }
    for check in &bundle.checks {
        if check.timed_out {
            out.push(Gap {
                kind: "check".into(),
                subject: argv(&check.command),
                reason: "stopped at its timeout; its result is incomplete".into(),
            });
        }
        if check.truncated_bytes > 0 {
            out.push(Gap {
                kind: "output".into(),
                subject: argv(&check.command),
                reason: format!(
                    "{} bytes of output dropped at runner.maxOutputBytes",
                    thousands(check.truncated_bytes)
                ),
            });
        }
    }
    if let Some(ledger) = &bundle.review {
        if let Some(reason) = &ledger.unlisted {
            out.push(Gap {
                kind: "diff".into(),
                subject: "changed files".into(),
                reason: format!("not all listed: {reason}"),
            });
        }
        for f in ledger.files.iter().filter(|f| f.review != FileReview::Reviewed) {
            let why = f.reason.map_or("", SkipReason::as_str);
            let reason = match f.review {
                FileReview::Partial => format!(
                    "reviewed in part ({why}): {} of {} hunks left out",
                    f.skipped_hunks.len(),
                    f.hunks.len() + f.skipped_hunks.len()
                ),
                _ => format!("not reviewed ({why})"),
            };
            out.push(Gap { kind: "file".into(), subject: f.path.clone(), reason });
        }
    }
    for item in &bundle.coverage.omitted {
        out.push(Gap { kind: item.kind.clone(), subject: item.subject.clone(), reason: item.reason.clone() });
    }
    if let Some(bytes) = bundle.issue.as_ref().and_then(|i| i.title.original_bytes) {
        out.push(Gap {
            kind: "context".into(),
            subject: "issue title".into(),
            reason: format!("cut from {} bytes", thousands(bytes as u64)),
        });
    }
    out
}
