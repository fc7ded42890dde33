//! The dashboard routes over the in-memory host: settings errors on these
//! routes only, the sign-in redirect, refused callbacks and sessions, a
//! forged form refused and audited, every page limited to the repositories
//! a session's grants cover, and sessions revoked by a sign-out and by an
//! operator. The OAuth round trip is in `dashboard_signin_tests.rs` (and
//! the e2e suite) against the loopback GitHub.

use agent_zero_agent::Policy;
use agent_zero_contracts::{RunMode, Trigger};
use agent_zero_engine::{Stimulus, TaskInput};

use crate::Settings;
use crate::dashboard::session::{SESSION_COOKIE, SESSION_MS, Session};
use crate::test_host::{START_MS, TestHost, block_on};

const KEY: &str = "0123456789abcdef0123456789abcdef-test";

fn settings(extra: &[(&'static str, &'static str)]) -> Settings {
    let mut pairs = vec![
        ("AGENT_ZERO_DASHBOARD_OAUTH_CLIENT_ID", "Ov23liTest"),
        ("AGENT_ZERO_DASHBOARD_OAUTH_CLIENT_SECRET", "client-secret-9f8e"),
        ("AGENT_ZERO_DASHBOARD_SESSION_KEY", KEY),
        ("AGENT_ZERO_DASHBOARD_USERS", "octocat:fix"),
    ];
    pairs.extend_from_slice(extra);
    Settings::from_pairs(pairs)
}

fn get(host: &TestHost, settings: &Settings, uri: &str, cookie: Option<&str>) -> http::Response<Vec<u8>> {
    let mut builder = http::Request::get(uri);
    if let Some(cookie) = cookie {
        builder = builder.header("cookie", cookie);
    }
    host.send(settings, builder.body(Vec::new()).unwrap())
}

fn text(response: &http::Response<Vec<u8>>) -> String {
    String::from_utf8_lossy(response.body()).into_owned()
}

fn session_cookie(login: &str, expires_ms: u64) -> String {
    let session = Session {
        login: login.into(),
        user_id: 1,
        orgs: vec![],
        id: "00000000abcdef01".into(),
        issued_ms: START_MS,
        expires_ms,
    };
    format!("{SESSION_COOKIE}={}", session.seal(KEY.as_bytes()))
}

#[test]
fn malformed_dashboard_settings_are_503_on_the_dashboard_only() {
    let host = TestHost::new();
    let broken = settings(&[("AGENT_ZERO_DASHBOARD_SESSION_KEY", "short")]);
    for uri in ["/dashboard", "/login", "/login/callback?code=x&state=y", "/dashboard/audit"] {
        let response = get(&host, &broken, uri, None);
        assert_eq!(response.status(), 503, "{uri}");
        assert!(text(&response).contains("AGENT_ZERO_DASHBOARD_SESSION_KEY"), "{uri}: {}", text(&response));
        assert!(!text(&response).contains("short"), "{}", text(&response));
    }
    assert_eq!(get(&host, &broken, "/api/v1/health", None).status(), 200);
    // Off: 503 naming what to set.
    let off = get(&host, &Settings::from_pairs([]), "/dashboard", None);
    assert_eq!(off.status(), 503);
    assert!(text(&off).contains("AGENT_ZERO_DASHBOARD_OAUTH_CLIENT_ID"), "{}", text(&off));
}

#[test]
fn sign_in_redirects_to_github_with_a_state_bound_to_a_cookie() {
    let host = TestHost::new();
    let response = get(&host, &settings(&[]), "/login", None);
    assert_eq!(response.status(), 303);
    let location = response.headers()["location"].to_str().unwrap();
    assert!(location.starts_with("https://github.com/login/oauth/authorize?client_id=Ov23liTest&state="), "{location}");
    let cookie = response.headers()["set-cookie"].to_str().unwrap();
    assert!(cookie.starts_with("az_oauth_state=") && cookie.contains("HttpOnly; Secure; SameSite=Lax"), "{cookie}");
    assert!(!location.contains("client-secret") && !cookie.contains("client-secret"));
    // The callback without that cookie is refused before any exchange.
    let state = location.split("state=").nth(1).unwrap().split('&').next().unwrap();
    let callback = get(&host, &settings(&[]), &format!("/login/callback?code=c0de&state={state}"), None);
    assert_eq!(callback.status(), 400, "{}", text(&callback));
    assert!(callback.headers().get("set-cookie").is_some_and(|c| !c.to_str().unwrap().contains("az_session")));
}

