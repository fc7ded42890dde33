//! `agent-zero init github-app`: registers the deployment's GitHub App with
//! GitHub's manifest flow ("Registering a GitHub App from a manifest") and
//! keeps what GitHub answers in the env file `init cloudflare|spin` deploy
//! from.
//!
//! 1. The manifest is this checkout's `github-app.json` (its permissions and
//!    events are checked against GitHub's API description by
//!    `tests/github_app_manifest.rs`) with the deployment's URLs filled in
//!    ([`manifest`]).
//! 2. A loopback listener serves a page whose form posts it to
//!    `{github}/settings/apps/new` (or an organisation's) with a `state`
//!    ([`form_page`]); GitHub sends the browser back to the listener with a
//!    one-time `code` and that `state`.
//! 3. `POST {api}/app-manifests/{code}/conversions` answers the App's `id`,
//!    `pem`, `webhook_secret`, `client_id` and `client_secret`
//!    ([`Created::parse`]); they go into the env file ([`env_lines`]), never
//!    to the terminal.
//!
//! I/O boundary: [`run`] owns the listener (127.0.0.1 only), the one HTTPS
//! call (through [`crate::api::Api`]) and the env file; the rest is pure.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::env_edit::{Line, MARKER, with_settings, write_private};
use crate::{EXIT_OK, api};

/// The manifest, as the repository holds it.
const TEMPLATE: &str = include_str!("../../../github-app.json");
/// Where GitHub sends the browser back to, on the listener.
const CREATED_PATH: &str = "/github-app/created";
/// GitHub refuses an App name longer than this.
const MAX_NAME_CHARS: usize = 34;

/// What `init github-app` was given.
#[derive(Debug, Clone)]
pub(crate) struct Options<'a> {
    /// The deployment's base URL (with `AGENT_ZERO_BASE_PATH`, when set).
    pub(crate) url: &'a str,
    /// Register the App for this organisation instead of the signed-in user.
    pub(crate) org: Option<&'a str>,
    /// The App's name (unique on GitHub); default from the deployment's host.
    pub(crate) name: Option<&'a str>,
    /// Where people sign in (`https://github.com`, `https://HOST` on GHES).
    pub(crate) github_url: &'a str,
    /// GitHub's REST API (`https://api.github.com`, `https://HOST/api/v3`).
    pub(crate) api_url: &'a str,
    /// The env file the settings go into.
    pub(crate) env_file: &'a Path,
    /// `AGENT_ZERO_DASHBOARD_USERS` to set: the App then signs them in.
    pub(crate) dashboard_users: Option<&'a str>,
    /// The listener's port (0: any free one).
    pub(crate) port: u16,
    /// How long to wait for GitHub's redirect.
    pub(crate) timeout: Duration,
}

/// `url` without its trailing `/`, if it is a plain `http(s)://` base URL.
fn base_url(flag: &str, url: &str) -> Result<String, String> {
    let url = url.trim().trim_end_matches('/');
    let rest = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://"));
    match rest {
        Some(rest) if !rest.is_empty() && !url.contains(['?', '#', '@']) && !url.chars().any(char::is_whitespace) => {
            Ok(url.to_owned())
        }
        _ => {
            Err(format!("{flag}: expected a plain http:// or https:// base URL, got `{}`", crate::text::printable(url)))
        }
    }
}

/// The default App name: `Agent Zero (<host>)`, cut to GitHub's limit.
fn default_name(base: &str) -> String {
    let host = base.split("://").nth(1).unwrap_or(base).split(['/', ':']).next().unwrap_or_default();
    let label = host.split('.').next().unwrap_or(host);
    format!("Agent Zero ({label})").chars().take(MAX_NAME_CHARS).collect()
}

