//! A request, authenticated and routed, and GitLab's offset pagination of
//! an answer: what each handler module reads (below `routes.rs`, which
//! makes the request, and beside the handlers).

use std::collections::BTreeMap;

use serde_json::Value;

use super::state::State;
use crate::record::RecordedCall;
use crate::server::Reply;

/// A request, authenticated and routed: what handlers read.
#[derive(Debug)]
pub(crate) struct Request<'a> {
    pub(crate) call: &'a RecordedCall,
    /// Path parameters, decoded (`id`, `issue_iid`, `file_path`, ...).
    pub(crate) params: BTreeMap<String, String>,
    /// The token's user.
    pub(crate) username: String,
    /// The project `:id` names (index into `State::projects`), if the
    /// route has one.
    pub(crate) project: Option<usize>,
    /// The caller's access level on that project (0 for none).
    pub(crate) level: u32,
    /// Query parameters, with what the path implied (`archive.tar.gz`'s
    /// `format`).
    pub(crate) query: Vec<(String, String)>,
}

impl Request<'_> {
    /// A path parameter ("" when absent).
    pub(crate) fn param(&self, name: &str) -> &str {
        self.params.get(name).map_or("", String::as_str)
    }

    /// A path parameter as a number (0 when absent or not a number; the
    /// definition already typed it).
    pub(crate) fn number(&self, name: &str) -> u64 {
        self.param(name).parse().unwrap_or(0)
    }

    /// A query parameter's (first) value.
    pub(crate) fn query(&self, name: &str) -> Option<&str> {
        self.query.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// The body as JSON (`Null` when absent; the definition already
    /// validated it).
    pub(crate) fn json(&self) -> Value {
        self.call.json().unwrap_or(Value::Null)
    }

    /// The project index (routes under `/projects/:id` always have one).
    pub(crate) fn project(&self) -> usize {
        self.project.expect("a project route resolved its project")
    }
}

/// GitLab's offset pagination (`Gitlab::Pagination::OffsetPagination`):
/// `page` (1-based) and `per_page` (default 20, at most 100), with the
/// `x-page`, `x-per-page`, `x-next-page`, `x-prev-page`, `x-total`,
/// `x-total-pages` headers and a `link` header (`prev`, `next`, `first`,
/// `last`).
pub(crate) fn paginate(state: &State, request: &Request<'_>, items: Vec<Value>) -> Reply {
    let page = request.query("page").and_then(|p| p.parse::<usize>().ok()).filter(|p| *p > 0).unwrap_or(1);
    let per_page =
        request.query("per_page").and_then(|p| p.parse::<usize>().ok()).filter(|p| *p > 0).unwrap_or(20).min(100);
    let total = items.len();
    let pages = total.div_ceil(per_page).max(1);
    let slice: Vec<Value> = items.into_iter().skip((page - 1) * per_page).take(per_page).collect();
    let link = |n: usize, rel: &str| {
        let mut query: Vec<String> = request
            .call
            .query
            .iter()
            .filter(|(k, _)| k != "page" && k != "per_page")
            .map(|(k, v)| format!("{k}={}", crate::record::percent_encode(v)))
            .collect();
        query.push(format!("page={n}"));
        query.push(format!("per_page={per_page}"));
        format!("<{}{}?{}>; rel=\"{rel}\"", state.base_url, request.call.path, query.join("&"))
    };
    let mut links = Vec::new();
    if page > 1 {
        links.push(link(page - 1, "prev"));
    }
    if page < pages {
        links.push(link(page + 1, "next"));
    }
    links.push(link(1, "first"));
    links.push(link(pages, "last"));
    let next = if page < pages { (page + 1).to_string() } else { String::new() };
    let prev = if page > 1 { (page - 1).to_string() } else { String::new() };
    Reply::json(200, &Value::Array(slice))
        .with_header("x-page", &page.to_string())
        .with_header("x-per-page", &per_page.to_string())
        .with_header("x-next-page", &next)
        .with_header("x-prev-page", &prev)
        .with_header("x-total", &total.to_string())
        .with_header("x-total-pages", &pages.to_string())
        .with_header("link", &links.join(", "))
}