#[test]
fn sessions_must_be_signed_unexpired_and_still_allowed() {
    let host = TestHost::new();
    let ok = get(&host, &settings(&[]), "/dashboard", Some(&session_cookie("octocat", START_MS + 60_000)));
    assert!(text(&ok).contains("Signed in as <strong>github:octocat</strong>"), "{}", text(&ok));
    for cookie in [
        session_cookie("octocat", START_MS),
        session_cookie("mallory", START_MS + 60_000),
        format!("{SESSION_COOKIE}=djEKb2N0b2NhdAo.AAAA"),
    ] {
        let page = get(&host, &settings(&[]), "/dashboard", Some(&cookie));
        assert!(text(&page).contains("Sign in with GitHub"), "{cookie}: {}", text(&page));
        assert_eq!(get(&host, &settings(&[]), "/dashboard/audit", Some(&cookie)).status(), 401, "{cookie}");
    }
    // Removing octocat from the settings ends its session at once.
    let removed = settings(&[("AGENT_ZERO_DASHBOARD_USERS", "hubot")]);
    let page = get(&host, &removed, "/dashboard", Some(&session_cookie("octocat", START_MS + 60_000)));
    assert!(text(&page).contains("Sign in with GitHub"), "{}", text(&page));
}

#[test]
fn a_forged_form_is_refused_and_audited() {
    let host = TestHost::new();
    let cookie = session_cookie("octocat", START_MS + 60_000);
    let request = http::Request::post("/dashboard/tasks/t-1/decision")
        .header("cookie", &cookie)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(b"csrf=not-the-token&decision=approve".to_vec())
        .unwrap();
    let response = host.send(&settings(&[]), request);
    assert_eq!(response.status(), 403, "{}", text(&response));
    assert!(text(&response).contains("csrf"), "{}", text(&response));
    let audit = get(&host, &settings(&[]), "/dashboard/audit", Some(&cookie));
    let log = text(&audit);
    assert!(log.contains("github:octocat") && log.contains("403 forbidden (csrf)"), "{log}");
}

#[test]
fn under_a_base_path_the_dashboards_links_redirects_and_cookies_carry_it() {
    let host = TestHost::new();
    let settings = settings(&[("AGENT_ZERO_BASE_PATH", "/az")]);
    let sign_in = get(&host, &settings, "/az/login", None);
    assert_eq!(sign_in.status(), 303);
    let cookie = sign_in.headers()["set-cookie"].to_str().unwrap();
    assert!(cookie.contains("; Path=/az/login;"), "{cookie}");

    let session = session_cookie("octocat", START_MS + 60_000);
    let page = text(&get(&host, &settings, "/az/dashboard", Some(&session)));
    assert!(page.contains("Signed in as <strong>github:octocat</strong>"), "{page}");
    for attribute in ["href=\"", "action=\""] {
        for link in
            page.split(attribute).skip(1).filter_map(|rest| rest.split('"').next()).filter(|l| l.starts_with('/'))
        {
            assert!(link.starts_with("/az/"), "{link} ignores the base path: {page}");
        }
    }
    let csrf = page.split("name=\"csrf\" value=\"").nth(1).and_then(|rest| rest.split('"').next()).unwrap();
    let request = http::Request::post("/az/logout")
        .header("cookie", &session)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("csrf={csrf}").into_bytes())
        .unwrap();
    let out = host.send(&settings, request);
    assert_eq!(out.status(), 303, "{}", text(&out));
    assert_eq!(out.headers()["location"], "/az/dashboard");
    let cleared = out.headers()["set-cookie"].to_str().unwrap();
    assert!(cleared.starts_with(&format!("{SESSION_COOKIE}=;")) && cleared.contains("; Path=/az/;"), "{cleared}");
    // The root's dashboard is not served under a base path.
    assert_eq!(get(&host, &settings, "/dashboard", Some(&session)).status(), 404);
}

