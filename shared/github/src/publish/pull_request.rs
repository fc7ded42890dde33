//! A verified change as a pull request, through the Git data API: blobs, a
//! tree on top of the default branch's, a commit whose parent is the
//! default branch head, a **fresh** ref, then the pull request.
//!
//! Only `POST git/refs` writes a ref: an existing ref is never moved
//! (no `PATCH`, no `force`), and the default branch is never the target.
//! A branch left by an earlier attempt of the same task (same tree) is
//! reused; any other existing branch of that name is a recorded failure.

use agent_zero_contracts::TreeFile;
use agent_zero_ports::HttpClient;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;
use serde_json::{Value, json};

use super::PublishFile;
use super::rest::{Halt, Rest, error_message};
use super::{PublishedPullRequest, StepOutcome};
use crate::client::{check_ref, encode, is_sha, repo_path};

/// Mode of a file the verified tree does not list (regular).
const FILE_MODE: &str = "100644";

/// The tree mode of `path`: the one the sandbox held after the checks
/// (`tree`, the evidence's verified tree), else regular. A symlink is
/// refused: its blob would be the link target, not what was verified.
fn tree_mode<'t>(tree: &'t [TreeFile], path: &str) -> Result<&'t str, String> {
    match tree.iter().find(|t| t.path == path).map(|t| t.mode.as_str()) {
        None => Ok(FILE_MODE),
        Some(mode @ ("100644" | "100755")) => Ok(mode),
        Some(other) => Err(format!("`{path}` has mode {other} in the verified tree; only files are published")),
    }
}

#[derive(Deserialize)]
struct Sha {
    sha: String,
}

#[derive(Deserialize)]
struct GitRef {
    object: Sha,
}

#[derive(Deserialize)]
struct GitCommit {
    tree: Sha,
}

#[derive(Deserialize)]
struct Pull {
    number: u64,
    html_url: String,
}

/// What the branch step produced for the pull request step.
#[derive(Debug)]
pub(crate) struct Branch {
    pub(crate) name: String,
    pub(crate) base: String,
}

