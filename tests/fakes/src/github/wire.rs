//! GitHub's JSON shapes, as the REST API (`2022-11-28`) sends them.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use super::store::{Commit, FlatTree, GitStore};
use crate::server::Reply;

/// Where GitHub's error bodies point.
pub(crate) const DOCS: &str = "https://docs.github.com/rest";

/// `{"message", "documentation_url", "status"}` with `status`.
pub(crate) fn error(status: u16, message: &str) -> Reply {
    Reply::json(status, &json!({"message": message, "documentation_url": DOCS, "status": status.to_string()}))
}

/// 404 `Not Found`.
pub(crate) fn not_found() -> Reply {
    error(404, "Not Found")
}

/// 422 `Validation Failed` with one `errors` entry.
pub(crate) fn validation_failed(resource: &str, field: &str, code: &str, message: Option<&str>) -> Reply {
    let mut detail = json!({"resource": resource, "field": field, "code": code});
    if let Some(message) = message {
        detail["message"] = Value::from(message);
    }
    Reply::json(
        422,
        &json!({"message": "Validation Failed", "errors": [detail], "documentation_url": DOCS, "status": "422"}),
    )
}

/// Base64 the way GitHub's contents API sends it: a line break after every
/// 60 characters and at the end.
pub(crate) fn base64_lines(bytes: &[u8]) -> String {
    let packed = STANDARD.encode(bytes);
    let mut out = String::with_capacity(packed.len() + packed.len() / 60 + 1);
    for chunk in packed.as_bytes().chunks(60) {
        out.push_str(std::str::from_utf8(chunk).unwrap_or_default());
        out.push('\n');
    }
    out
}

/// A `node_id`-shaped opaque id.
pub(crate) fn node_id(kind: &str, id: &str) -> String {
    STANDARD.encode(format!("{kind}:{id}"))
}

/// URL builder for one repository.
#[derive(Debug, Clone)]
pub(crate) struct RepoUrls {
    pub(crate) api: String,
    pub(crate) html: String,
    pub(crate) owner: String,
    pub(crate) name: String,
}

impl RepoUrls {
    pub(crate) fn new(base: &str, owner: &str, name: &str) -> Self {
        Self {
            api: format!("{base}/repos/{owner}/{name}"),
            html: format!("https://github.com/{owner}/{name}"),
            owner: owner.to_owned(),
            name: name.to_owned(),
        }
    }

    /// A user or bot account object.
    pub(crate) fn user(base: &str, login: &str) -> Value {
        let kind = if login.ends_with("[bot]") { "Bot" } else { "User" };
        json!({
            "login": login,
            "id": stable_number(login),
            "node_id": node_id("User", login),
            "type": kind,
            "site_admin": false,
            "url": format!("{base}/users/{}", login.replace("[bot]", "%5Bbot%5D")),
            "html_url": format!("https://github.com/{login}"),
        })
    }

    pub(crate) fn git_commit(&self, sha: &str, commit: &Commit) -> Value {
        let person = json!({"name": commit.author_name, "email": commit.author_email, "date": commit.date});
        json!({
            "sha": sha,
            "node_id": node_id("Commit", sha),
            "url": format!("{}/git/commits/{sha}", self.api),
            "html_url": format!("{}/commit/{sha}", self.html),
            "author": person,
            "committer": person,
            "message": commit.message,
            "tree": {"sha": commit.tree, "url": format!("{}/git/trees/{}", self.api, commit.tree)},
            "parents": commit.parents.iter().map(|p| json!({
                "sha": p,
                "url": format!("{}/git/commits/{p}", self.api),
                "html_url": format!("{}/commit/{p}", self.html),
            })).collect::<Vec<_>>(),
            "verification": {"verified": false, "reason": "unsigned", "signature": null, "payload": null, "verified_at": null},
        })
    }

    /// `GET /repos/{o}/{r}/commits/{ref}`: the REST commit with `files`
    /// changed against the first parent.
    pub(crate) fn rest_commit(&self, base: &str, sha: &str, commit: &Commit, git: &GitStore) -> Value {
        let git_commit = self.git_commit(sha, commit);
        let empty = FlatTree::new();
        let now = git.tree(&commit.tree).unwrap_or(&empty);
        let before = commit.parents.first().and_then(|p| git.files_at(p)).unwrap_or(&empty);
        let mut files = Vec::new();
        for (path, (_, blob)) in now {
            match before.get(path) {
                None => files.push(json!({"filename": path, "status": "added", "sha": blob})),
                Some((_, old)) if old != blob => {
                    files.push(json!({"filename": path, "status": "modified", "sha": blob}))
                }
                Some(_) => {}
            }
        }
        for (path, (_, blob)) in before {
            if !now.contains_key(path) {
                files.push(json!({"filename": path, "status": "removed", "sha": blob}));
            }
        }
        json!({
            "sha": sha,
            "node_id": node_id("Commit", sha),
            "url": format!("{}/commits/{sha}", self.api),
            "html_url": format!("{}/commit/{sha}", self.html),
            "commit": {
                "author": git_commit["author"],
                "committer": git_commit["committer"],
                "message": commit.message,
                "tree": git_commit["tree"],
                "url": git_commit["url"],
                "comment_count": 0,
                "verification": git_commit["verification"],
            },
            "author": Self::user(base, &self.owner),
            "committer": Self::user(base, &self.owner),
            "parents": git_commit["parents"],
            "files": files,
        })
    }

