//! Loopback stand-ins for the external services Agent Zero Edge talks to,
//! for the end-to-end suite: [`FakeGitHub`] (GitHub REST v3), [`FakeGitea`]
//! (Gitea/Forgejo API v1, every request checked against Gitea's published
//! swagger by [`conformance::ApiDescription`]), [`FakeGitLab`] (GitLab REST
//! v4, held to excerpts of GitLab's `openapi_v2.yaml` and its Grape source) and
//! [`FakeModel`] (OpenAI Chat Completions and Responses, Anthropic Messages,
//! Gemini), each speaking the real wire format over real HTTP on
//! `127.0.0.1`, recording every request ([`RecordedCall`]) and accepting
//! scripted faults; plus [`sign_github`] for webhook deliveries and
//! [`FixtureRepo`], a real local git repository with a real bug, and
//! [`LoopbackHttp`], the product's HTTP port for tests that call them.
//!
//! Native test support: threads, sockets, the clock, the filesystem and
//! `git`/`python3` processes are all fair game here (never in `shared/`).
//! Nothing in the product is mocked; these stand in for services outside it.
//!
//! [`TEST_APP_PRIVATE_KEY_PEM`] and [`TEST_APP_PUBLIC_KEY_PEM`] are a
//! throwaway RSA pair for GitHub App tests: configure the product with the
//! private key and [`FakeGitHub::register_app`] with the public one.

#![forbid(unsafe_code)]
// Gitea's `Repository` JSON has more fields than `json!` expands by default.
#![recursion_limit = "256"]

pub mod conformance;
mod fixture;
mod gitea;
mod github;
mod gitlab;
mod http;
mod model;
mod record;
mod server;
mod signature;
mod task_result;
mod time;

pub use fixture::{FixtureBuilder, FixtureRepo, calc};
pub use gitea::{FakeGitea, GITEA_REST_PARAMETERS, GITEA_SWAGGER};
pub use github::{
    DEFAULT_ACTOR, FakeGitHub, OPENAPI_ENV as GITHUB_OPENAPI_ENV, account_id as github_account_id,
    openapi_path as github_openapi_path, verified_jwt_claims,
};
pub use gitlab::{FakeGitLab, GITLAB_API_DEFINITION};
pub use http::LoopbackHttp;
pub use model::{DELAYED_STATUS, FakeModel, WireFormat};
pub use record::RecordedCall;
pub use signature::sign_github;
pub use task_result::task_result_of;

/// A throwaway PKCS#1 RSA private key for GitHub App tests (never used
/// anywhere real).
pub const TEST_APP_PRIVATE_KEY_PEM: &str = include_str!("data/test-app-key.pkcs1.pem");
/// The public half of [`TEST_APP_PRIVATE_KEY_PEM`] (SPKI PEM).
pub const TEST_APP_PUBLIC_KEY_PEM: &str = include_str!("data/test-app-key.pub.pem");
