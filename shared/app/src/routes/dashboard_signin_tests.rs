//! The sign-in round trip over the in-memory host, against the loopback
//! GitHub the end-to-end suite uses (`agent_zero_fakes::FakeGitHub`, its
//! OAuth app in `tests/fakes/src/github/oauth.rs`): what a session resting
//! on organisation membership lives, how a page sends a lapsed one through
//! GitHub again (back to that page), and that a membership GitHub no
//! longer reports ends access there, writing nothing.

use agent_zero_fakes::FakeGitHub;

use crate::Settings;
use crate::dashboard::session::{MEMBERSHIP_RECHECK_MS, SESSION_MS, Session};
use crate::test_host::TestHost;

const KEY: &str = "0123456789abcdef0123456789abcdef-test";
const CLIENT_ID: &str = "Ov23liSignInTest";
const CLIENT_SECRET: &str = "sign-in-client-secret-5e4d";
/// Where the OAuth app sends the browser back (the app's own path).
const CALLBACK: &str = "https://dashboard.test/login/callback";

/// Outbound HTTP to the loopback GitHub, redirects not followed (the
/// App tests of the task API and the forges' run tests use it too).
pub(in crate::routes) use agent_zero_fakes::LoopbackHttp as Loopback;

/// The test host with outbound HTTP to the loopback GitHub.
struct World {
    github: FakeGitHub,
    host: TestHost<Loopback>,
    settings: Settings,
}

pub(in crate::routes) fn agent() -> ureq::Agent {
    Loopback::agent()
}

impl World {
    fn new(users: &str, orgs: &str) -> Self {
        let github = FakeGitHub::start();
        github.register_oauth_app(CLIENT_ID, CLIENT_SECRET, CALLBACK);
        let url = github.url();
        let settings = Settings::from_pairs([
            ("AGENT_ZERO_DASHBOARD_OAUTH_CLIENT_ID", CLIENT_ID),
            ("AGENT_ZERO_DASHBOARD_OAUTH_CLIENT_SECRET", CLIENT_SECRET),
            ("AGENT_ZERO_DASHBOARD_SESSION_KEY", KEY),
            ("AGENT_ZERO_DASHBOARD_USERS", users),
            ("AGENT_ZERO_DASHBOARD_ORGS", orgs),
            ("GITHUB_API_URL", url.as_str()),
        ]);
        Self { github, host: TestHost::with_http(Loopback(agent())), settings }
    }

    fn send(&self, method: &str, uri: &str, cookie: Option<&str>) -> http::Response<Vec<u8>> {
        let mut builder = http::Request::builder().method(method).uri(uri);
        if let Some(cookie) = cookie {
            builder = builder.header("cookie", cookie);
        }
        if method == "POST" {
            builder = builder.header("content-type", "application/x-www-form-urlencoded");
        }
        let request = builder.body(Vec::new()).unwrap();
        let invocation = self.host.invocation();
        agent_zero_ports::block_on(crate::handle(&self.host, &self.settings, &invocation, request))
    }

    fn advance(&self, ms: u64) {
        self.host.clock.advance(ms);
    }

    /// Follows `/login` (at `start`) through GitHub's authorize page to the
    /// callback, as a browser does: the callback's answer.
    fn sign_in_from(&self, start: &str) -> http::Response<Vec<u8>> {
        let login = self.send("GET", start, None);
        assert_eq!(login.status(), 303, "{}", text(&login));
        let state_cookie = pair(&login, "az_oauth_state").expect("the state is bound to a cookie");
        let authorize = location(&login);
        assert!(authorize.starts_with(&format!("{}/login/oauth/authorize?", self.github.url())), "{authorize}");
        // GitHub: the signed-in user has authorised the app, so it answers
        // at once with a redirect to the callback.
        let consent = agent().get(&authorize).call().unwrap();
        assert_eq!(consent.status(), 302);
        let back = consent.headers()["location"].to_str().unwrap().to_owned();
        let path = back.strip_prefix("https://dashboard.test").unwrap_or_else(|| panic!("{back}"));
        self.send("GET", path, Some(&state_cookie))
    }
}

fn text(response: &http::Response<Vec<u8>>) -> String {
    String::from_utf8_lossy(response.body()).into_owned()
}

fn location(response: &http::Response<Vec<u8>>) -> String {
    response.headers()["location"].to_str().unwrap().to_owned()
}

/// The `name=value` of the `Set-Cookie` named `name`, unless it clears it.
fn pair(response: &http::Response<Vec<u8>>, name: &str) -> Option<String> {
    response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with(&format!("{name}=")) && !v.starts_with(&format!("{name}=;")))
        .map(|v| v.split(';').next().unwrap_or_default().to_owned())
}

fn session_of(cookie: &str) -> Session {
    Session::open(KEY.as_bytes(), cookie.strip_prefix("az_session=").unwrap()).unwrap()
}

