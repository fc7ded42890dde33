//! `init github-app` with the test as the browser and a loopback stand-in
//! for GitHub's API that answers `POST /app-manifests/{code}/conversions`
//! with GitHub's documented example (`integration-from-manifest` in GitHub's
//! OpenAPI description, `tests/fixtures/github-app/`), and refuses what
//! GitHub refuses: another code, or the same code twice.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use super::github_app::{Created, form_page, manifest, registration_url};
use super::*;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// GitHub's example answer, as the OpenAPI description gives it.
fn documented_answer() -> String {
    std::fs::read_to_string(root().join("tests/fixtures/github-app/integration-from-manifest.json")).unwrap()
}

/// One request the stand-in received: method, path, headers.
type Call = (String, String, Vec<(String, String)>);

/// A loopback stand-in for GitHub's API that converts `code` once.
fn fake_github(code: &'static str) -> (String, Arc<Mutex<Vec<Call>>>) {
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let url = format!("http://{}", server.server_addr().to_ip().unwrap());
    let calls = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&calls);
    let body = documented_answer();
    std::thread::spawn(move || {
        let mut used = false;
        for request in server.incoming_requests() {
            let headers = request
                .headers()
                .iter()
                .map(|h| (h.field.to_string().to_ascii_lowercase(), h.value.to_string()))
                .collect();
            let (method, path) = (request.method().to_string(), request.url().to_owned());
            seen.lock().unwrap().push((method.clone(), path.clone(), headers));
            let json = tiny_http::Header::from_bytes("content-type", "application/json; charset=utf-8").unwrap();
            let reply = if method == "POST" && path == format!("/app-manifests/{code}/conversions") && !used {
                used = true;
                tiny_http::Response::from_string(body.clone()).with_status_code(201)
            } else {
                let not_found = r#"{"message":"Not Found","documentation_url":"https://docs.github.com/rest/apps/apps#create-a-github-app-from-a-manifest","status":"404"}"#;
                tiny_http::Response::from_string(not_found).with_status_code(404)
            };
            let _ = request.respond(reply.with_header(json));
        }
    });
    (url, calls)
}

/// `out` as it is written, to the test.
struct Stream(Sender<Vec<u8>>);

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let _ = self.0.send(buf.to_vec());
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Reads `out` until it names the loopback page; its port.
fn page_port(rx: &Receiver<Vec<u8>>, seen: &mut String) -> u16 {
    while !seen.contains("/ in a browser") {
        seen.push_str(&String::from_utf8(rx.recv_timeout(Duration::from_secs(20)).unwrap()).unwrap());
    }
    let at = seen.find("http://127.0.0.1:").unwrap() + "http://127.0.0.1:".len();
    seen[at..].split('/').next().unwrap().parse().unwrap()
}

fn html_unescape(text: &str) -> String {
    text.replace("&quot;", "\"").replace("&#39;", "'").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
}

/// The value of `attribute="..."` after `after` in `page`.
fn attribute(page: &str, after: &str, attribute: &str) -> String {
    let from = &page[page.find(after).unwrap()..];
    let start = from.find(&format!("{attribute}=\"")).unwrap() + attribute.len() + 2;
    html_unescape(&from[start..start + from[start..].find('"').unwrap()])
}

fn browser() -> ureq::Agent {
    ureq::Agent::config_builder().http_status_as_error(false).build().into()
}

fn get(agent: &ureq::Agent, url: &str) -> (u16, String) {
    let mut response = agent.get(url).call().unwrap();
    (response.status().as_u16(), response.body_mut().read_to_string().unwrap())
}

