//! The provider adapters a build carries (`AGENT_ZERO_PROVIDERS` at build
//! time; docs/configuration.md, "Building only the providers you use"). test.sh runs this
//! with the default build (every provider) and again, with the lifecycle
//! case, on a build of `custom openai`: the harness reads the same
//! variable to know which build it is talking to.

use agent_zero_e2e::{Runtime, Server, ServerOptions};

use crate::Case;

pub(crate) const CASES: &[Case] =
    &[Case { name: "providers_left_out_of_the_build_are_named_by_the_doctor", run: left_out_providers }];

const TOKEN: &str = "e2e-providers-operator";

/// Whether the build has the sandbox provider `name`: every one when
/// `AGENT_ZERO_PROVIDERS` is unset or blank, else the ones it names.
fn built(name: &str) -> bool {
    let list = std::env::var("AGENT_ZERO_PROVIDERS").unwrap_or_default().replace(',', " ");
    let mut names = list.split_whitespace().peekable();
    names.peek().is_none() || names.any(|n| n == name)
}

/// `GET /api/v1/doctor`'s `sandbox-reachable` check with `vars` set.
fn sandbox_check(runtime: Runtime, vars: &[(&str, &str)]) -> serde_json::Value {
    let mut all = vec![("AGENT_ZERO_CONTROL_PLANE_TOKENS".to_owned(), format!("ops:{TOKEN}"))];
    all.extend(vars.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())));
    let server = Server::start(runtime, &ServerOptions { vars: all, ..ServerOptions::default() })
        .unwrap_or_else(|e| panic!("{e}"));
    let auth = format!("Bearer {TOKEN}");
    let reply = server.send("GET", "/api/v1/doctor", &[("authorization", auth.as_str())], b"");
    assert_eq!(reply.status, 200, "{}", reply.text());
    let body = reply.json();
    let check = body["checks"].as_array().unwrap().iter().find(|c| c["name"] == "sandbox-reachable").cloned();
    check.unwrap_or_else(|| panic!("no sandbox-reachable check: {body}"))
}

/// A sandbox provider the build left out fails the doctor's check by name,
/// with what the build has, before anything is probed; one it has is
/// checked as always (Vercel, without its URL, is refused for that).
fn left_out_providers(runtime: Runtime) {
    let secret = "e2e-providers-vercel-token";
    let check = sandbox_check(runtime, &[("AGENT_ZERO_SANDBOX_PROVIDER", "vercel"), ("VERCEL_TOKEN", secret)]);
    assert_eq!(check["status"], "fail", "{check}");
    let detail = check["detail"].as_str().unwrap();
    if built("vercel") {
        assert_eq!(detail, "sandbox provider `vercel` needs AGENT_ZERO_SANDBOX_URL", "{check}");
    } else {
        let has: Vec<&str> =
            ["custom", "e2b", "daytona", "vercel", "cloudflare"].into_iter().filter(|n| built(n)).collect();
        let expected = format!("sandbox provider `vercel` is left out of this build (it has {})", has.join(", "));
        assert_eq!(detail, expected, "{check}");
        assert!(check["fix"].as_str().unwrap().contains("AGENT_ZERO_PROVIDERS"), "{check}");
    }
    assert!(!check.to_string().contains(secret), "the token was shown: {check}");
}