/// Commits `files` (with their modes in `tree`) on top of `base`'s head
/// and creates `branch` for it.
#[allow(clippy::too_many_arguments)] // one commit's parts, named at the one call site
pub(crate) async fn publish_branch<H: HttpClient>(
    rest: &Rest<'_, '_, H>,
    owner: &str,
    repo: &str,
    base: &str,
    branch: &str,
    message: &str,
    files: &[PublishFile<'_>],
    tree: &[TreeFile],
) -> Result<StepOutcome, Halt> {
    if branch == base {
        return Ok(StepOutcome::failed("refusing to write the default branch"));
    }
    let repo_path = repo_path(owner, repo)?;
    check_ref(base)?;
    let head_url = rest.url(&format!("/repos/{repo_path}/git/ref/heads/{}", encode(base, true)));
    let head: GitRef = rest.json("get default branch ref", http::Method::GET, &head_url, None).await?;
    if !is_sha(&head.object.sha) {
        return Ok(StepOutcome::failed("the default branch does not point at a commit"));
    }
    let base_tree = commit_tree(rest, &repo_path, &head.object.sha).await?;

    let mut entries = Vec::with_capacity(files.len());
    for file in files {
        let mode = match tree_mode(tree, file.path) {
            Ok(mode) => mode,
            Err(reason) => return Ok(StepOutcome::failed(reason)),
        };
        let sha = match file.content {
            Some(bytes) => {
                let url = rest.url(&format!("/repos/{repo_path}/git/blobs"));
                let body = json!({
                    "content": STANDARD.encode(bytes),
                    "encoding": "base64",
                });
                let blob: Sha = rest.json("create blob", http::Method::POST, &url, Some(&body)).await?;
                Value::from(blob.sha)
            }
            None => Value::Null,
        };
        entries.push(json!({"path": file.path, "mode": mode, "type": "blob", "sha": sha}));
    }
    let url = rest.url(&format!("/repos/{repo_path}/git/trees"));
    let body = json!({"base_tree": base_tree, "tree": entries});
    let tree: Sha = rest.json("create tree", http::Method::POST, &url, Some(&body)).await?;

    // An earlier attempt of this task may have got as far as the ref.
    let branch_url = rest.url(&format!("/repos/{repo_path}/git/ref/heads/{}", encode(branch, true)));
    let existing = rest.call("get branch ref", http::Method::GET, &branch_url, None).await?;
    if existing.status() != http::StatusCode::NOT_FOUND {
        let existing: GitRef = rest.decode("get branch ref", existing)?;
        if commit_tree(rest, &repo_path, &existing.object.sha).await? == tree.sha {
            return Ok(StepOutcome::Reused { url: None });
        }
        return Ok(StepOutcome::failed(format!(
            "branch {branch} already exists with other content; it is never overwritten"
        )));
    }

    let url = rest.url(&format!("/repos/{repo_path}/git/commits"));
    let body = json!({"message": message, "tree": tree.sha, "parents": [head.object.sha]});
    let commit: Sha = rest.json("create commit", http::Method::POST, &url, Some(&body)).await?;

    let url = rest.url(&format!("/repos/{repo_path}/git/refs"));
    let body = json!({"ref": format!("refs/heads/{branch}"), "sha": commit.sha});
    let created = rest.call("create branch ref", http::Method::POST, &url, Some(&body)).await?;
    if created.status().is_success() {
        return Ok(StepOutcome::Created { url: None });
    }
    if created.status() == http::StatusCode::UNPROCESSABLE_ENTITY
        && error_message(&created).contains("Reference already exists")
    {
        return Ok(StepOutcome::failed(format!(
            "branch {branch} already exists (created concurrently); it is never overwritten"
        )));
    }
    Err(rest.failure("create branch ref", created))
}

/// The tree sha of a commit.
async fn commit_tree<H: HttpClient>(rest: &Rest<'_, '_, H>, repo_path: &str, sha: &str) -> Result<String, Halt> {
    if !is_sha(sha) {
        return Err(Halt::Failed("a ref does not point at a commit".into()));
    }
    let url = rest.url(&format!("/repos/{repo_path}/git/commits/{sha}"));
    let commit: GitCommit = rest.json("get commit", http::Method::GET, &url, None).await?;
    Ok(commit.tree.sha)
}

/// Opens the pull request `branch` → `base`, unless one is already open.
pub(crate) async fn open<H: HttpClient>(
    rest: &Rest<'_, '_, H>,
    owner: &str,
    repo: &str,
    branch: &Branch,
    title: &str,
    body: &str,
) -> Result<(StepOutcome, Option<PublishedPullRequest>), Halt> {
    let repo_path = repo_path(owner, repo)?;
    let published =
        |pull: Pull| PublishedPullRequest { number: pull.number, url: pull.html_url, branch: branch.name.clone() };
    let url = rest.url(&format!(
        "/repos/{repo_path}/pulls?head={}&state=open",
        encode(&format!("{owner}:{}", branch.name), false)
    ));
    let listed = rest.call("list pull requests", http::Method::GET, &url, None).await?;
    // A listing GitHub refuses is not proof of absence, but creating is
    // still safe: GitHub refuses a second open pull request for a head.
    if listed.status().is_success()
        && let Ok(open) = rest.decode::<Vec<Pull>>("list pull requests", listed)
        && let Some(pull) = open.into_iter().next()
    {
        let pull = published(pull);
        return Ok((StepOutcome::Reused { url: Some(pull.url.clone()) }, Some(pull)));
    }

    let url = rest.url(&format!("/repos/{repo_path}/pulls"));
    let request = json!({"title": title, "head": branch.name, "base": branch.base, "body": body});
    let response = rest.call("create pull request", http::Method::POST, &url, Some(&request)).await?;
    if response.status() == http::StatusCode::UNPROCESSABLE_ENTITY
        && error_message(&response).contains("pull request already exists")
    {
        let reason = format!("an open pull request for {} already exists", branch.name);
        return Ok((StepOutcome::Skipped { reason }, None));
    }
    let pull = published(rest.decode("create pull request", response)?);
    Ok((StepOutcome::Created { url: Some(pull.url.clone()) }, Some(pull)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_come_from_the_verified_tree_and_symlinks_are_refused() {
        let file = |path: &str, mode: &str| TreeFile {
            path: path.into(),
            sha256: "0".repeat(64),
            bytes: 1,
            mode: mode.into(),
        };
        let tree = [file("run.sh", "100755"), file("a.py", "100644"), file("link", "120000")];
        assert_eq!(tree_mode(&tree, "run.sh"), Ok("100755"));
        assert_eq!(tree_mode(&tree, "a.py"), Ok("100644"));
        assert_eq!(tree_mode(&tree, "unlisted.txt"), Ok("100644"));
        assert!(tree_mode(&tree, "link").unwrap_err().contains("`link` has mode 120000"));
    }
}
