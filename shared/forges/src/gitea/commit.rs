//! One commit of a run's files through Gitea's contents API, as the issue
//! branch and the review-feedback side branch both make it: the blob ids
//! and changes, whether a branch's tip is exactly this publication's
//! commit, the file-mode rule, and what an answer says when the change is
//! not shown as a suggestion. Uses only the client: the steps that commit
//! (`publish.rs`, `side_branch.rs`) and the review use it.

use agent_zero_ports::HttpClient;

use super::api::{FileChange, GiteaClient, GiteaError};
use crate::publication::{PublishRequest, capped};

/// Said under an answer whose run proposed a change: Gitea cannot show it
/// as a suggestion to apply.
pub(super) const NO_SUGGESTIONS: &str =
    "\n\nGitea has no suggestion blocks: the proposed change is in the evidence, not here.";

/// Whether `head` (the tip of `branch`) is the commit this publication
/// makes: one parent, `base_head`; the run's files changed and no other;
/// each holding the run's content (or gone, when the run deleted it).
pub(super) async fn is_this_publication<H: HttpClient>(
    client: &GiteaClient<'_, H>,
    request: &PublishRequest<'_>,
    base_head: &str,
    head: &str,
    branch: &str,
) -> Result<bool, GiteaError> {
    let (owner, repo) = (request.owner, request.repo);
    let commit = client.commit(owner, repo, head).await?;
    let one_parent = matches!(commit.parents.as_slice(), [parent] if parent.sha.eq_ignore_ascii_case(base_head));
    let mut changed: Vec<&str> = commit.files.iter().map(|f| f.filename.as_str()).collect();
    let mut ours: Vec<&str> = request.files.iter().map(|f| f.path).collect();
    changed.sort_unstable();
    ours.sort_unstable();
    if !one_parent || changed != ours {
        return Ok(false);
    }
    for file in request.files {
        let limit = file.content.map_or(1, |c| c.len() as u64 + 1);
        let there = client.raw_file(owner, repo, file.path, branch, limit).await?;
        if there.as_deref() != file.content {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The blob id of each of the run's files at `at` (`None`: not there),
/// in the order of `request.files`.
pub(super) async fn file_shas<H: HttpClient>(
    client: &GiteaClient<'_, H>,
    request: &PublishRequest<'_>,
    at: &str,
) -> Result<Vec<Option<String>>, GiteaError> {
    let mut shas = Vec::with_capacity(request.files.len());
    for file in request.files {
        shas.push(client.file_sha(request.owner, request.repo, file.path, at).await?);
    }
    Ok(shas)
}

/// The contents API's operations that turn the files at `shas` into the
/// run's: create, update (against the blob read) or delete.
pub(super) fn file_changes<'a>(request: &PublishRequest<'a>, shas: &'a [Option<String>]) -> Vec<FileChange<'a>> {
    let mut changes = Vec::with_capacity(request.files.len());
    for (file, sha) in request.files.iter().zip(shas) {
        match (file.content, sha) {
            (Some(content), None) => changes.push(FileChange::Create { path: file.path, content }),
            (Some(content), Some(sha)) => changes.push(FileChange::Update { path: file.path, content, sha }),
            (None, Some(sha)) => changes.push(FileChange::Delete { path: file.path, sha }),
            (None, None) => {}
        }
    }
    changes
}

/// The first changed file whose mode the contents API cannot keep (an
/// executable file, a link: anything but `100644` in the run's tree), as
/// the step's reason: such a change is left to a person.
pub(super) fn not_a_regular_file(request: &PublishRequest<'_>) -> Option<String> {
    let tree = &request.bundle.tree;
    let file = request
        .files
        .iter()
        .find(|f| tree.iter().find(|t| t.path == f.path).is_some_and(|t| t.mode != "100644") && f.content.is_some())?;
    Some(format!(
        "`{}` is not a regular file (mode other than 100644): Gitea's contents API sets no file mode, so this change \
         is left to a person",
        capped(file.path)
    ))
}