/// A signed session of `login` (`user_id`, a member of `orgs`) issued now,
/// as its cookie, and its CSRF token.
fn signed(login: &str, user_id: u64, orgs: &[&str], id: &str, now_ms: u64) -> (String, String) {
    let orgs = orgs.iter().map(|o| (*o).to_owned()).collect();
    let session = Session::issue(login.into(), user_id, orgs, id.into(), now_ms);
    (format!("{SESSION_COOKIE}={}", session.seal(KEY.as_bytes())), session.csrf_token(KEY.as_bytes()))
}

/// Creates task `id` of `repository`, indexed, as the API does.
fn task(host: &TestHost, id: &str, repository: &str) {
    task_on(host, id, repository, agent_zero_contracts::ForgeKind::GitHub);
}

/// A task of `repository` on `forge`, created and indexed.
fn task_on(host: &TestHost, id: &str, repository: &str, forge: agent_zero_contracts::ForgeKind) {
    let mut stimulus = stimulus(id, repository);
    stimulus.input.forge = forge;
    block_on(async {
        agent_zero_engine::create(&host.kv, &host.queue, stimulus.clone(), START_MS).await.unwrap();
        crate::task_index::record_created(&host.kv, &stimulus, START_MS).await.unwrap();
    });
}

fn stimulus(id: &str, repository: &str) -> Stimulus {
    Stimulus {
        task_id: id.into(),
        repository: repository.into(),
        trigger: Trigger::Feedback,
        mode: RunMode::Fix,
        source: Some("api:test".into()),
        input: TaskInput::default(),
        policy: Policy::default(),
    }
}

fn post_form(host: &TestHost, settings: &Settings, uri: &str, cookie: &str, body: &str) -> http::Response<Vec<u8>> {
    let request = http::Request::post(uri)
        .header("cookie", cookie)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body.as_bytes().to_vec())
        .unwrap();
    host.send(settings, request)
}

