//! What the reference server's integration tests share: an HTTP client,
//! the server on a port it binds itself, and a fixture repository.

#![allow(dead_code, reason = "each test crate uses some of it")]

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use agent_zero_ports::{HttpClient, HttpError};

#[derive(Debug)]
pub(crate) struct Ureq(pub(crate) ureq::Agent);

impl HttpClient for Ureq {
    async fn send(&self, request: http::Request<Vec<u8>>) -> Result<http::Response<Vec<u8>>, HttpError> {
        let response = self.0.run(request).map_err(|e| HttpError::Transport(e.to_string()))?;
        let (parts, mut body) = response.into_parts();
        let bytes = body.read_to_vec().map_err(|e| HttpError::Transport(e.to_string()))?;
        Ok(http::Response::from_parts(parts, bytes))
    }
}

pub(crate) struct Server(Child, pub(crate) String);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the server on a port it binds itself (`--listen 127.0.0.1:0`) and
/// reads the address from its first line of standard error: a port chosen
/// here and bound there could be taken in between by another test's
/// server (these tests run in parallel), and this one would then talk to
/// that one.
pub(crate) fn start_server(repos: &Path, token: &str) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_agent-zero-sandbox"))
        .args(["--listen", "127.0.0.1:0", "--repos"])
        .arg(repos)
        .env("AGENT_ZERO_SANDBOX_TOKEN", token)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    // Owned by the guard from here: killed and waited for on every path.
    let mut server = Server(child, String::new());
    // The server names its address once bound, or says why it cannot and
    // exits (end of file): this read does not wait on anything else.
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let Some(address) = line.trim_end().strip_prefix("agent-zero-sandbox listening on ") else {
        panic!("sandbox server did not start: {line:?}");
    };
    server.1 = format!("http://{address}");
    // Drained so the server never blocks on a full pipe.
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    server
}

pub(crate) fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git").args(args).current_dir(dir).status().unwrap();
    assert!(status.success(), "git {args:?}");
}

pub(crate) fn fixture_repo(root: &Path) {
    let repo = root.join("acme/app");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "--quiet", "-b", "main"]);
    std::fs::write(repo.join("README.md"), "hello\n").unwrap();
    git(&repo, &["-c", "user.name=t", "-c", "user.email=t@e", "add", "README.md"]);
    git(&repo, &["-c", "user.name=t", "-c", "user.email=t@e", "commit", "--quiet", "-m", "init"]);
}
