//! Where `.agent-zero.yml` comes from: the repository's **default branch**,
//! resolved through the API at the time of the delivery, never a pull
//! request's head (which whoever opened the pull request controls).
//!
//! The text is cached in KV, one key per repository (`policy/{owner}/{repo}`),
//! as the raw YAML or a "missing" marker with the commit it was read at: a
//! commit never changes, so the entry is good while the default branch
//! stays there, and a push overwrites it. One key a repository, however
//! many commits, so the cache needs no lifetime of its own. Parsing is the
//! agent crate's job.

use agent_zero_codecs::read_tag_first;
use agent_zero_ports::{HttpClient, KeyValue, KvError, check_key};
use serde::{Deserialize, Deserializer, Serialize};
use thiserror::Error;

use crate::client::{GitHubClient, GitHubError};

/// The policy file, at the repository root.
pub const POLICY_PATH: &str = ".agent-zero.yml";
/// Largest policy file read.
pub const MAX_POLICY_BYTES: u64 = 64 * 1024;

/// Why the policy text could not be obtained. The caller reports it rather
/// than falling back to the defaults, which would hide a broken file.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum PolicySourceError {
    /// Resolving the default branch or reading the file failed.
    #[error("reading {POLICY_PATH}: {0}")]
    Api(#[from] GitHubError),
    /// The file exists but is not UTF-8.
    #[error("{POLICY_PATH} at {sha} is not UTF-8")]
    NotUtf8 { sha: String },
}

/// What happened with the KV cache, for the caller to log; a cache failure
/// never fails the load.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CacheOutcome {
    /// The text came from KV.
    Hit,
    /// Fetched from GitHub and stored.
    Stored,
    /// The key would be too long for the smallest KV backend; not cached.
    Skipped,
    /// The cache could not be read (or held an unreadable entry); fetched.
    ReadFailed(String),
    /// Fetched, but storing it failed.
    WriteFailed(KvError),
}

/// The policy text of a repository's default branch.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PolicySource {
    pub default_branch: String,
    /// The default branch's head commit the text was read at.
    pub commit_sha: String,
    /// `None`: no `.agent-zero.yml` there, so the safe defaults apply.
    pub text: Option<String>,
    pub cache: CacheOutcome,
}

/// One cache entry: the file's text at commit `sha`, or that there was none.
#[derive(Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "file", rename_all = "kebab-case")]
enum CacheEntry {
    Present { sha: String, text: String },
    Missing { sha: String },
}

impl CacheEntry {
    fn sha(&self) -> &str {
        match self {
            Self::Present { sha, .. } | Self::Missing { sha } => sha,
        }
    }
}

/// Read tag first, unbuffered ([`agent_zero_codecs::TagFirst`] says why).
impl<'de> Deserialize<'de> for CacheEntry {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        read_tag_first(deserializer, "file", r#"{"file":"missing","sha":""}"#, |d| CacheEntryDe::deserialize(d))
    }
}

#[derive(Deserialize)]
#[serde(remote = "CacheEntry", rename_all = "kebab-case")]
#[allow(dead_code)]
enum CacheEntryDe {
    Present { sha: String, text: String },
    Missing { sha: String },
}

/// The KV key of the cached policy text of `owner/repo` (names are
/// lower-cased: GitHub treats them case-insensitively).
pub fn policy_cache_key(owner: &str, repo: &str) -> String {
    format!("policy/{}/{}", owner.to_ascii_lowercase(), repo.to_ascii_lowercase())
}

/// Loads the raw policy text of `owner/repo` from its default branch.
pub async fn load_policy_text<H: HttpClient, K: KeyValue>(
    client: &GitHubClient<'_, H>,
    kv: &K,
    owner: &str,
    repo: &str,
) -> Result<PolicySource, PolicySourceError> {
    let repository = client.repository(owner, repo).await?;
    let default_branch = repository.default_branch;
    let commit_sha = client.branch_head(owner, repo, &default_branch).await?;
    let key = policy_cache_key(owner, repo);
    let cacheable = check_key(&key).is_ok();

    let mut read_failure = None;
    if cacheable {
        match kv.get(&key).await {
            Ok(Some(bytes)) => match agent_zero_codecs::json::from_slice::<CacheEntry>(&bytes) {
                // Read at this commit: still the file.
                Ok(entry) if entry.sha() == commit_sha => {
                    let text = match entry {
                        CacheEntry::Present { text, .. } => Some(text),
                        CacheEntry::Missing { .. } => None,
                    };
                    return Ok(PolicySource { default_branch, commit_sha, text, cache: CacheOutcome::Hit });
                }
                // Read at an earlier commit: fetched again and replaced.
                Ok(_) => {}
                Err(_) => read_failure = Some("unreadable cache entry".to_owned()),
            },
            Ok(None) => {}
            Err(error) => read_failure = Some(error.to_string()),
        }
    }

    let file = client.file_at(owner, repo, POLICY_PATH, &commit_sha, MAX_POLICY_BYTES).await?;
    let text = match file {
        Some(file) => {
            Some(String::from_utf8(file.bytes).map_err(|_| PolicySourceError::NotUtf8 { sha: commit_sha.clone() })?)
        }
        None => None,
    };
    let cache = if !cacheable {
        CacheOutcome::Skipped
    } else {
        let sha = commit_sha.clone();
        let entry = match &text {
            Some(text) => CacheEntry::Present { sha, text: text.clone() },
            None => CacheEntry::Missing { sha },
        };
        let bytes = serde_json::to_vec(&entry).expect("a cache entry serialises");
        match (kv.put(&key, &bytes).await, read_failure) {
            (Err(error), _) => CacheOutcome::WriteFailed(error),
            (Ok(()), Some(reason)) => CacheOutcome::ReadFailed(reason),
            (Ok(()), None) => CacheOutcome::Stored,
        }
    };
    Ok(PolicySource { default_branch, commit_sha, text, cache })
}

#[cfg(test)]
mod tests {
    use super::CacheEntry;

    /// Entries written by the derived reader's era, and in sorted key order.
    #[test]
    fn cache_entries_read_in_either_key_order() {
        let read = |json: &str| serde_json::from_str::<CacheEntry>(json).map_err(|e| e.to_string());
        let present = CacheEntry::Present { sha: "ab".into(), text: "mode: fix\n".into() };
        assert_eq!(serde_json::to_string(&present).unwrap(), r#"{"file":"present","sha":"ab","text":"mode: fix\n"}"#);
        assert_eq!(read(r#"{"file":"present","sha":"ab","text":"mode: fix\n"}"#), Ok(present));
        assert_eq!(
            read(r#"{"text":"t","sha":"ab","file":"present"}"#),
            Ok(CacheEntry::Present { sha: "ab".into(), text: "t".into() })
        );
        assert_eq!(read(r#"{"file":"missing","sha":"ab"}"#), Ok(CacheEntry::Missing { sha: "ab".into() }));
        assert!(read(r#"{"file":"present","sha":"ab"}"#).unwrap_err().starts_with("missing field `text`"));
        // An entry of the per-commit cache this one replaced is not read as one.
        assert!(read(r#"{"file":"missing"}"#).unwrap_err().starts_with("missing field `sha`"));
        assert!(read(r#"{"file":"gone"}"#).unwrap_err().starts_with("unknown variant `gone`"));
    }
}