/// Each session sees, opens and decides only the tasks of repositories
/// its grants cover; any other task answers the very 404 of a task that
/// does not exist, and its audit entries are not shown.
#[test]
fn every_page_is_limited_to_the_repositories_a_session_covers() {
    let host = TestHost::new();
    let settings = settings(&[
        ("AGENT_ZERO_DASHBOARD_USERS", "octocat:fix, alice#7:fix@acme/widgets"),
        ("AGENT_ZERO_DASHBOARD_ORGS", "acme"),
    ]);
    for (id, repository) in [("t-widgets", "acme/widgets"), ("t-secret", "acme/secret"), ("t-beta", "beta/api")] {
        task(&host, id, repository);
    }
    let (octocat, octocat_csrf) = signed("octocat", 1, &[], "session-octocat-01", START_MS);
    let (alice, alice_csrf) = signed("alice", 7, &[], "session-alice-0001", START_MS);
    let (member, _) = signed("mallory", 9, &["acme"], "session-member-001", START_MS);
    for (cookie, shown, hidden) in [
        (&octocat, &["t-widgets", "t-secret", "t-beta"][..], &[][..]),
        (&alice, &["t-widgets"][..], &["t-secret", "t-beta"][..]),
        // An organisation's grant without a scope covers its own repositories.
        (&member, &["t-widgets", "t-secret"][..], &["t-beta"][..]),
    ] {
        let list = text(&get(&host, &settings, "/dashboard", Some(cookie)));
        for id in shown {
            assert!(list.contains(&format!("/dashboard/tasks/{id}\"")), "{id} not listed: {list}");
        }
        for id in hidden {
            assert!(!list.contains(id), "{id} listed: {list}");
        }
    }
    // Filtering by a repository the session does not cover lists nothing.
    let filtered = text(&get(&host, &settings, "/dashboard?repository=acme%2Fsecret", Some(&alice)));
    assert!(filtered.contains("No task matches.") && !filtered.contains("t-secret\""), "{filtered}");
    let filtered = text(&get(&host, &settings, "/dashboard?repository=beta%2Fapi", Some(&member)));
    assert!(filtered.contains("No task matches."), "{filtered}");

    // Pages of a task outside the grants are the 404 of no task at all.
    let same_as_missing =
        |cookie: &str, id: &str, response: &http::Response<Vec<u8>>, missing: &http::Response<Vec<u8>>| {
            assert_eq!(response.status(), 404, "{id}: {}", text(response));
            assert_eq!(text(response).replace(id, "ID"), text(missing).replace("t-nothing", "ID"), "{cookie}");
        };
    for path in ["/dashboard/tasks/{id}", "/dashboard/tasks/{id}/evidence"] {
        let at = |id: &str| path.replace("{id}", id);
        for (cookie, id) in [(&alice, "t-secret"), (&alice, "t-beta"), (&member, "t-beta")] {
            let missing = get(&host, &settings, &at("t-nothing"), Some(cookie));
            same_as_missing(cookie, id, &get(&host, &settings, &at(id), Some(cookie)), &missing);
        }
    }
    assert_eq!(get(&host, &settings, "/dashboard/tasks/t-widgets", Some(&alice)).status(), 200);
    assert_eq!(get(&host, &settings, "/dashboard/tasks/t-secret", Some(&member)).status(), 200);
    assert_eq!(get(&host, &settings, "/dashboard/tasks/t-secret", Some(&octocat)).status(), 200);

    // A decision on it too, before any rule (a covered task that is not
    // waiting is the rules' 409).
    let decide = |cookie: &str, csrf: &str, id: &str| {
        let uri = format!("/dashboard/tasks/{id}/decision");
        post_form(&host, &settings, &uri, cookie, &format!("csrf={}&decision=reject", csrf.replace('+', "%2B")))
    };
    let missing = decide(&alice, &alice_csrf, "t-nothing");
    same_as_missing(&alice, "t-secret", &decide(&alice, &alice_csrf, "t-secret"), &missing);
    assert_eq!(decide(&alice, &alice_csrf, "t-widgets").status(), 409);
    assert_eq!(decide(&octocat, &octocat_csrf, "t-beta").status(), 409);
    // A task whose index write failed (no summary): a decision on it goes
    // on only for a session covering every repository.
    block_on(agent_zero_engine::create(&host.kv, &host.queue, stimulus("t-unindexed", "acme/widgets"), START_MS))
        .unwrap();
    same_as_missing(&alice, "t-unindexed", &decide(&alice, &alice_csrf, "t-unindexed"), &missing);
    assert_eq!(decide(&octocat, &octocat_csrf, "t-unindexed").status(), 409);

    // The audit log shows alice the entries about acme/widgets only.
    let log = text(&get(&host, &settings, "/dashboard/audit", Some(&alice)));
    assert!(log.contains("t-widgets") && !log.contains("t-secret") && !log.contains("t-beta"), "{log}");
    let all = text(&get(&host, &settings, "/dashboard/audit", Some(&octocat)));
    assert!(all.contains("t-widgets") && all.contains("t-secret") && all.contains("t-beta"), "{all}");
}