/// The repository's manifest with the deployment's URLs: `url` (the App's
/// homepage), the webhook at `{base}/webhooks/github`, dashboard sign-in
/// at `{base}/login/callback`, and GitHub's redirect to `redirect`.
pub(crate) fn manifest(base: &str, name: Option<&str>, redirect: &str) -> Result<Value, String> {
    let base = base_url("--url", base)?;
    let mut manifest: Value = serde_json::from_str(TEMPLATE).map_err(|e| format!("github-app.json: {e}"))?;
    let name = name.map_or_else(|| default_name(&base), str::to_owned);
    if name.trim().is_empty() || name.chars().count() > MAX_NAME_CHARS {
        return Err(format!("--name: 1 to {MAX_NAME_CHARS} characters (GitHub's limit)"));
    }
    manifest["name"] = json!(name);
    manifest["url"] = json!(base);
    manifest["hook_attributes"]["url"] = json!(format!("{base}/webhooks/github"));
    manifest["callback_urls"] = json!([format!("{base}/login/callback")]);
    manifest["redirect_url"] = json!(redirect);
    Ok(manifest)
}

/// Where the form posts: the user's App settings, or an organisation's.
pub(crate) fn registration_url(github: &str, org: Option<&str>, state: &str) -> String {
    let state = agent_zero_contracts::encode_component(state);
    match org {
        Some(org) => format!(
            "{github}/organizations/{}/settings/apps/new?state={state}",
            agent_zero_contracts::encode_component(org)
        ),
        None => format!("{github}/settings/apps/new?state={state}"),
    }
}

/// `text` safe inside an HTML attribute or element.
fn html(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&#39;")
}

/// The page the browser opens: GitHub's documented form (one `manifest`
/// field, posted to `action`) and a button, nothing else.
pub(crate) fn form_page(action: &str, manifest: &Value) -> String {
    let manifest = serde_json::to_string(manifest).unwrap_or_default();
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Register the GitHub App</title></head>\n\
         <body><h1>Register Agent Zero Edge's GitHub App</h1>\n\
         <p>GitHub shows the App's name, permissions and events before you create it.</p>\n\
         <form method=\"post\" action=\"{}\">\n\
         <input type=\"hidden\" name=\"manifest\" value=\"{}\">\n\
         <button type=\"submit\">Create the GitHub App on GitHub</button>\n\
         </form></body></html>\n",
        html(action),
        html(&manifest)
    )
}

/// What GitHub answers `POST /app-manifests/{code}/conversions` with (the
/// `integration` schema plus the credentials), as far as we keep it.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Created {
    pub(crate) id: u64,
    pub(crate) slug: String,
    pub(crate) html_url: String,
    pub(crate) owner: String,
    pub(crate) pem: String,
    pub(crate) webhook_secret: String,
    pub(crate) client_id: String,
    pub(crate) client_secret: String,
}

impl std::fmt::Debug for Created {
    // Never the credentials.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Created").field("id", &self.id).field("slug", &self.slug).finish_non_exhaustive()
    }
}

impl Created {
    /// Reads GitHub's answer; names the first field that is missing.
    pub(crate) fn parse(body: &[u8]) -> Result<Self, String> {
        let value: Value =
            serde_json::from_slice(body).map_err(|e| format!("GitHub's answer is not the documented JSON: {e}"))?;
        let text = |field: &str| {
            value[field]
                .as_str()
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .ok_or_else(|| format!("GitHub's answer has no `{field}`"))
        };
        Ok(Self {
            id: value["id"].as_u64().ok_or("GitHub's answer has no numeric `id`")?,
            slug: text("slug")?,
            html_url: text("html_url")?,
            owner: value["owner"]["login"].as_str().unwrap_or_default().to_owned(),
            pem: text("pem")?,
            // Nullable in the schema: an App registered without a secret
            // would take unsigned deliveries, which intake refuses.
            webhook_secret: text("webhook_secret")?,
            client_id: text("client_id")?,
            client_secret: text("client_secret")?,
        })
    }
}

