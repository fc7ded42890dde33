//! An in-process GitHub API: answers with the documented response shapes
//! and records every request.

#![allow(dead_code, unreachable_pub)]

use std::cell::RefCell;
use std::collections::BTreeMap;

use agent_zero_ports::{HttpClient, HttpError, RequestTimeout};

/// One request as the fake saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    /// Path and query, without the base URL.
    pub target: String,
    pub uri: String,
    pub headers: BTreeMap<String, String>,
    pub timeout_ms: Option<u64>,
}

/// Routes `METHOD path?query` to `(status, body)`.
#[derive(Debug, Default)]
pub struct FakeGitHub {
    routes: RefCell<BTreeMap<String, (u16, Vec<u8>)>>,
    pub seen: RefCell<Vec<Seen>>,
    base: String,
}

impl FakeGitHub {
    pub fn new(base: &str) -> Self {
        Self { base: base.to_owned(), ..Self::default() }
    }

    pub fn route(&self, method: &str, target: &str, status: u16, body: impl Into<Vec<u8>>) {
        self.routes.borrow_mut().insert(format!("{method} {target}"), (status, body.into()));
    }

    pub fn targets(&self) -> Vec<String> {
        self.seen.borrow().iter().map(|s| format!("{} {}", s.method, s.target)).collect()
    }

    pub fn clear_seen(&self) {
        self.seen.borrow_mut().clear();
    }
}

impl HttpClient for FakeGitHub {
    async fn send(&self, request: http::Request<Vec<u8>>) -> Result<http::Response<Vec<u8>>, HttpError> {
        let uri = request.uri().to_string();
        let target = uri.strip_prefix(&self.base).unwrap_or(&uri).to_owned();
        let headers =
            request.headers().iter().map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap().to_owned())).collect();
        self.seen.borrow_mut().push(Seen {
            method: request.method().to_string(),
            target: target.clone(),
            uri,
            headers,
            timeout_ms: RequestTimeout::of(&request),
        });
        let key = format!("{} {target}", request.method());
        let (status, body) = self.routes.borrow().get(&key).cloned().unwrap_or((
            404,
            br#"{"message":"Not Found","documentation_url":"https://docs.github.com/rest","status":"404"}"#.to_vec(),
        ));
        Ok(http::Response::builder().status(status).body(body).unwrap())
    }
}

pub use agent_zero_ports::block_on;

/// `GET /repos/{owner}/{repo}` (trimmed from GitHub's example response).
pub fn repository_json(owner: &str, repo: &str, default_branch: &str) -> String {
    serde_json::json!({
        "id": 1296269,
        "node_id": "MDEwOlJlcG9zaXRvcnkxMjk2MjY5",
        "name": repo,
        "full_name": format!("{owner}/{repo}"),
        "owner": {"login": owner, "id": 1, "type": "User", "site_admin": false},
        "private": false,
        "html_url": format!("https://github.com/{owner}/{repo}"),
        "description": "This your first repo!",
        "fork": false,
        "url": format!("https://api.github.com/repos/{owner}/{repo}"),
        "default_branch": default_branch,
        "visibility": "public",
        "permissions": {"admin": false, "push": false, "pull": true},
        "allow_forking": true,
        "topics": ["octocat", "api"]
    })
    .to_string()
}

/// `GET /repos/{o}/{r}/git/ref/heads/{branch}`.
pub fn ref_json(owner: &str, repo: &str, branch: &str, sha: &str) -> String {
    serde_json::json!({
        "ref": format!("refs/heads/{branch}"),
        "node_id": "MDM6UmVmcmVmcy9oZWFkcy9mZWF0dXJlQQ==",
        "url": format!("https://api.github.com/repos/{owner}/{repo}/git/refs/heads/{branch}"),
        "object": {
            "type": "commit",
            "sha": sha,
            "url": format!("https://api.github.com/repos/{owner}/{repo}/git/commits/{sha}")
        }
    })
    .to_string()
}

/// `GET /repos/{o}/{r}/contents/{path}` for a file: base64 wrapped at 60
/// columns with `\n`, as GitHub sends it.
pub fn file_json(path: &str, text: &[u8]) -> String {
    use base64::Engine as _;
    let encoded = base64::engine::general_purpose::STANDARD.encode(text);
    let wrapped: Vec<&str> = encoded.as_bytes().chunks(60).map(|c| std::str::from_utf8(c).unwrap()).collect();
    serde_json::json!({
        "type": "file",
        "encoding": "base64",
        "size": text.len(),
        "name": path.rsplit('/').next().unwrap(),
        "path": path,
        "content": format!("{}\n", wrapped.join("\n")),
        "sha": "3d21ec53a331a6f037a91c368710b99387d012c1",
        "url": format!("https://api.github.com/repos/octokit/octokit.rb/contents/{path}"),
        "git_url": "https://api.github.com/repos/octokit/octokit.rb/git/blobs/3d21ec53a331a6f037a91c368710b99387d012c1",
        "html_url": format!("https://github.com/octokit/octokit.rb/blob/master/{path}"),
        "download_url": format!("https://raw.githubusercontent.com/octokit/octokit.rb/master/{path}"),
        "_links": {
            "git": "https://api.github.com/repos/octokit/octokit.rb/git/blobs/3d21ec53a331a6f037a91c368710b99387d012c1",
            "self": format!("https://api.github.com/repos/octokit/octokit.rb/contents/{path}"),
            "html": format!("https://github.com/octokit/octokit.rb/blob/master/{path}")
        }
    })
    .to_string()
}

/// `POST /app/installations/{id}/access_tokens` (201).
pub fn access_token_json(token: &str, expires_at: &str) -> String {
    serde_json::json!({
        "token": token,
        "expires_at": expires_at,
        "permissions": {"issues": "write", "contents": "read"},
        "repository_selection": "selected"
    })
    .to_string()
}