/// A scope names its forge: a GitHub organisation's grant (`acme`, that
/// is `acme/*` on GitHub) neither lists, opens nor decides a Gitea or
/// GitLab task whose path starts with `acme/`; a grant naming that forge
/// does, and `*` covers every forge.
#[test]
fn a_scope_covers_its_own_forges_repositories_only() {
    use agent_zero_contracts::ForgeKind;
    let host = TestHost::new();
    let settings = settings(&[
        ("AGENT_ZERO_DASHBOARD_USERS", "octocat:fix, alice#7:fix@gitea:acme/*|gitlab:acme/*"),
        ("AGENT_ZERO_DASHBOARD_ORGS", "acme"),
    ]);
    task_on(&host, "t-github", "acme/widgets", ForgeKind::GitHub);
    task_on(&host, "t-gitea", "acme/widgets", ForgeKind::Gitea);
    task_on(&host, "t-gitlab", "acme/tools/widgets", ForgeKind::GitLab);
    let (octocat, _) = signed("octocat", 1, &[], "session-octocat-01", START_MS);
    let (alice, alice_csrf) = signed("alice", 7, &[], "session-alice-0001", START_MS);
    let (member, member_csrf) = signed("mallory", 9, &["acme"], "session-member-001", START_MS);
    for (cookie, shown, hidden) in [
        (&octocat, &["t-github", "t-gitea", "t-gitlab"][..], &[][..]),
        (&member, &["t-github"][..], &["t-gitea", "t-gitlab"][..]),
        (&alice, &["t-gitea", "t-gitlab"][..], &["t-github"][..]),
    ] {
        let list = text(&get(&host, &settings, "/dashboard", Some(cookie)));
        for id in shown {
            assert!(list.contains(&format!("/dashboard/tasks/{id}\"")), "{id} not listed: {list}");
            assert_eq!(get(&host, &settings, &format!("/dashboard/tasks/{id}"), Some(cookie)).status(), 200);
        }
        for id in hidden {
            assert!(!list.contains(id), "{id} listed: {list}");
            assert_eq!(get(&host, &settings, &format!("/dashboard/tasks/{id}"), Some(cookie)).status(), 404);
        }
    }
    // Filtering by the shared path lists only the covered forge's task.
    let filtered = text(&get(&host, &settings, "/dashboard?repository=acme%2Fwidgets", Some(&member)));
    assert!(filtered.contains("t-github\"") && !filtered.contains("t-gitea"), "{filtered}");
    // A decision: the 404 of no task for the organisation's member on the
    // Gitea task, the rules' 409 (not waiting) for the grant that covers it.
    let decide = |cookie: &str, csrf: &str, id: &str| {
        let uri = format!("/dashboard/tasks/{id}/decision");
        post_form(&host, &settings, &uri, cookie, &format!("csrf={}&decision=reject", csrf.replace('+', "%2B")))
    };
    assert_eq!(decide(&member, &member_csrf, "t-gitea").status(), 404);
    assert_eq!(decide(&alice, &alice_csrf, "t-gitea").status(), 409);
    assert_eq!(decide(&member, &member_csrf, "t-github").status(), 409);
}

/// A grant that does not parse answers 503 on the dashboard, naming the
/// variable and the entry (and nothing of the other entries).
#[test]
fn a_malformed_grant_is_503_naming_the_variable_and_the_entry() {
    let host = TestHost::new();
    let broken = settings(&[("AGENT_ZERO_DASHBOARD_USERS", "octocat:fix, alice@acme")]);
    let response = get(&host, &broken, "/dashboard", None);
    assert_eq!(response.status(), 503);
    let page = text(&response);
    assert!(page.contains("AGENT_ZERO_DASHBOARD_USERS") && page.contains("entry `alice@acme`"), "{page}");
    assert!(!page.contains("octocat"), "{page}");
}

