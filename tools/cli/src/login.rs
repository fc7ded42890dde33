//! `agent-zero login` and `logout`: one saved deployment and its token, in
//! the user's config directory (`$XDG_CONFIG_HOME/agent-zero/login.json`,
//! else `~/.config/agent-zero/login.json`), written owner-only (0600, in a
//! 0700 directory) through a temporary file renamed over the old one, so
//! the token is never readable by another user, not even for a moment.
//!
//! Which deployment a command talks to, and with which token
//! ([`resolve`]): a flag, else its environment variable (`AGENT_ZERO_URL`,
//! `AGENT_ZERO_TOKEN`, which clap already merges), else the saved login.
//! The saved token goes only to the saved deployment: given another URL
//! by flag or environment, no saved token is sent there.
//!
//! `login` checks the pair before it saves it (`GET /api/v1/audit?limit=1`,
//! which needs a valid token whatever the deployment's read access), so a
//! mistyped token is refused now rather than at the next command. No
//! command prints the token.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::api::Api;
use crate::text::printable;
use crate::{EXIT_OK, Target};

/// The file's name in the config directory.
const FILE: &str = "login.json";

/// Where a saved login lives: `$XDG_CONFIG_HOME/agent-zero` (when set and
/// absolute, as the XDG base directory specification asks), else
/// `$HOME/.config/agent-zero`; `None` without either.
pub(crate) fn config_dir(xdg_config_home: Option<&str>, home: Option<&str>) -> Option<PathBuf> {
    match xdg_config_home.map(str::trim).filter(|x| Path::new(x).is_absolute()) {
        Some(xdg) => Some(Path::new(xdg).join("agent-zero")),
        None => home.map(str::trim).filter(|h| !h.is_empty()).map(|h| Path::new(h).join(".config").join("agent-zero")),
    }
}

/// A saved deployment and its token.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Saved {
    pub(crate) url: String,
    pub(crate) token: String,
}

impl std::fmt::Debug for Saved {
    // Never the token.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Saved").field("url", &self.url).finish_non_exhaustive()
    }
}

/// The saved login in `dir`, if any. A file another user could read is
/// refused (as ssh refuses a private key anyone can read), naming the fix.
pub(crate) fn read(dir: &Path) -> Result<Option<Saved>, String> {
    let path = dir.join(FILE);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("the saved login {}: {e}", path.display())),
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?.permissions().mode();
        if mode & 0o077 != 0 {
            return Err(format!(
                "the saved login {} is readable by others (mode {:o}): run `chmod 600 {0}`, or `agent-zero login` again",
                path.display(),
                mode & 0o777
            ));
        }
    }
    let value: Value = serde_json::from_slice(&bytes)
        .map_err(|e| format!("the saved login {} is not JSON ({e}): run `agent-zero login` again", path.display()))?;
    match (value["url"].as_str(), value["token"].as_str()) {
        (Some(url), Some(token)) => Ok(Some(Saved { url: url.to_owned(), token: token.to_owned() })),
        _ => Err(format!("the saved login {} lacks `url` or `token`: run `agent-zero login` again", path.display())),
    }
}

/// Saves `saved` in `dir` (created 0700): written to a new 0600 file, then
/// renamed over the old one.
pub(crate) fn save(dir: &Path, saved: &Saved) -> Result<PathBuf, String> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        builder.mode(0o700);
    }
    builder.create(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = dir.join(FILE);
    let temporary = dir.join(format!("{FILE}.{}.tmp", std::process::id()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let body = serde_json::to_vec_pretty(&json!({ "url": saved.url, "token": saved.token })).unwrap_or_default();
    let written = options
        .open(&temporary)
        .and_then(|mut file| file.write_all(&body).and_then(|()| file.sync_all()))
        .and_then(|()| std::fs::rename(&temporary, &path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temporary);
        return Err(format!("{}: {e}", path.display()));
    }
    Ok(path)
}

/// Removes the saved login in `dir`; whether there was one.
pub(crate) fn forget(dir: &Path) -> Result<bool, String> {
    let path = dir.join(FILE);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// The deployment and token a command uses: `url` and `token` as given
/// (flag, else environment), else the saved login's; the saved token only
/// when talking to the saved deployment.
pub(crate) fn resolve(url: Option<&str>, token: Option<&str>, saved: Option<&Saved>) -> Result<Target, String> {
    let given = |v: Option<&str>| v.map(str::trim).filter(|v| !v.is_empty()).map(str::to_owned);
    let (url, token) = (given(url), given(token));
    match (url, saved) {
        (Some(url), Some(saved)) => {
            let same = same_deployment(&url, &saved.url);
            let token = token.or_else(|| same.then(|| saved.token.clone()));
            Ok(Target { url, token })
        }
        (Some(url), None) => Ok(Target { url, token }),
        (None, Some(saved)) => {
            Ok(Target { url: saved.url.clone(), token: token.or_else(|| Some(saved.token.clone())) })
        }
        (None, None) => {
            Err("no deployment: give --url (or set AGENT_ZERO_URL), or save one with `agent-zero login`".into())
        }
    }
}

/// Whether two base URLs name the same deployment (scheme and host
/// case-insensitively, a trailing slash aside).
fn same_deployment(a: &str, b: &str) -> bool {
    fn parts(url: &str) -> (String, &str) {
        let url = url.trim().trim_end_matches('/');
        let split = url.find("://").and_then(|i| url[i + 3..].find('/').map(|j| i + 3 + j)).unwrap_or(url.len());
        let (origin, path) = url.split_at(split);
        (origin.to_ascii_lowercase(), path)
    }
    parts(a) == parts(b)
}

/// `login`: checks `url` and `token` against the deployment, then saves
/// them in `dir`.
pub(crate) fn login(dir: Option<&Path>, url: &str, token: &str, out: &mut dyn Write) -> Result<u8, String> {
    let dir = dir.ok_or("no config directory: set XDG_CONFIG_HOME or HOME")?;
    let api = Api::new(url, Some(token))?;
    if !api.has_token() {
        return Err("--token: empty".into());
    }
    let answer = api.get("/api/v1/audit?limit=1", "application/json")?;
    if !answer.is_success() {
        return Err(format!("{} refused the token, nothing saved: {}", printable(api.base()), answer.error_line()));
    }
    let saved = Saved { url: api.base().to_owned(), token: token.trim().to_owned() };
    let path = save(dir, &saved)?;
    writeln!(out, "logged in to {}; saved in {} (mode 600)", printable(api.base()), path.display())
        .map_err(|e| e.to_string())?;
    Ok(EXIT_OK)
}

/// `logout`: forgets the saved login in `dir`.
pub(crate) fn logout(dir: Option<&Path>, out: &mut dyn Write) -> Result<u8, String> {
    let dir = dir.ok_or("no config directory: set XDG_CONFIG_HOME or HOME")?;
    let saved = read(dir).ok().flatten();
    let line = match (forget(dir)?, saved) {
        (true, Some(saved)) => format!("logged out of {}\n", printable(&saved.url)),
        (true, None) => "removed the saved login\n".to_owned(),
        (false, _) => "no saved login\n".to_owned(),
    };
    out.write_all(line.as_bytes()).map_err(|e| e.to_string())?;
    Ok(EXIT_OK)
}
