//! Harness for the publication tests: the seeded fake and one publication
//! ([`github`], [`Run`]), the write rules every test checks
//! ([`assert_only_allowed_writes`]), and a blocking `ureq` adapter for the
//! [`HttpClient`] port that talks to the loopback [`FakeGitHub`] (which
//! serves the check-run and pull-request listings the adapter reads, and
//! holds every request to GitHub's REST description) and logs every request
//! the product sends. A hook ([`Loopback::before_each`]) can change the
//! fake between two requests.

#![allow(dead_code, unreachable_pub)]

use std::cell::RefCell;

use agent_zero_contracts::{EvidenceBundle, FeedbackItem};
use agent_zero_evidence::{ISSUE_VALIDATION_MARKER, RenderOptions};
pub use agent_zero_fakes::task_result_of as result_of;
use agent_zero_fakes::{DEFAULT_ACTOR, FakeGitHub};
use agent_zero_github::publish::{
    PublishFile, PublishPolicy, PublishReport, PublishRequest, PublishStep, StepOutcome, publish,
};
use agent_zero_github::{ApiConfig, GitHubClient};
use agent_zero_ports::Secret;
use agent_zero_ports::{HttpClient, HttpError};

/// Runs before a request reaches the fake, with its `METHOD /path?query`:
/// to make something happen "meanwhile" (a concurrent writer).
pub type Hook<'g> = Box<dyn FnMut(&str) + 'g>;

/// The product's view of the wire: what it sent, in order.
pub struct Loopback<'g> {
    agent: ureq::Agent,
    gh: &'g FakeGitHub,
    log: RefCell<Vec<String>>,
    before: RefCell<Option<Hook<'g>>>,
}

impl std::fmt::Debug for Loopback<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loopback").field("log", &self.log).finish_non_exhaustive()
    }
}

impl<'g> Loopback<'g> {
    pub fn new(gh: &'g FakeGitHub) -> Self {
        let agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
        Self { agent, gh, log: RefCell::new(Vec::new()), before: RefCell::new(None) }
    }

    /// Calls `hook` before every later request is forwarded.
    pub fn before_each(&self, hook: impl FnMut(&str) + 'g) {
        *self.before.borrow_mut() = Some(Box::new(hook));
    }

    /// `METHOD /path?query` of every request since the last call.
    pub fn take_log(&self) -> Vec<String> {
        std::mem::take(&mut *self.log.borrow_mut())
    }
}

impl HttpClient for Loopback<'_> {
    async fn send(&self, request: http::Request<Vec<u8>>) -> Result<http::Response<Vec<u8>>, HttpError> {
        let method = request.method().to_string();
        let path = request.uri().path().to_owned();
        let query = request.uri().query().unwrap_or_default().to_owned();
        let target = if query.is_empty() { path.clone() } else { format!("{path}?{query}") };
        self.log.borrow_mut().push(format!("{method} {target}"));
        if let Some(hook) = self.before.borrow_mut().as_mut() {
            hook(&format!("{method} {target}"));
        }
        let mut response = self.agent.run(request).map_err(|e| HttpError::Transport(e.to_string()))?;
        let mut out = http::Response::builder().status(response.status());
        for (name, value) in response.headers() {
            out = out.header(name, value);
        }
        let body = response.body_mut().read_to_vec().map_err(|e| HttpError::Transport(e.to_string()))?;
        out.body(body).map_err(|e| HttpError::Transport(e.to_string()))
    }
}

pub use agent_zero_ports::block_on;

/// A golden bundle of the evidence crate (real records, rendered there).
pub fn golden(name: &str) -> EvidenceBundle {
    let path = format!("{}/../evidence/tests/golden/{name}/bundle.json", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// The App installation's token the runs publish with (GitHub's `ghs_`
/// shape: the loopback GitHub lets only such a token write check runs).
pub const TOKEN: &str = "ghs_publishTestToken0123456789";
/// A person's token (`GITHUB_TOKEN`), for a deployment without an App.
pub const PERSONAL_TOKEN: &str = "ghp_publishTestToken0123456789";
pub const NOW_MS: u64 = 1_700_000_000_000;
pub const OLD_PAGE: &str = "pub fn next_page(items: &[u32], cursor: usize, limit: usize) -> &[u32] {\n    let start = cursor;\n    &items[start..start + limit]\n}\n";
/// The subject line of issue 42's comment (the wire format, pinned).
pub const SUBJECT_42: &str = "<!-- agent-zero:subject issue=42 -->";

/// The opening two lines of our comment on issue 42.
pub fn marker_42() -> String {
    format!("{ISSUE_VALIDATION_MARKER}\n{SUBJECT_42}")
}

/// The fake with `acme/widgets` (the golden bundles' repository) seeded;
/// returns the head of `main`.
pub fn github() -> (FakeGitHub, String) {
    let gh = FakeGitHub::start();
    let head = gh.add_repo("acme", "widgets", "main", &[("README.md", "# widgets\n"), ("src/page.rs", OLD_PAGE)]);
    gh.require_token(TOKEN);
    gh.require_token(PERSONAL_TOKEN);
    (gh, head)
}

/// What varies between runs; the rest comes from the bundle.
pub struct Run<'a> {
    pub bundle: &'a EvidenceBundle,
    pub files: &'a [PublishFile<'a>],
    pub head_sha: Option<&'a str>,
    pub feedback: &'a [FeedbackItem],
    pub bot_login: Option<&'a str>,
    pub policy: PublishPolicy<'a>,
    /// The byte limit of GitHub-bound text (GitHub's own by default).
    pub max_bytes: usize,
    /// Published with [`PERSONAL_TOKEN`] instead of the installation's.
    pub personal: bool,
}

