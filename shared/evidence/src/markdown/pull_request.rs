//! The body of a pull request opened for a run.

use agent_zero_contracts::EvidenceBundle;

use crate::markdown::escape::inline;
use crate::markdown::limit::fit;
use crate::markdown::sections::{self, Outputs};
use crate::outcome::shown_verified;
use crate::text::Ctx;
use crate::{PULL_REQUEST_MARKER, RenderOptions};

/// Renders the pull-request body: outcome, plan, acceptance criteria,
/// changed files, checks, gaps, runner, usage. Starts with
/// [`PULL_REQUEST_MARKER`]. `Closes` the issue only for a verified change
/// in the same repository; otherwise it only refers to it.
pub fn render_pull_request_body(bundle: &EvidenceBundle, options: &RenderOptions<'_>) -> String {
    let ctx = Ctx::new(options);
    let max_block = options.max_block_bytes;
    let mut intro = PULL_REQUEST_MARKER.to_owned() + "\n" + &sections::header(bundle, "Agent Zero · ");
    if let Some(issue) = &bundle.issue {
        let same_repo = format!("{}/{}", issue.owner, issue.repo) == bundle.repository;
        let verb = if shown_verified(bundle) && same_repo { "Closes" } else { "Refs" };
        let target = if same_repo {
            format!("#{}", issue.number)
        } else {
            format!("{}/{}#{}", inline(&ctx, &issue.owner), inline(&ctx, &issue.repo), issue.number)
        };
        intro.push_str(&format!("\n\n{verb} {target}: {}", inline(&ctx, &issue.title.text)));
    }
    let mut blocks = vec![intro];
    blocks.extend(sections::summary(&ctx, bundle, max_block));
    blocks.push(sections::plan(&ctx, bundle));
    blocks.push(sections::changed_files(&ctx, bundle));
    blocks.push(sections::checks(&ctx, bundle, Outputs::Failing, max_block));
    blocks.push(sections::coverage(&ctx, bundle, Some(sections::GITHUB_GAPS_LISTED)));
    blocks.push(sections::finding(&ctx, bundle, max_block));
    blocks.extend(sections::refusal(&ctx, bundle));
    blocks.push(sections::runner(&ctx, bundle));
    blocks.push(sections::usage(bundle));
    blocks.push(sections::footer(&ctx, bundle));
    fit(&ctx, sections::join(blocks), options.max_bytes)
}