    pub(crate) fn git_ref(&self, name: &str, sha: &str) -> Value {
        json!({
            "ref": format!("refs/{name}"),
            "node_id": node_id("Ref", name),
            "url": format!("{}/git/refs/{name}", self.api),
            "object": {"type": "commit", "sha": sha, "url": format!("{}/git/commits/{sha}", self.api)},
        })
    }

    /// A tree listing: direct children, or every entry when `recursive`.
    pub(crate) fn tree(&self, sha: &str, flat: &FlatTree, recursive: bool, git: &mut GitStore) -> Value {
        let mut entries: Vec<Value> = Vec::new();
        let mut dirs: Vec<String> = Vec::new();
        for (path, (mode, blob)) in flat {
            let parts: Vec<&str> = path.split('/').collect();
            for depth in 1..parts.len() {
                let dir = parts[..depth].join("/");
                if (recursive || depth == 1) && !dirs.contains(&dir) {
                    dirs.push(dir);
                }
            }
            if recursive || parts.len() == 1 {
                let size = git.blob(blob).map_or(0, <[u8]>::len);
                entries.push(json!({
                    "path": path, "mode": mode, "type": "blob", "sha": blob, "size": size,
                    "url": format!("{}/git/blobs/{blob}", self.api),
                }));
            }
        }
        for dir in dirs {
            let prefix = format!("{dir}/");
            let sub: FlatTree = flat
                .iter()
                .filter_map(|(p, e)| p.strip_prefix(&prefix).map(|rest| (rest.to_owned(), e.clone())))
                .collect();
            let sub_sha = git.put_tree(sub);
            entries.push(json!({
                "path": dir, "mode": "040000", "type": "tree", "sha": sub_sha,
                "url": format!("{}/git/trees/{sub_sha}", self.api),
            }));
        }
        entries.sort_by(|a, b| a["path"].as_str().cmp(&b["path"].as_str()));
        json!({"sha": sha, "url": format!("{}/git/trees/{sha}", self.api), "tree": entries, "truncated": false})
    }

    /// A contents-API file entry; over 1 MB GitHub sends no content.
    pub(crate) fn content_file(&self, path: &str, git_ref: &str, sha: &str, bytes: &[u8]) -> Value {
        let (encoding, content) =
            if bytes.len() > 1_048_576 { ("none", String::new()) } else { ("base64", base64_lines(bytes)) };
        let mut entry = self.content_entry(path, git_ref, sha, "file", bytes.len());
        entry["encoding"] = Value::from(encoding);
        entry["content"] = Value::from(content);
        entry
    }

    /// A contents-API entry without content (directory listings).
    pub(crate) fn content_entry(&self, path: &str, git_ref: &str, sha: &str, kind: &str, size: usize) -> Value {
        let name = path.rsplit('/').next().unwrap_or(path);
        let url = format!("{}/contents/{path}?ref={}", self.api, crate::record::percent_encode(git_ref));
        let (git_url, html_url, download_url) = if kind == "dir" {
            (format!("{}/git/trees/{sha}", self.api), format!("{}/tree/{git_ref}/{path}", self.html), Value::Null)
        } else {
            (
                format!("{}/git/blobs/{sha}", self.api),
                format!("{}/blob/{git_ref}/{path}", self.html),
                Value::from(format!("https://raw.githubusercontent.com/{}/{}/{git_ref}/{path}", self.owner, self.name)),
            )
        };
        json!({
            "type": kind, "size": size, "name": name, "path": path, "sha": sha,
            "url": url, "git_url": git_url, "html_url": html_url, "download_url": download_url,
            "_links": {"self": url, "git": git_url, "html": html_url},
        })
    }
}

/// A stable number for a name (account ids).
pub(crate) fn stable_number(name: &str) -> u64 {
    name.bytes().fold(1_000u64, |acc, b| acc.wrapping_mul(31).wrapping_add(u64::from(b))) % 100_000_000
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_wraps_at_60() {
        let text = super::base64_lines(&[b'x'; 100]);
        let lines: Vec<&str> = text.split_terminator('\n').collect();
        assert_eq!(lines.iter().map(|l| l.len()).collect::<Vec<_>>(), [60, 60, 16]);
        assert!(text.ends_with('\n'));
    }
}