/// The env file's new block. Dashboard sign-in goes through the same App:
/// its client id and secret are set when someone may sign in (the users
/// given, or a grant the file already has), else kept commented out (the
/// dashboard reports a client id without a grant as misconfigured).
pub(crate) fn env_lines(created: &Created, existing: &[(String, String)], users: Option<&str>, key: &str) -> Vec<Line> {
    let has = |name: &str| existing.iter().any(|(n, v)| n == name && !v.is_empty());
    let mut lines = vec![
        Line::Comment(format!("GitHub App {} (id {}) {MARKER}", created.slug, created.id)),
        Line::Set("GITHUB_APP_ID", created.id.to_string()),
        Line::Set("GITHUB_APP_PRIVATE_KEY", created.pem.clone()),
        Line::Set("GITHUB_WEBHOOK_SECRET", created.webhook_secret.clone()),
    ];
    let signs_in = users.is_some() || has("AGENT_ZERO_DASHBOARD_USERS") || has("AGENT_ZERO_DASHBOARD_ORGS");
    if signs_in {
        lines.push(Line::Set("AGENT_ZERO_DASHBOARD_OAUTH_CLIENT_ID", created.client_id.clone()));
        lines.push(Line::Set("AGENT_ZERO_DASHBOARD_OAUTH_CLIENT_SECRET", created.client_secret.clone()));
        if let Some(users) = users {
            lines.push(Line::Set("AGENT_ZERO_DASHBOARD_USERS", users.to_owned()));
        }
        if !has("AGENT_ZERO_DASHBOARD_SESSION_KEY") {
            lines.push(Line::Set("AGENT_ZERO_DASHBOARD_SESSION_KEY", key.to_owned()));
        }
    } else {
        lines.push(Line::Comment("Dashboard sign-in with this App: uncomment with AGENT_ZERO_DASHBOARD_USERS and _SESSION_KEY (docs/dashboard.md)".into()));
        lines.push(Line::Commented("AGENT_ZERO_DASHBOARD_OAUTH_CLIENT_ID", created.client_id.clone()));
        lines.push(Line::Commented("AGENT_ZERO_DASHBOARD_OAUTH_CLIENT_SECRET", created.client_secret.clone()));
    }
    lines
}

/// `n` random bytes from the operating system, as lower-case hex.
fn random_hex(n: usize) -> Result<String, String> {
    let mut bytes = vec![0u8; n];
    getrandom::fill(&mut bytes).map_err(|e| format!("the operating system gave no random bytes: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// One request's line (`GET /path?query`), read from the browser.
fn request_target(stream: &mut TcpStream) -> Option<(String, String)> {
    stream.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 64 * 1024 {
        let n = stream.read(&mut buf).ok()?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&head);
    let mut words = text.lines().next()?.split_whitespace();
    Some((words.next()?.to_owned(), words.next()?.to_owned()))
}

fn respond(stream: &mut TcpStream, status: &str, body: &str) {
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\n\
         cache-control: no-store\r\nreferrer-policy: no-referrer\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(body.as_bytes()));
}

/// Serves the form on `listener` until GitHub's redirect brings a `code`
/// with `state`; a redirect with another state is refused and waited past.
fn wait_for_code(listener: &TcpListener, page: &str, state: &str, timeout: Duration) -> Result<String, String> {
    let deadline = Instant::now() + timeout;
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    loop {
        let mut stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    return Err(format!(
                        "GitHub did not send the browser back within {} s; run it again",
                        timeout.as_secs()
                    ));
                }
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
            Err(e) => return Err(format!("the loopback listener failed: {e}")),
        };
        let _ = stream.set_nonblocking(false);
        let Some((method, target)) = request_target(&mut stream) else { continue };
        let (path, query) = target.split_once('?').unwrap_or((&target, ""));
        match (method.as_str(), path) {
            ("GET", "/") => respond(&mut stream, "200 OK", page),
            ("GET", CREATED_PATH) => {
                let pairs = form_pairs(query);
                let get = |name: &str| pairs.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
                match (get("code"), get("state")) {
                    (Some(code), Some(got)) if got == state && !code.is_empty() => {
                        respond(
                            &mut stream,
                            "200 OK",
                            "<!doctype html><p>The App is registered: return to the terminal.</p>\n",
                        );
                        return Ok(code.to_owned());
                    }
                    _ => respond(
                        &mut stream,
                        "400 Bad Request",
                        "<!doctype html><p>This is not the redirect of the registration this terminal started (state differs).</p>\n",
                    ),
                }
            }
            _ => respond(&mut stream, "404 Not Found", "<!doctype html><p>Not found.</p>\n"),
        }
    }
}

fn form_pairs(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter_map(|p| {
            let (n, v) = p.split_once('=').unwrap_or((p, ""));
            Some((agent_zero_contracts::decode_component(n)?, agent_zero_contracts::decode_component(v)?))
        })
        .collect()
}