/// Runs `init github-app` in `dir`, plays the browser (GitHub's redirect
/// brings `code`), and returns the exit status, out, err and the form's
/// manifest and action.
fn register(dir: &Path, api: &str, code: &str, extra: &[&str]) -> (u8, String, String, Value, String) {
    let (tx, rx) = channel();
    let (cwd, mut args) = (dir.to_path_buf(), vec!["agent-zero", "init", "github-app"]);
    args.extend_from_slice(&["--url", "https://zero.example.dev/agent-zero/", "--api-url", api, "--timeout", "30"]);
    args.extend_from_slice(extra);
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    let cli = std::thread::spawn(move || {
        let (mut out, mut err) = (Stream(tx), Vec::new());
        let status = run(args, &cwd, &mut out, &mut err);
        (status, String::from_utf8(err).unwrap())
    });
    let mut out = String::new();
    let port = page_port(&rx, &mut out);
    let agent = browser();
    let (status, page) = get(&agent, &format!("http://127.0.0.1:{port}/"));
    assert_eq!(status, 200, "{page}");
    let action = attribute(&page, "<form", "action");
    let manifest: Value = serde_json::from_str(&attribute(&page, "name=\"manifest\"", "value")).unwrap();
    let state = action.split("state=").nth(1).unwrap().to_owned();
    let created = format!("http://127.0.0.1:{port}/github-app/created");
    // A redirect of another registration (another state) is refused.
    assert_eq!(get(&agent, &format!("{created}?code={code}&state=forged")).0, 400);
    assert_eq!(get(&agent, &format!("http://127.0.0.1:{port}/favicon.ico")).0, 404);
    let (status, _) = get(&agent, &format!("{created}?code={code}&state={state}"));
    assert_eq!(status, 200);
    let (exit, err) = cli.join().unwrap();
    while let Ok(bytes) = rx.try_recv() {
        out.push_str(&String::from_utf8(bytes).unwrap());
    }
    (exit, out, err, manifest, action)
}

#[test]
fn the_manifest_flow_writes_the_apps_credentials_to_the_env_file_and_never_prints_them() {
    let (api, calls) = fake_github("a1b2c3");
    let dir = tempfile::tempdir().unwrap();
    let env = dir.path().join(".env.deploy");
    std::fs::write(&env, "OPENAI_API_KEY=sk-kept\nGITHUB_WEBHOOK_SECRET=the-old-one\nGITHUB_TOKEN=ghp_x\n").unwrap();

    let (exit, out, err, manifest, action) = register(dir.path(), &api, "a1b2c3", &["--dashboard-users", "octocat"]);
    assert_eq!(exit, EXIT_OK, "{out}{err}");

    // The form posts the repository's manifest, the deployment's URLs filled in.
    assert!(action.starts_with("https://github.com/settings/apps/new?state="), "{action}");
    let template: Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("github-app.json")).unwrap()).unwrap();
    assert_eq!(manifest["default_permissions"], template["default_permissions"]);
    assert_eq!(manifest["default_events"], template["default_events"]);
    assert_eq!(manifest["hook_attributes"]["url"], "https://zero.example.dev/agent-zero/webhooks/github");
    assert_eq!(manifest["callback_urls"], serde_json::json!(["https://zero.example.dev/agent-zero/login/callback"]));
    assert_eq!(manifest["url"], "https://zero.example.dev/agent-zero");
    assert_eq!(manifest["name"], "Agent Zero (zero)");
    assert_eq!(manifest["public"], false);
    assert!(manifest["redirect_url"].as_str().unwrap().starts_with("http://127.0.0.1:"));

    // One conversion, as GitHub documents it: no credential sent.
    let calls = calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 1);
    let (method, path, headers) = &calls[0];
    assert_eq!((method.as_str(), path.as_str()), ("POST", "/app-manifests/a1b2c3/conversions"));
    let header = |n: &str| headers.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
    assert_eq!(header("accept"), Some("application/vnd.github+json"));
    assert_eq!(header("x-github-api-version"), Some("2022-11-28"));
    assert_eq!(header("authorization"), None);

    // The env file holds what GitHub answered, byte for byte, and what was there.
    let answer: Value = serde_json::from_str(&documented_answer()).unwrap();
    let text = std::fs::read_to_string(&env).unwrap();
    let pairs = deploy::parse_env(&text).unwrap();
    let value = |n: &str| pairs.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    assert_eq!(value("GITHUB_APP_ID").as_deref(), Some("1"));
    assert_eq!(value("GITHUB_APP_PRIVATE_KEY").as_deref(), answer["pem"].as_str());
    assert_eq!(value("GITHUB_WEBHOOK_SECRET").as_deref(), answer["webhook_secret"].as_str());
    assert_eq!(value("AGENT_ZERO_DASHBOARD_OAUTH_CLIENT_ID").as_deref(), answer["client_id"].as_str());
    assert_eq!(value("AGENT_ZERO_DASHBOARD_OAUTH_CLIENT_SECRET").as_deref(), answer["client_secret"].as_str());
    assert_eq!(value("AGENT_ZERO_DASHBOARD_USERS").as_deref(), Some("octocat"));
    assert_eq!(value("AGENT_ZERO_DASHBOARD_SESSION_KEY").map(|k| k.len()), Some(64));
    assert_eq!(value("OPENAI_API_KEY").as_deref(), Some("sk-kept"));
    assert!(!text.contains("the-old-one"));
    #[cfg(unix)]
    assert_eq!(std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&env).unwrap().permissions()) & 0o077, 0);

    // Nothing secret reached the terminal; what was done and what is next did.
    let key_line = answer["pem"].as_str().unwrap().lines().nth(1).unwrap();
    for secret in [key_line, answer["webhook_secret"].as_str().unwrap(), answer["client_secret"].as_str().unwrap()]
        .into_iter()
        .chain(value("AGENT_ZERO_DASHBOARD_SESSION_KEY").as_deref())
    {
        assert!(!out.contains(secret) && !err.contains(secret), "a secret was printed:\n{out}{err}");
    }
    assert!(
        out.contains("Registered the GitHub App `octoapp` (id 1, owned by github): https://github.com/apps/octoapp")
    );
    assert!(out.contains("https://github.com/apps/octoapp/installations/new"), "{out}");
    assert!(out.contains("GITHUB_TOKEN is set too"), "{out}");

    // What was written deploys: the Spin plan takes every name.
    let spin_toml = std::fs::read_to_string(root().join("spin.toml")).unwrap();
    let plan = deploy::spin_plan(&text, &spin_toml).unwrap();
    assert!(plan[0].args.iter().any(|a| a.starts_with("github_app_private_key=-----BEGIN RSA PRIVATE KEY-----\n")));
    assert!(plan[0].shown.as_ref().unwrap().iter().all(|a| !a.contains(key_line)));

    // GitHub converts a code once: a second use fails and leaves the file alone.
    let (exit, _, err, _, _) = register(dir.path(), &api, "a1b2c3", &[]);
    assert_eq!(exit, EXIT_FAILED);
    assert!(err.contains("404"), "{err}");
    assert_eq!(std::fs::read_to_string(&env).unwrap(), text);
}

