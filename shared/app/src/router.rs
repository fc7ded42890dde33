//! The route table: one place lists every path and its methods, so 404, 405
//! with `Allow`, and the OpenAPI document all derive from it.

use http::Method;

use crate::error::{ApiError, ErrorCode};

/// Which handler a route reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RouteId {
    Health,
    GithubWebhook,
    GitLabWebhook,
    GiteaWebhook,
    ListTasks,
    CreateTask,
    GetTask,
    TaskEvidence,
    TaskEvidenceMarkdown,
    TaskEvidenceJson,
    TaskEvidenceHtml,
    TaskLog,
    TaskReceipt,
    ReceiptKeys,
    Doctor,
    Overview,
    DecideApproval,
    Audit,
    OpenApi,
    Docs,
    Sweep,
    TaskListPage,
    TaskPage,
    SignIn,
    SignInCallback,
    SignOut,
    DashboardTasks,
    DashboardTask,
    DashboardDecision,
    DashboardAudit,
    DashboardEvidence,
    RevokeDashboardSessions,
}

/// One path pattern (`{name}` matches one segment) and its methods.
#[derive(Debug)]
pub struct Route {
    pub pattern: &'static str,
    pub methods: &'static [(Method, RouteId)],
}

/// Every route the app serves.
pub static ROUTES: &[Route] = &[
    Route { pattern: "/api/v1/health", methods: &[(Method::GET, RouteId::Health)] },
    Route { pattern: "/webhooks/github", methods: &[(Method::POST, RouteId::GithubWebhook)] },
    Route { pattern: "/webhooks/gitlab", methods: &[(Method::POST, RouteId::GitLabWebhook)] },
    Route { pattern: "/webhooks/gitea", methods: &[(Method::POST, RouteId::GiteaWebhook)] },
    Route {
        pattern: "/api/v1/tasks",
        methods: &[(Method::GET, RouteId::ListTasks), (Method::POST, RouteId::CreateTask)],
    },
    Route { pattern: "/api/v1/tasks/{id}", methods: &[(Method::GET, RouteId::GetTask)] },
    Route { pattern: "/api/v1/tasks/{id}/evidence", methods: &[(Method::GET, RouteId::TaskEvidence)] },
    Route { pattern: "/api/v1/tasks/{id}/evidence.md", methods: &[(Method::GET, RouteId::TaskEvidenceMarkdown)] },
    Route { pattern: "/api/v1/tasks/{id}/evidence.json", methods: &[(Method::GET, RouteId::TaskEvidenceJson)] },
    Route { pattern: "/api/v1/tasks/{id}/evidence.html", methods: &[(Method::GET, RouteId::TaskEvidenceHtml)] },
    Route { pattern: "/api/v1/tasks/{id}/log", methods: &[(Method::GET, RouteId::TaskLog)] },
    Route { pattern: "/api/v1/tasks/{id}/receipt", methods: &[(Method::GET, RouteId::TaskReceipt)] },
    Route { pattern: "/.well-known/agent-zero/keys", methods: &[(Method::GET, RouteId::ReceiptKeys)] },
    Route { pattern: "/api/v1/approvals/{id}", methods: &[(Method::POST, RouteId::DecideApproval)] },
    Route { pattern: "/api/v1/audit", methods: &[(Method::GET, RouteId::Audit)] },
    Route { pattern: "/api/v1/doctor", methods: &[(Method::GET, RouteId::Doctor)] },
    Route { pattern: "/api/v1/overview", methods: &[(Method::GET, RouteId::Overview)] },
    Route { pattern: "/api/v1/openapi.json", methods: &[(Method::GET, RouteId::OpenApi)] },
    Route { pattern: "/api/v1/docs", methods: &[(Method::GET, RouteId::Docs)] },
    Route { pattern: "/api/v1/sweep", methods: &[(Method::POST, RouteId::Sweep)] },
    Route {
        pattern: "/api/v1/dashboard/users/{id}/sessions",
        methods: &[(Method::DELETE, RouteId::RevokeDashboardSessions)],
    },
    Route { pattern: "/", methods: &[(Method::GET, RouteId::TaskListPage)] },
    Route { pattern: "/tasks/{id}", methods: &[(Method::GET, RouteId::TaskPage)] },
    Route { pattern: "/login", methods: &[(Method::GET, RouteId::SignIn)] },
    Route { pattern: "/login/callback", methods: &[(Method::GET, RouteId::SignInCallback)] },
    Route { pattern: "/logout", methods: &[(Method::POST, RouteId::SignOut)] },
    Route { pattern: "/dashboard", methods: &[(Method::GET, RouteId::DashboardTasks)] },
    Route { pattern: "/dashboard/audit", methods: &[(Method::GET, RouteId::DashboardAudit)] },
    Route { pattern: "/dashboard/tasks/{id}", methods: &[(Method::GET, RouteId::DashboardTask)] },
    Route { pattern: "/dashboard/tasks/{id}/decision", methods: &[(Method::POST, RouteId::DashboardDecision)] },
    Route { pattern: "/dashboard/tasks/{id}/evidence", methods: &[(Method::GET, RouteId::DashboardEvidence)] },
];

