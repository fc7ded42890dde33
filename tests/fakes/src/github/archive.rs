//! Repository archives, as GitHub serves them:
//!
//! - `GET /repos/{o}/{r}/tarball/{ref}` (authenticated like every repository
//!   route: a private repository is a 404 to an anonymous caller) answers
//!   `302 Found` with a `Location` on the codeload host that carries its own
//!   short-lived token, scoped to that one archive (REST "Download a
//!   repository archive (tar)", API version 2022-11-28).
//! - `GET /_codeload/{o}/{r}/legacy.tar.gz/{sha}?token=…` (this fake's
//!   stand-in for `codeload.github.com`) answers the gzip'd tarball, every
//!   entry under `{owner}-{repo}-{sha7}/` as GitHub's are, with each file's
//!   mode (100755 stays executable). No `Authorization` is needed or read:
//!   the link's token is the only credential, valid for [`LINK_TTL_SECS`].
//!
//! The link token is an HMAC over (repository, sha, expiry) with a key made
//! per process, so links need no state and cannot be forged or reused for
//! another archive. [`FakeGitHub::add_pull_head`] seeds a fork pull
//! request's head: a commit reachable only as `refs/pull/{n}/head`, as a
//! fork's commits are in the base repository.

use std::sync::OnceLock;

use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::state::{State, repo_key};
use super::store::{Commit, FlatTree};
use super::wire::{error, not_found};
use super::{FakeGitHub, expect_repo};
use crate::record::RecordedCall;
use crate::server::Reply;
use crate::time::{now_rfc3339, now_secs};

/// How long a link lives (GitHub's are valid for minutes).
pub(crate) const LINK_TTL_SECS: u64 = 300;

/// Whether `segments` are an archive route; `authenticate` is the
/// repository routes' own check.
pub(crate) fn route(
    state: &State,
    call: &RecordedCall,
    segments: &[&str],
    authenticate: fn(&State, &RecordedCall, &str, &str, &[&str]) -> Option<Reply>,
) -> Option<Reply> {
    match segments {
        ["repos", owner, name, "tarball", reference @ ..] if call.method == "GET" => {
            if let Some(refused) = authenticate(state, call, owner, name, &["tarball"]) {
                return Some(refused);
            }
            Some(tarball_link(state, owner, name, &reference.join("/")))
        }
        ["_codeload", owner, name, "legacy.tar.gz", sha] if call.method == "GET" => {
            Some(download(state, owner, name, sha, call.query_param("token")))
        }
        _ => None,
    }
}

fn tarball_link(state: &State, owner: &str, name: &str, reference: &str) -> Reply {
    let Some(repo) = state.repos.get(&repo_key(owner, name)) else { return not_found() };
    let reference = if reference.is_empty() { repo.default_branch.as_str() } else { reference };
    let Some(sha) = repo.git.resolve(reference) else {
        return not_found();
    };
    let expires = now_secs() + LINK_TTL_SECS;
    let token = format!("{expires}.{}", sign(owner, name, &sha, expires));
    let location = format!("{}/_codeload/{owner}/{name}/legacy.tar.gz/{sha}?token={token}", state.base_url);
    Reply { status: 302, headers: vec![("location".into(), location)], body: Vec::new(), delay_ms: 0 }
}

fn download(state: &State, owner: &str, name: &str, sha: &str, token: Option<&str>) -> Reply {
    let valid = token.and_then(|t| t.split_once('.')).is_some_and(|(expires, mac)| {
        expires.parse::<u64>().is_ok_and(|e| e >= now_secs() && constant_eq(&sign(owner, name, sha, e), mac))
    });
    if !valid {
        return error(404, "Not Found");
    }
    let Some(files) = state.repos.get(&repo_key(owner, name)).and_then(|r| r.git.files_at(sha).map(|f| (r, f))) else {
        return not_found();
    };
    let (repo, flat) = files;
    let prefix = format!("{owner}-{name}-{}", &sha[..sha.len().min(7)]);
    let tar = tar(&prefix, flat, |blob| repo.git.blob(blob).unwrap_or_default().to_vec());
    Reply {
        status: 200,
        headers: vec![
            ("content-type".into(), "application/x-gzip".into()),
            ("content-disposition".into(), format!("attachment; filename={prefix}.tar.gz")),
        ],
        body: gzip_stored(&tar),
        delay_ms: 0,
    }
}

fn key() -> &'static [u8; 32] {
    static KEY: OnceLock<[u8; 32]> = OnceLock::new();
    KEY.get_or_init(|| {
        use sha2::Digest as _;
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
        let seed = format!("{nanos}:{}:{:p}", std::process::id(), &KEY);
        Sha256::digest(seed.as_bytes()).into()
    })
}