#[test]
fn without_dashboard_users_the_client_is_kept_commented_out() {
    let (api, _) = fake_github("c0de");
    let dir = tempfile::tempdir().unwrap();
    let (exit, out, err, _, action) =
        register(dir.path(), &api, "c0de", &["--org", "acme", "--name", "Zero for Acme", "--env-file", "gh.env"]);
    assert_eq!(exit, EXIT_OK, "{out}{err}");
    assert!(action.starts_with("https://github.com/organizations/acme/settings/apps/new?state="));
    let text = std::fs::read_to_string(dir.path().join("gh.env")).unwrap();
    let pairs = deploy::parse_env(&text).unwrap();
    let names: Vec<&str> = pairs.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["GITHUB_APP_ID", "GITHUB_APP_PRIVATE_KEY", "GITHUB_WEBHOOK_SECRET"]);
    assert!(text.contains("# AGENT_ZERO_DASHBOARD_OAUTH_CLIENT_ID=Iv1.8a61f9b3a7aba766\n"), "{text}");
    assert!(out.contains("commented out"), "{out}");
}

#[test]
fn the_manifest_and_form_are_built_from_the_repositorys_file() {
    let m = manifest("http://127.0.0.1:8787", Some("x"), "http://127.0.0.1:9/github-app/created").unwrap();
    assert_eq!(m["hook_attributes"]["url"], "http://127.0.0.1:8787/webhooks/github");
    assert!(manifest("https://x.dev?a=b", None, "r").is_err());
    assert!(manifest("https://x.dev", Some("a name longer than thirty-four chars"), "r").is_err());
    assert_eq!(
        registration_url("https://ghe.example", Some("a b"), "s1"),
        "https://ghe.example/organizations/a%20b/settings/apps/new?state=s1"
    );
    let page = form_page("https://github.com/settings/apps/new?state=s&x=1", &serde_json::json!({"name": "<\"'&>"}));
    assert!(page.contains("action=\"https://github.com/settings/apps/new?state=s&amp;x=1\""));
    assert!(page.contains("value=\"{&quot;name&quot;:&quot;&lt;\\&quot;&#39;&amp;&gt;&quot;}\""), "{page}");
}

#[test]
fn the_answer_is_read_as_documented_and_never_debug_printed() {
    let created = Created::parse(documented_answer().as_bytes()).unwrap();
    assert_eq!((created.id, created.slug.as_str(), created.owner.as_str()), (1, "octoapp", "github"));
    assert!(!format!("{created:?}").contains(&created.client_secret));
    let mut answer: Value = serde_json::from_str(&documented_answer()).unwrap();
    answer["webhook_secret"] = Value::Null;
    let error = Created::parse(answer.to_string().as_bytes()).unwrap_err();
    assert_eq!(error, "GitHub's answer has no `webhook_secret`");
}