/// A matched route and its path parameters, in pattern order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matched {
    pub id: RouteId,
    pub params: Vec<String>,
}

/// Finds the handler for `method` and `path`: 404 when no pattern matches,
/// 405 with `Allow` when the pattern matches but the method does not.
pub fn resolve(method: &Method, path: &str) -> Result<Matched, ApiError> {
    for route in ROUTES {
        let Some(params) = match_pattern(route.pattern, path) else { continue };
        let head_as_get = *method == Method::HEAD;
        if let Some((_, id)) = route.methods.iter().find(|(m, _)| m == method || (head_as_get && *m == Method::GET)) {
            return Ok(Matched { id: *id, params });
        }
        let allow: Vec<&str> = route.methods.iter().map(|(m, _)| m.as_str()).collect();
        let mut error = ApiError::new(
            ErrorCode::MethodNotAllowed,
            format!("{method} is not allowed on {}; allowed: {}", route.pattern, allow.join(", ")),
        );
        error.headers.push((http::header::ALLOW, allow.join(", ")));
        return Err(error);
    }
    Err(ApiError::new(ErrorCode::NotFound, format!("no route for {path}")))
}

/// `path` as the route table sees it, with the operator's base path
/// (`AGENT_ZERO_BASE_PATH`: `""` or `/seg/seg`) taken off the front; 404
/// naming the base when `path` is not under it. `{base}` and `{base}/` are
/// both the app's `/`.
pub(crate) fn app_path<'p>(base: &str, path: &'p str) -> Result<&'p str, ApiError> {
    match path.strip_prefix(base) {
        Some("") => Ok("/"),
        Some(rest) if rest.starts_with('/') => Ok(rest),
        _ => Err(ApiError::new(ErrorCode::NotFound, format!("no route for {path}: the app is served under {base}"))),
    }
}

fn match_pattern(pattern: &str, path: &str) -> Option<Vec<String>> {
    let mut params = Vec::new();
    let mut pattern_segments = pattern.split('/');
    let mut path_segments = path.split('/');
    loop {
        match (pattern_segments.next(), path_segments.next()) {
            (None, None) => return Some(params),
            (Some(p), Some(s)) if p.starts_with('{') && p.ends_with('}') && !s.is_empty() => {
                params.push(s.to_owned());
            }
            (Some(p), Some(s)) if p == s => {}
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_literal_and_parameter_segments() {
        assert_eq!(match_pattern("/a/{id}/b", "/a/42/b"), Some(vec!["42".to_owned()]));
        assert_eq!(match_pattern("/a/{id}/b", "/a//b"), None);
        assert_eq!(match_pattern("/a/{id}", "/a/1/2"), None);
        assert_eq!(match_pattern("/a", "/a/"), None);
    }

    #[test]
    fn the_base_path_is_taken_off_the_front_at_a_segment_boundary() {
        assert_eq!(app_path("", "/api/v1/health").ok(), Some("/api/v1/health"));
        assert_eq!(app_path("/az", "/az/api/v1/health").ok(), Some("/api/v1/health"));
        assert_eq!(app_path("/az", "/az").ok(), Some("/"));
        assert_eq!(app_path("/az", "/az/").ok(), Some("/"));
        assert_eq!(app_path("/a/z", "/a/z/tasks/t-1").ok(), Some("/tasks/t-1"));
        // Not under it: another segment that starts alike, or the root.
        assert_eq!(app_path("/az", "/azx/api/v1/health").ok(), None);
        assert_eq!(app_path("/az", "/api/v1/health").ok(), None);
        assert_eq!(app_path("/a/z", "/a").ok(), None);
        let under = app_path("/az", "/az/webhooks/github").unwrap();
        assert_eq!(resolve(&Method::GET, under).unwrap_err().code, ErrorCode::MethodNotAllowed);
        assert_eq!(resolve(&Method::POST, under).unwrap().id, RouteId::GithubWebhook);
        let outside = app_path("/az", "/webhooks/github").unwrap_err();
        assert_eq!(outside.code, ErrorCode::NotFound);
        assert!(outside.message.contains("served under /az"), "{}", outside.message);
    }

    #[test]
    fn not_found_and_method_not_allowed() {
        assert_eq!(resolve(&Method::GET, "/api/v1/health").unwrap().id, RouteId::Health);
        assert_eq!(resolve(&Method::HEAD, "/api/v1/health").unwrap().id, RouteId::Health);
        let e = resolve(&Method::DELETE, "/api/v1/health").unwrap_err();
        assert_eq!(e.code, ErrorCode::MethodNotAllowed);
        assert_eq!(e.headers, vec![(http::header::ALLOW, "GET".to_owned())]);
        assert_eq!(resolve(&Method::GET, "/nope").unwrap_err().code, ErrorCode::NotFound);
    }
}