impl<'a> Run<'a> {
    pub fn new(bundle: &'a EvidenceBundle, files: &'a [PublishFile<'a>]) -> Self {
        Self {
            bundle,
            files,
            head_sha: None,
            feedback: &[],
            bot_login: Some(DEFAULT_ACTOR),
            policy: PublishPolicy::default(),
            max_bytes: agent_zero_evidence::GITHUB_TEXT_LIMIT,
            personal: false,
        }
    }

    pub fn publish(&self, gh: &FakeGitHub, http: &Loopback<'_>) -> PublishReport {
        let config = ApiConfig::new(Some(&gh.url()), "agent-zero-edge-test").unwrap();
        let client = GitHubClient::new(http, &config);
        let client = if self.personal {
            client.with_token(Secret::new(PERSONAL_TOKEN))
        } else {
            client.with_installation_token(Secret::new(TOKEN))
        };
        let result = result_of(self.bundle);
        let secrets = [TOKEN, PERSONAL_TOKEN];
        let request = PublishRequest {
            bundle: self.bundle,
            result: &result,
            task_id: &self.bundle.task_id,
            owner: "acme",
            repo: "widgets",
            default_branch: None,
            head_sha: self.head_sha,
            issue: self.bundle.issue.as_ref(),
            policy: self.policy,
            files: self.files,
            feedback: self.feedback,
            bot_login: self.bot_login,
            render: RenderOptions { secrets: &secrets, max_bytes: self.max_bytes, ..RenderOptions::default() },
            now_ms: NOW_MS,
        };
        let report = block_on(publish(&client, &request));
        let json = serde_json::to_string(&report).unwrap();
        assert!(!json.contains(TOKEN) && !json.contains(PERSONAL_TOKEN), "the report never carries the token: {json}");
        report
    }
}

pub fn outcome(report: &PublishReport, step: PublishStep) -> &StepOutcome {
    report.outcome(step).unwrap_or_else(|| panic!("no {step:?} step in {report:#?}"))
}

/// Every write the fake saw is one the adapter may make: refs only created
/// (never on `main`, never forced), comments only ours, nothing else.
pub fn assert_only_allowed_writes(gh: &FakeGitHub) {
    assert_only_allowed_writes_deleting(gh, &[]);
}

/// [`assert_only_allowed_writes`], where the comments `deleted` (our own
/// duplicates) may have been deleted; no other comment is.
pub fn assert_only_allowed_writes_deleting(gh: &FakeGitHub, deleted: &[u64]) {
    let comments: Vec<serde_json::Value> =
        [7, 42].into_iter().flat_map(|n| gh.comments("acme", "widgets", n)).collect();
    let author = |id: u64| {
        let comment = comments.iter().find(|c| c["id"] == id);
        comment.map(|c| c["user"]["login"].as_str().unwrap_or_default().to_owned())
    };
    for call in gh.calls().iter().filter(|c| c.method != "GET") {
        let path = call.decoded_path();
        let rest =
            path.strip_prefix("/repos/acme/widgets/").unwrap_or_else(|| panic!("write outside the repo: {path}"));
        let allowed = match call.method.as_str() {
            "POST" => {
                matches!(rest, "check-runs" | "git/blobs" | "git/trees" | "git/commits" | "git/refs" | "pulls")
                    || rest.strip_prefix("statuses/").is_some_and(|sha| sha.len() == 40)
                    || rest
                        .strip_prefix("issues/")
                        .and_then(|r| r.strip_suffix("/comments"))
                        .is_some_and(|n| n.parse::<u64>().is_ok())
            }
            "PATCH" => {
                rest.starts_with("check-runs/")
                    || rest.strip_prefix("issues/comments/").is_some_and(|id| {
                        let id: u64 = id.parse().unwrap();
                        author(id).as_deref() == Some(DEFAULT_ACTOR)
                    })
            }
            "DELETE" => rest
                .strip_prefix("issues/comments/")
                .is_some_and(|id| deleted.contains(&id.parse().unwrap()) && author(id.parse().unwrap()).is_none()),
            _ => false,
        };
        assert!(allowed, "unexpected write {} {path}", call.method);
        if rest == "git/refs" {
            let body = call.json().unwrap();
            let name = body["ref"].as_str().unwrap();
            assert!(name.starts_with("refs/heads/agent-zero/"), "{name}");
            assert_ne!(name, "refs/heads/main");
            assert!(body.get("force").is_none(), "{body}");
        }
    }
    for comment in &comments {
        if comment["user"]["login"] != DEFAULT_ACTOR {
            assert_eq!(comment["created_at"], comment["updated_at"], "someone else's comment was edited: {comment}");
        }
    }
}
