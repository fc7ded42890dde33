//! The standalone evidence document: everything the bundle records, for
//! download or archive. Not bound by GitHub's limit; each untrusted block is
//! capped at `RenderOptions::max_page_block_bytes`.

use agent_zero_contracts::EvidenceBundle;

use crate::RenderOptions;
use crate::markdown::escape::{code, inline, prose};
use crate::markdown::sections::{self, Outputs};
use crate::text::Ctx;

/// Renders the full evidence document.
pub fn render_markdown_document(bundle: &EvidenceBundle, options: &RenderOptions<'_>) -> String {
    let ctx = Ctx::new(options);
    let max_block = options.max_page_block_bytes;
    let title = format!("# Evidence for task {} on {}", code(&ctx, &bundle.task_id), code(&ctx, &bundle.repository));
    let mut blocks = vec![title, sections::header(bundle, "")];
    if let Some(source) = &bundle.source {
        blocks.push(format!("Source: {}", code(&ctx, source)));
    }
    blocks.extend(sections::references(&ctx, bundle));
    blocks.extend(sections::summary(&ctx, bundle, max_block));
    blocks.push(sections::finding(&ctx, bundle, max_block));
    blocks.extend(sections::refusal(&ctx, bundle));
    blocks.push(sections::plan(&ctx, bundle));
    blocks.push(sections::changed_files(&ctx, bundle));
    blocks.push(sections::checks(&ctx, bundle, Outputs::All, max_block));
    blocks.push(sections::coverage(&ctx, bundle, None));
    blocks.push(sections::runner(&ctx, bundle));
    blocks.push(sections::usage(bundle));
    blocks.push(timeline(&ctx, bundle));
    blocks.push(sections::footer(&ctx, bundle));
    sections::join(blocks)
}

fn timeline(ctx: &Ctx<'_>, b: &EvidenceBundle) -> String {
    if b.transitions.is_empty() {
        return "### Timeline\n\nNo transition was recorded.".to_owned();
    }
    let mut out = String::from("### Timeline\n\n| # | State | Time | Attempt | Message |\n|---:|---|---|---:|---|");
    for (i, e) in b.transitions.iter().enumerate() {
        let attempt = e.attempt.map(|a| a.to_string()).unwrap_or_default();
        out.push_str(&format!(
            "\n| {} | {} | {} | {attempt} | {} |",
            i + 1,
            e.state,
            inline(ctx, &e.timestamp),
            prose(ctx, &e.message, 1_000)
        ));
    }
    out
}