fn sign(owner: &str, name: &str, sha: &str, expires: u64) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key()).expect("any key length");
    mac.update(format!("{owner}/{name}@{sha}:{expires}").as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

fn constant_eq(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A ustar archive of `files` under `prefix/`, ending in two zero blocks.
fn tar(prefix: &str, files: &FlatTree, blob: impl Fn(&str) -> Vec<u8>) -> Vec<u8> {
    let mut out = Vec::new();
    let mut dirs: Vec<String> = vec![String::new()];
    for path in files.keys() {
        let mut at = 0;
        while let Some(i) = path[at..].find('/') {
            let dir = path[..at + i].to_owned();
            if !dirs.contains(&dir) {
                dirs.push(dir);
            }
            at += i + 1;
        }
    }
    for dir in &dirs {
        let name = if dir.is_empty() { format!("{prefix}/") } else { format!("{prefix}/{dir}/") };
        out.extend(header(&name, 0o775, 0, b'5'));
    }
    for (path, (mode, sha)) in files {
        let content = blob(sha);
        let mode = if mode == "100755" { 0o775 } else { 0o664 };
        out.extend(header(&format!("{prefix}/{path}"), mode, content.len(), b'0'));
        out.extend(&content);
        out.resize(out.len().div_ceil(512) * 512, 0);
    }
    out.resize(out.len() + 1024, 0);
    out
}

fn header(name: &str, mode: u32, size: usize, kind: u8) -> [u8; 512] {
    let mut h = [0u8; 512];
    let (prefix, name) = if name.len() > 100 {
        // ustar splits a long path at a `/` into prefix (155) and name (100).
        let cut = name[..name.len().min(155)].rfind('/').unwrap_or(0);
        (&name[..cut], &name[cut + 1..])
    } else {
        ("", name)
    };
    let put = |h: &mut [u8; 512], at: usize, bytes: &[u8]| h[at..at + bytes.len()].copy_from_slice(bytes);
    put(&mut h, 0, &name.as_bytes()[..name.len().min(100)]);
    put(&mut h, 100, format!("{mode:07o}\0").as_bytes());
    put(&mut h, 108, b"0000000\0");
    put(&mut h, 116, b"0000000\0");
    put(&mut h, 124, format!("{size:011o}\0").as_bytes());
    put(&mut h, 136, format!("{:011o}\0", now_secs()).as_bytes());
    h[156] = kind;
    put(&mut h, 257, b"ustar\x0000");
    put(&mut h, 345, &prefix.as_bytes()[..prefix.len().min(155)]);
    put(&mut h, 148, b"        ");
    let sum: u32 = h.iter().map(|b| u32::from(*b)).sum();
    put(&mut h, 148, format!("{sum:06o}\0 ").as_bytes());
    h
}

/// A gzip member (RFC 1952) of stored deflate blocks (RFC 1951 §3.2.4).
fn gzip_stored(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255];
    let mut chunks = data.chunks(65_535).peekable();
    if chunks.peek().is_none() {
        out.extend([1, 0, 0, 0xff, 0xff]);
    }
    while let Some(chunk) = chunks.next() {
        out.push(u8::from(chunks.peek().is_none()));
        let len = chunk.len() as u16;
        out.extend(len.to_le_bytes());
        out.extend((!len).to_le_bytes());
        out.extend(chunk);
    }
    out.extend(crc32(data).to_le_bytes());
    out.extend((data.len() as u32).to_le_bytes());
    out
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for byte in data {
        crc ^= u32::from(*byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

impl FakeGitHub {
    /// Seeds the head of pull request `number` from a fork: a child of the
    /// default branch's head with `files` changed, reachable only as
    /// `refs/pull/{number}/head` (no branch of the base repository points
    /// at it). Returns its sha.
    ///
    /// # Panics
    /// When the repository was not seeded.
    pub fn add_pull_head(&self, owner: &str, repo: &str, number: u64, files: &[(&str, &str)]) -> String {
        self.with(|state| {
            let repo = expect_repo(state, owner, repo);
            let parent = repo.git.resolve(&repo.default_branch);
            let mut flat = parent.as_deref().and_then(|p| repo.git.files_at(p)).cloned().unwrap_or_default();
            for (path, content) in files {
                let blob = repo.git.put_blob(content.as_bytes());
                flat.insert((*path).to_owned(), (super::store::FILE_MODE.to_owned(), blob));
            }
            let tree = repo.git.put_tree(flat);
            let sha = repo.git.put_commit(Commit {
                tree,
                parents: parent.into_iter().collect(),
                message: format!("Changes from the fork for #{number}"),
                author_name: "fork-author".into(),
                author_email: "fork-author@users.noreply.github.com".into(),
                date: now_rfc3339(),
            });
            repo.git.refs.insert(format!("pull/{number}/head"), sha.clone());
            sha
        })
    }
}
