//! `suggest` mode on GitHub: the rules and the block are
//! `agent_zero_forges::publication::suggestion`'s; the head's file is read
//! here with the contents API.

use agent_zero_contracts::EvidenceBundle;
use agent_zero_evidence::ReviewComment;
use agent_zero_forges::publication::suggestion::{MAX_HEAD_FILE_BYTES, Suggestion, verified_content};
use agent_zero_ports::HttpClient;

use super::PublishFile;
use super::rest::{Halt, Rest};
use crate::client::GitHubError;

/// The suggestion for `comment` of a `suggest`-mode run, or `None` in any
/// other mode.
pub(crate) async fn for_comment<H: HttpClient>(
    rest: &Rest<'_, '_, H>,
    (owner, repo, head_sha): (&str, &str, &str),
    bundle: &EvidenceBundle,
    files: &[PublishFile<'_>],
    comment: &ReviewComment,
) -> Result<Option<Suggestion>, Halt> {
    let verified = match verified_content(bundle, files, comment) {
        None => return Ok(None),
        Some(Err(none)) => return Ok(Some(none)),
        Some(Ok(verified)) => verified,
    };
    let head = match rest.client.file_at(owner, repo, &comment.path, head_sha, MAX_HEAD_FILE_BYTES).await {
        Ok(file) => file.map(|f| f.bytes),
        Err(GitHubError::FileTooLarge { .. } | GitHubError::NotAFile { .. }) => {
            return Ok(Some(Suggestion::None("the commented file cannot be read to place a suggestion".into())));
        }
        Err(e) => return Err(e.into()),
    };
    Ok(Some(Suggestion::of_head(head.as_deref(), verified, comment)))
}