/// A sign-out revokes that session (a copy of its cookie is refused), and
/// an operator revokes every session of an account with the control-plane
/// token; each record is scheduled and goes once the sessions it refuses
/// have expired.
#[test]
fn sessions_are_revoked_by_a_sign_out_and_by_an_operator() {
    let host = TestHost::new();
    let settings = settings(&[
        ("AGENT_ZERO_DASHBOARD_USERS", "octocat:fix, hubot"),
        ("AGENT_ZERO_CONTROL_PLANE_TOKENS", "ops:tok-ops-7d1c9e"),
    ]);
    let signed_in = |cookie: &str| text(&get(&host, &settings, "/dashboard", Some(cookie))).contains("Signed in as");
    let (a, a_csrf) = signed("octocat", 1, &[], "session-octocat-aa", START_MS);
    let (b, _) = signed("octocat", 1, &[], "session-octocat-bb", START_MS);
    let (hubot, _) = signed("hubot", 2, &[], "session-hubot-0001", START_MS);
    assert!(signed_in(&a) && signed_in(&b) && signed_in(&hubot));

    let out = post_form(&host, &settings, "/logout", &a, &format!("csrf={}", a_csrf.replace('+', "%2B")));
    assert_eq!(out.status(), 303, "{}", text(&out));
    assert!(out.headers()["set-cookie"].to_str().unwrap().starts_with("az_session=;"));
    assert!(!signed_in(&a), "a copy of the signed-out cookie still works");
    assert!(signed_in(&b), "another session of the same account");
    // Signing out again, or with a cookie that is no session, only clears it.
    let stored = host.kv.snapshot();
    for cookie in [a.as_str(), "az_session=forged"] {
        let again = post_form(&host, &settings, "/logout", cookie, "csrf=x");
        assert_eq!(
            (again.status(), again.headers()["location"].to_str().unwrap()),
            (http::StatusCode::SEE_OTHER, "/dashboard")
        );
    }
    assert_eq!(host.kv.snapshot(), stored);

    // The operator's revocation: the token only, the numeric id only.
    let revoke = |id: &str, token: Option<&str>| {
        let mut request = http::Request::delete(format!("/api/v1/dashboard/users/{id}/sessions"));
        if let Some(token) = token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        host.send(&settings, request.body(Vec::new()).unwrap())
    };
    let anonymous = revoke("1", None);
    assert_eq!(anonymous.status(), 401, "{}", text(&anonymous));
    let refused = revoke("1", Some("tok-wrong"));
    assert_eq!(refused.status(), 401);
    let cookie_alone = host.send(
        &settings,
        http::Request::delete("/api/v1/dashboard/users/1/sessions").header("cookie", &b).body(Vec::new()).unwrap(),
    );
    assert_eq!(cookie_alone.status(), 401, "a dashboard session is no credential for the API");
    assert_eq!(host.kv.snapshot(), stored, "an unauthenticated revocation wrote");
    for bad in ["0", "abc", "%2B1", "-1", "99999999999999999999999"] {
        let response = revoke(bad, Some("tok-ops-7d1c9e"));
        assert_eq!(response.status(), 400, "{bad}: {}", text(&response));
        assert!(text(&response).contains("\"field\":\"id\""), "{}", text(&response));
    }
    let revoked = revoke("1", Some("tok-ops-7d1c9e"));
    assert_eq!(revoked.status(), 200, "{}", text(&revoked));
    let body: serde_json::Value = serde_json::from_slice(revoked.body()).unwrap();
    assert_eq!(body["userId"], 1);
    assert_eq!(body["recordExpiresAt"], agent_zero_contracts::rfc3339(START_MS + SESSION_MS));
    assert!(!signed_in(&b), "every session of octocat ends");
    assert!(signed_in(&hubot), "hubot's do not");
    // octocat signs in again afterwards (the grant still allows it).
    host.clock.advance(1);
    let (fresh, _) = signed("octocat", 1, &[], "session-octocat-cc", START_MS + 1);
    assert!(signed_in(&fresh));
    let log = text(&get(&host, &settings, "/dashboard/audit", Some(&fresh)));
    assert!(
        log.contains("dashboard.revoke-sessions") && log.contains("github-user:1") && log.contains(">ops<"),
        "{log}"
    );

    // Both records are scheduled; once every session they refuse has
    // expired, the retention pass removes them.
    let revocations = |kv: &agent_zero_ports::MemoryKv| {
        kv.snapshot().keys().filter(|k| k.starts_with("dashboard/revoked/") || k.contains("/revocation/")).count()
    };
    assert_eq!(revocations(&host.kv), 4, "{:?}", host.kv.snapshot().keys().collect::<Vec<_>>());
    block_on(crate::retention_pass::pass(&host.kv, START_MS + SESSION_MS)).unwrap();
    assert_eq!(revocations(&host.kv), 0, "{:?}", host.kv.snapshot().keys().collect::<Vec<_>>());
}

