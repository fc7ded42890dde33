//! The saved login on the binary, with the process's own environment: a
//! flag wins over `AGENT_ZERO_URL`/`AGENT_ZERO_TOKEN`, which win over the
//! saved login; the saved token goes only to the saved deployment; the
//! file is in `$XDG_CONFIG_HOME/agent-zero/` (else `$HOME/.config/…`),
//! owner-only. Two loopback deployments record the bearer each request
//! carried; every wait is on the child's exit.

use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};

/// A loopback deployment answering every request with an empty task page
/// (and the audit log `login` checks), recording each `Authorization`.
struct Deployment {
    url: String,
    bearers: Arc<Mutex<Vec<Option<String>>>>,
    server: Arc<tiny_http::Server>,
}

impl Deployment {
    fn start() -> Self {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").unwrap());
        let url = format!("http://127.0.0.1:{}", server.server_addr().to_ip().unwrap().port());
        let bearers = Arc::new(Mutex::new(Vec::new()));
        let (serving, seen) = (Arc::clone(&server), Arc::clone(&bearers));
        std::thread::spawn(move || {
            while let Ok(request) = serving.recv() {
                let bearer = request
                    .headers()
                    .iter()
                    .find(|h| h.field.equiv("authorization"))
                    .map(|h| h.value.as_str().to_owned());
                seen.lock().unwrap().push(bearer);
                let body = if request.url().starts_with("/api/v1/audit") {
                    r#"{"entries":[]}"#
                } else {
                    r#"{"items":[],"nextCursor":null}"#
                };
                let header = tiny_http::Header::from_bytes("content-type", "application/json").unwrap();
                let _ = request.respond(tiny_http::Response::from_string(body).with_header(header));
            }
        });
        Self { url, bearers, server }
    }

    fn last_bearer(&self) -> Option<String> {
        self.bearers.lock().unwrap().last().cloned().flatten()
    }

    fn requests(&self) -> usize {
        self.bearers.lock().unwrap().len()
    }
}

impl Drop for Deployment {
    fn drop(&mut self) {
        self.server.unblock();
    }
}

/// `agent-zero ARGS` with `env` set and nothing else of ours inherited:
/// (status, stdout, stderr).
fn agent_zero(args: &[&str], env: &[(&str, &Path)], vars: &[(&str, &str)]) -> (i32, String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agent-zero"));
    command.args(args);
    for name in ["AGENT_ZERO_URL", "AGENT_ZERO_TOKEN", "XDG_CONFIG_HOME", "HOME"] {
        command.env_remove(name);
    }
    for (name, path) in env {
        command.env(name, path);
    }
    for (name, value) in vars {
        command.env(name, value);
    }
    let output = command.output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (output.status.code().unwrap_or(-1), text(&output.stdout), text(&output.stderr))
}

#[test]
fn flag_then_environment_then_saved_login_on_the_binary() {
    let config = tempfile::tempdir().unwrap();
    let xdg = [("XDG_CONFIG_HOME", config.path())];
    let (saved, other) = (Deployment::start(), Deployment::start());

    let (status, out, err) = agent_zero(&["login", "--url", &saved.url], &xdg, &[("AGENT_ZERO_TOKEN", "tok-saved")]);
    assert_eq!(status, 0, "{out}{err}");
    assert!(!out.contains("tok-saved") && !err.contains("tok-saved"), "{out}{err}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let file = config.path().join("agent-zero/login.json");
        assert_eq!(std::fs::metadata(file).unwrap().permissions().mode() & 0o777, 0o600);
    }

    // Nothing given: the saved deployment and token.
    let (status, _, err) = agent_zero(&["tasks", "list"], &xdg, &[]);
    assert_eq!(status, 0, "{err}");
    assert_eq!(saved.last_bearer().as_deref(), Some("Bearer tok-saved"));
    // The environment's token wins over the saved one.
    let (status, _, err) = agent_zero(&["tasks", "list"], &xdg, &[("AGENT_ZERO_TOKEN", "tok-env")]);
    assert_eq!(status, 0, "{err}");
    assert_eq!(saved.last_bearer().as_deref(), Some("Bearer tok-env"));
    // The flag wins over the environment.
    let (status, _, err) =
        agent_zero(&["tasks", "--token", "tok-flag", "list"], &xdg, &[("AGENT_ZERO_TOKEN", "tok-env")]);
    assert_eq!(status, 0, "{err}");
    assert_eq!(saved.last_bearer().as_deref(), Some("Bearer tok-flag"));
    // The environment's URL wins, and is sent no saved token.
    let (status, _, err) = agent_zero(&["tasks", "list"], &xdg, &[("AGENT_ZERO_URL", &other.url)]);
    assert_eq!(status, 0, "{err}");
    assert_eq!((other.requests(), other.last_bearer()), (1, None));

    // Without XDG_CONFIG_HOME the login is under $HOME/.config.
    let home = tempfile::tempdir().unwrap();
    let (status, _, err) =
        agent_zero(&["login", "--url", &other.url, "--token", "tok-home"], &[("HOME", home.path())], &[]);
    assert_eq!(status, 0, "{err}");
    assert!(home.path().join(".config/agent-zero/login.json").is_file());
    let (status, _, err) = agent_zero(&["logout"], &[("HOME", home.path())], &[]);
    assert_eq!(status, 0, "{err}");
    assert!(!home.path().join(".config/agent-zero/login.json").exists());
}