/// Exchanges the one-time `code` for the App's credentials.
fn convert(api_url: &str, code: &str) -> Result<Created, String> {
    let api = api::Api::new(api_url, None).map_err(|e| e.replace("--url", "--api-url"))?;
    let path = format!("/app-manifests/{}/conversions", agent_zero_contracts::encode_component(code));
    let answer = api.post_raw(
        &path,
        &[("accept", "application/vnd.github+json"), ("x-github-api-version", agent_zero_github::API_VERSION)],
        Vec::new(),
    )?;
    if answer.status != 201 {
        // GitHub's error body carries no credential.
        return Err(format!(
            "POST {path}: GitHub answered {} (a code is valid once, for an hour)",
            answer.error_line()
        ));
    }
    Created::parse(&answer.body)
}

/// Runs the flow and writes the env file; `out` gets the page's address
/// first, then what was registered and the next steps, never a credential.
pub(crate) fn run(options: &Options<'_>, cwd: &Path, out: &mut dyn Write) -> Result<u8, String> {
    let github = base_url("--github-url", options.github_url)?;
    base_url("--api-url", options.api_url)?;
    let env_path = cwd.join(options.env_file);
    let existing_text = match std::fs::read_to_string(&env_path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(format!("reading {}: {e}", env_path.display())),
    };
    let existing = crate::deploy::parse_env(&existing_text).map_err(|e| format!("{}: {e}", env_path.display()))?;
    let listener = TcpListener::bind(("127.0.0.1", options.port))
        .map_err(|e| format!("listening on 127.0.0.1:{}: {e}", options.port))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let manifest = manifest(options.url, options.name, &format!("http://127.0.0.1:{port}{CREATED_PATH}"))?;
    let state = random_hex(16)?;
    let page = form_page(&registration_url(&github, options.org, &state), &manifest);
    let emit = |out: &mut dyn Write, text: &str| out.write_all(text.as_bytes()).and_then(|()| out.flush());
    emit(
        out,
        &format!(
            "Open http://127.0.0.1:{port}/ in a browser signed in to GitHub{} and create the App \
             (waiting {} s for GitHub to send the browser back)\n",
            options.org.map(|o| format!(" as an owner of {o}")).unwrap_or_default(),
            options.timeout.as_secs()
        ),
    )
    .map_err(|e| e.to_string())?;
    let code = wait_for_code(&listener, &page, &state, options.timeout)?;
    let created = convert(options.api_url, &code)?;
    let lines = env_lines(&created, &existing, options.dashboard_users, &random_hex(32)?);
    write_private(&env_path, &with_settings(&existing_text, &lines))
        .map_err(|e| format!("writing {}: {e}", env_path.display()))?;
    let written: Vec<&str> = lines
        .iter()
        .filter_map(|l| match l {
            Line::Set(name, _) => Some(*name),
            _ => None,
        })
        .collect();
    let printable = crate::text::printable;
    let mut summary = format!(
        "Registered the GitHub App `{}` (id {}{}): {}\n",
        printable(&created.slug),
        created.id,
        if created.owner.is_empty() { String::new() } else { format!(", owned by {}", printable(&created.owner)) },
        printable(&created.html_url)
    );
    summary.push_str(&format!("Wrote {} to {} (values not shown).\n", written.join(", "), options.env_file.display()));
    if !written.contains(&"AGENT_ZERO_DASHBOARD_OAUTH_CLIENT_ID") {
        summary
            .push_str("Its client id and secret are there commented out, for dashboard sign-in (docs/dashboard.md).\n");
    }
    if existing.iter().any(|(n, v)| n == "GITHUB_TOKEN" && !v.is_empty()) {
        summary.push_str("GITHUB_TOKEN is set too: the App's credentials take precedence, so it can go.\n");
    }
    summary.push_str(&format!(
        "Next:\n  1. agent-zero init cloudflare   (or: agent-zero init spin) puts them on the deployment\n  \
         2. install the App on your repositories: {}/installations/new\n",
        printable(&created.html_url)
    ));
    emit(out, &summary).map_err(|e| e.to_string())?;
    Ok(EXIT_OK)
}