/// A session resting on an organisation lapses after 30 minutes; a page
/// then goes through GitHub again, which answers at once and lands back
/// on that page; once GitHub no longer lists the membership, access ends
/// there and the refused sign-in writes nothing.
#[test]
fn a_membership_session_is_rechecked_through_github() {
    let world = World::new("octocat", "acme:observe");
    world.github.add_oauth_user("watcher", &["acme"]);
    world.github.add_oauth_user("octocat", &[]);
    world.github.set_oauth_browser_user(Some("watcher"));

    let signed = world.sign_in_from("/login");
    assert_eq!((signed.status().as_u16(), location(&signed)), (303, "/dashboard".to_owned()), "{}", text(&signed));
    let cookie = pair(&signed, "az_session").expect("a session");
    let set = signed.headers().get_all("set-cookie").iter().map(|v| v.to_str().unwrap().to_owned()).collect::<Vec<_>>();
    assert!(set.iter().any(|c| c.starts_with("az_session=") && c.contains("Max-Age=28800")), "{set:?}");
    let session = session_of(&cookie);
    assert_eq!(
        (session.orgs.as_slice(), session.expires_ms - session.issued_ms),
        (&["acme".to_owned()][..], MEMBERSHIP_RECHECK_MS)
    );
    assert!(text(&world.send("GET", "/dashboard", Some(&cookie))).contains("github:watcher"));

    // 30 minutes on: a page read goes through GitHub and back to it; a form is refused.
    world.advance(MEMBERSHIP_RECHECK_MS);
    let lapsed = world.send("GET", "/dashboard/tasks/gh-1?decided=approve", Some(&cookie));
    assert_eq!(lapsed.status(), 303, "{}", text(&lapsed));
    assert_eq!(location(&lapsed), "/login?next=%2Fdashboard%2Ftasks%2Fgh-1%3Fdecided%3Dapprove");
    let form = world.send("POST", "/dashboard/tasks/gh-1/decision", Some(&cookie));
    assert_eq!(form.status(), 401, "{}", text(&form));
    assert!(text(&form).contains("checked again every 30 minutes"), "{}", text(&form));
    let renewed = world.sign_in_from(&location(&lapsed));
    assert_eq!(
        (renewed.status().as_u16(), location(&renewed)),
        (303, "/dashboard/tasks/gh-1?decided=approve".to_owned())
    );
    let cookie = pair(&renewed, "az_session").expect("a renewed session");
    assert!(text(&world.send("GET", "/dashboard", Some(&cookie))).contains("github:watcher"));

    // An owner removes watcher from acme: at the next re-check GitHub no
    // longer lists it, and the dashboard refuses it, storing nothing.
    world.github.set_oauth_user_orgs("watcher", &[]);
    assert!(text(&world.send("GET", "/dashboard", Some(&cookie))).contains("github:watcher"), "until the re-check");
    world.advance(MEMBERSHIP_RECHECK_MS);
    let stored = world.host.kv.snapshot();
    let lapsed = world.send("GET", "/dashboard", Some(&cookie));
    let refused = world.sign_in_from(&location(&lapsed));
    assert_eq!(refused.status(), 403, "{}", text(&refused));
    assert!(text(&refused).contains("`watcher` may not use this dashboard"), "{}", text(&refused));
    assert!(pair(&refused, "az_session").is_none());
    assert_eq!(world.host.kv.snapshot(), stored, "a refused sign-in wrote");
    let page = world.send("GET", "/dashboard", Some(&cookie));
    assert_eq!(page.status(), 303, "the lapsed cookie is never accepted again");

    // A session that rests on no organisation lives its 8 hours.
    world.github.set_oauth_browser_user(Some("octocat"));
    let octocat = pair(&world.sign_in_from("/login"), "az_session").expect("octocat signs in");
    assert_eq!(session_of(&octocat).expires_ms - session_of(&octocat).issued_ms, SESSION_MS);
    world.advance(SESSION_MS - 1);
    assert!(text(&world.send("GET", "/dashboard", Some(&octocat))).contains("github:octocat"));
    world.advance(1);
    let expired = world.send("GET", "/dashboard", Some(&octocat));
    assert!(expired.status() == 200 && text(&expired).contains("Sign in with GitHub"), "{}", text(&expired));
}

/// Only a dashboard page is returned to: `next` naming anything else is
/// dropped at `/login`, before it could reach a redirect.
#[test]
fn sign_in_returns_to_dashboard_pages_only() {
    let world = World::new("octocat", "");
    world.github.add_oauth_user("octocat", &[]);
    world.github.set_oauth_browser_user(Some("octocat"));
    for (next, landing) in [
        ("%2Fdashboard%2Faudit", "/dashboard/audit"),
        ("https%3A%2F%2Fevil.example%2Fdashboard", "/dashboard"),
        ("%2F%2Fevil.example", "/dashboard"),
        ("%2Fapi%2Fv1%2Ftasks", "/dashboard"),
    ] {
        let back = world.sign_in_from(&format!("/login?next={next}"));
        assert_eq!((back.status().as_u16(), location(&back)), (303, landing.to_owned()), "{next}");
    }
}
