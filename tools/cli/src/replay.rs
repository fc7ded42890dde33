//! `agent-zero replay TASK`: the task's raw log (`GET /api/v1/tasks/{id}/log`,
//! or a file), folded with the engine's own fold and its conclusion rebuilt
//! from the facts ([`agent_zero_engine::log::replay`]), rendered with the
//! deployment's own renderers, and compared byte for byte with the evidence
//! the deployment serves (JSON, Markdown, HTML). Exit 0 only when every
//! representation is reproduced exactly and the log's recorded conclusion
//! is the one its facts produce; otherwise the first difference is shown.
//! The evidence's cost is part of what is reproduced: it is the sum of the
//! log's `metered` facts up to the conclusion, so an edited count differs.

use std::io::Write;
use std::path::Path;

use agent_zero_contracts::EvidenceBundle;
use agent_zero_engine::Entry;
use agent_zero_evidence::{RenderOptions, render_evidence_html, render_json, render_markdown_document};
use serde_json::Value;

use agent_zero_contracts::encode_component as encode;

use crate::api::Api;
use crate::tasks::expect_success;
use crate::text::printable;
use crate::{EXIT_FAILED, EXIT_OK, Target};

/// The representations compared, by the suffix of their route.
const FORMATS: &[&str] = &["json", "md", "html"];

pub(crate) fn run(
    target: &Target,
    task: &str,
    log_file: Option<&Path>,
    cwd: &Path,
    out: &mut dyn Write,
) -> Result<u8, String> {
    let api = Api::new(&target.url, target.token.as_deref())?;
    let id = encode(task);
    let log = match log_file {
        Some(path) => {
            let path = cwd.join(path);
            let bytes = std::fs::read(&path).map_err(|e| format!("--log {}: {e}", path.display()))?;
            serde_json::from_slice::<Value>(&bytes).map_err(|e| format!("--log {}: not JSON: {e}", path.display()))?
        }
        None => expect_success(api.get(&format!("/api/v1/tasks/{id}/log"), "application/json")?)?.json()?,
    };
    let entries = entries_of(&log, task)?;
    let replayed = agent_zero_engine::log::replay(&entries).map_err(|e| format!("the log does not fold: {e}"))?;
    let (Some(rebuilt), Some(recorded)) = (replayed.rebuilt, replayed.recorded) else {
        return Err(format!(
            "task `{}` is {} and has not concluded: there is no evidence to reproduce",
            printable(task),
            replayed.resident.state
        ));
    };
    let mut report = format!(
        "replay {}: {} entries folded, {} ({}{})\n",
        printable(task),
        entries.len(),
        rebuilt.1.state,
        rebuilt.1.verdict,
        if rebuilt.1.verified { ", verified" } else { "" }
    );
    let mut same = true;
    let page_url = format!("/tasks/{task}");
    for format in FORMATS {
        let stored = expect_success(api.get(&format!("/api/v1/tasks/{id}/evidence.{format}"), "*/*")?)?.body;
        let local = render(&rebuilt.1, format, &page_url);
        match first_difference(&stored, local.as_bytes()) {
            None => report.push_str(&format!("evidence.{format}: reproduced byte for byte ({} bytes)\n", stored.len())),
            Some(difference) => {
                same = false;
                report.push_str(&format!("evidence.{format}: DIFFERS from the stored evidence {difference}\n"));
            }
        }
    }
    // The log's own record must be what its facts produce.
    let recorded_md = render(&recorded.1, "md", &page_url);
    let rebuilt_md = render(&rebuilt.1, "md", &page_url);
    if let Some(difference) = first_difference(recorded_md.as_bytes(), rebuilt_md.as_bytes()) {
        same = false;
        report.push_str(&format!("log: the recorded conclusion is not what the log's facts produce {difference}\n"));
    }
    report.push_str(if same {
        "ok: the stored evidence is reproduced from the raw log\n"
    } else {
        "FAILED: the evidence is not reproduced\n"
    });
    out.write_all(report.as_bytes()).map_err(|e| e.to_string())?;
    Ok(if same { EXIT_OK } else { EXIT_FAILED })
}

/// The entries of a log answer, checked to be task `task`'s.
fn entries_of(log: &Value, task: &str) -> Result<Vec<Entry>, String> {
    if let Some(id) = log["taskId"].as_str()
        && id != task
    {
        return Err(format!("the log is task `{}`'s, not `{}`'s", printable(id), printable(task)));
    }
    let entries = log.get("entries").ok_or("the log has no `entries`")?;
    serde_json::from_value(entries.clone()).map_err(|e| format!("the log's `entries` are not task log entries: {e}"))
}

/// `bundle` rendered as the evidence route renders `format`.
fn render(bundle: &EvidenceBundle, format: &str, page_url: &str) -> String {
    let options = RenderOptions { evidence_url: Some(page_url), ..RenderOptions::default() };
    match format {
        "json" => render_json(bundle, &options),
        "md" => render_markdown_document(bundle, &options),
        _ => render_evidence_html(bundle, &options),
    }
}

/// Where `replayed` first departs from `stored`: the byte offset, the line,
/// and that line on each side; `None` when they are equal.
pub(crate) fn first_difference(stored: &[u8], replayed: &[u8]) -> Option<String> {
    if stored == replayed {
        return None;
    }
    let at = stored.iter().zip(replayed).position(|(a, b)| a != b).unwrap_or(stored.len().min(replayed.len()));
    let line = stored[..at].iter().filter(|b| **b == b'\n').count() + 1;
    // The line holding the difference on each side, from a little before it.
    let line_of = |bytes: &[u8]| {
        let start = bytes[..at.min(bytes.len())].iter().rposition(|b| *b == b'\n').map_or(0, |p| p + 1);
        let end = bytes[start..].iter().position(|b| *b == b'\n').map_or(bytes.len(), |p| start + p);
        let from = if at.saturating_sub(start) > 60 { at - 60 } else { start };
        let text = String::from_utf8_lossy(&bytes[from.min(end)..end]);
        let shown: String = text.chars().take(160).collect();
        format!("{}{}", if from > start { "…" } else { "" }, printable(&shown))
    };
    Some(format!(
        "at byte {at} (line {line}; {} bytes stored, {} replayed):\n  stored:   {}\n  replayed: {}",
        stored.len(),
        replayed.len(),
        line_of(stored),
        line_of(replayed)
    ))
}