/// A session covering some repositories reads past the tasks of others:
/// the covered ones behind 60 newer tasks elsewhere are on its first page.
#[test]
fn a_scoped_task_list_reads_past_other_repositories() {
    let host = TestHost::new();
    let settings = settings(&[("AGENT_ZERO_DASHBOARD_USERS", "alice@acme/*")]);
    // Same creation time: the index orders them by id.
    for n in 0..60 {
        task(&host, &format!("t-a{n:02}"), "beta/api");
    }
    for id in ["t-z1", "t-z2", "t-z3"] {
        task(&host, id, "acme/widgets");
    }
    let (alice, _) = signed("alice", 7, &[], "session-alice-0001", START_MS);
    let list = text(&get(&host, &settings, "/dashboard", Some(&alice)));
    for id in ["t-z1", "t-z2", "t-z3"] {
        assert!(list.contains(&format!("/dashboard/tasks/{id}\"")), "{id} not listed: {list}");
    }
    assert!(!list.contains("/dashboard/tasks/t-a") && !list.contains("Next page"), "{list}");
}

/// The counters above the task list count only what the session may see:
/// every repository for a session covering all, its one repository, the
/// covered repository it filters by, and nothing of one it does not cover.
#[test]
fn the_counters_count_only_covered_repositories_and_the_page_reloads() {
    let host = TestHost::new();
    let settings = settings(&[
        ("AGENT_ZERO_DASHBOARD_USERS", "octocat:fix, alice#7:fix@acme/widgets"),
        ("AGENT_ZERO_DASHBOARD_ORGS", "acme"),
    ]);
    for (id, repository) in [("t-w1", "acme/widgets"), ("t-w2", "acme/widgets"), ("t-b1", "beta/api")] {
        task(&host, id, repository);
    }
    // t-b1 failed a minute ago.
    block_on(async {
        let mut failed = crate::task_index::read_summary(&host.kv, "t-b1").await.unwrap().unwrap();
        failed.state = agent_zero_contracts::TaskState::Failed;
        failed.updated_at = agent_zero_contracts::rfc3339(START_MS - 60_000);
        crate::task_index::record(&host.kv, &failed).await.unwrap();
    });
    let (octocat, _) = signed("octocat", 1, &[], "session-octocat-01", START_MS);
    let (alice, _) = signed("alice", 7, &[], "session-alice-0001", START_MS);
    let (member, _) = signed("mallory", 9, &["acme"], "session-member-001", START_MS);
    let counts = |cookie: &str, uri: &str| {
        let page = text(&get(&host, &settings, uri, Some(cookie)));
        assert!(page.contains("<meta http-equiv=\"refresh\" content=\"300\">"), "{page}");
        let cell = |id: &str| {
            let rest = page.split(&format!("<td id=\"count-{id}\">")).nth(1)?;
            let cell = rest.split("</td>").next()?;
            Some(cell.rsplit_once("\">").map_or(cell, |(_, n)| n).trim_end_matches("</a>").to_owned())
        };
        ["running", "queued", "waiting", "failed"].map(cell)
    };
    let some = |n: [&str; 4]| n.map(|n| Some(n.to_owned()));
    assert_eq!(counts(&octocat, "/dashboard"), some(["0", "2", "0", "1"]));
    assert_eq!(counts(&octocat, "/dashboard?repository=beta%2Fapi"), some(["0", "0", "0", "1"]));
    assert_eq!(counts(&alice, "/dashboard"), some(["0", "2", "0", "0"]));
    // Several repositories: none until a filter names one; an uncovered
    // one counts nothing, as a repository without tasks would.
    assert_eq!(counts(&member, "/dashboard"), [None, None, None, None]);
    assert_eq!(counts(&member, "/dashboard?repository=acme%2Fwidgets"), some(["0", "2", "0", "0"]));
    assert_eq!(counts(&alice, "/dashboard?repository=beta%2Fapi"), some(["0", "0", "0", "0"]));
    assert_eq!(counts(&member, "/dashboard?repository=beta%2Fapi"), some(["0", "0", "0", "0"]));
}
