//! A request, authenticated and routed, and Gitea's pagination of an
//! answer: what each handler module reads (below `routes.rs`, which makes
//! the request, and beside the handlers).

use std::collections::BTreeMap;

use serde_json::Value;

use super::state::{State, repo_key};
use crate::record::RecordedCall;
use crate::server::Reply;

/// A request, authenticated and routed: what handlers read.
#[derive(Debug)]
pub(crate) struct Request<'a> {
    pub(crate) call: &'a RecordedCall,
    /// Path parameters, decoded (`owner`, `repo`, `filepath`, ...).
    pub(crate) params: BTreeMap<String, String>,
    /// The token's user; `None` for an anonymous request.
    pub(crate) login: Option<String>,
}

impl Request<'_> {
    /// A path parameter ("" when absent).
    pub(crate) fn param(&self, name: &str) -> &str {
        self.params.get(name).map_or("", String::as_str)
    }

    /// The repository's map key.
    pub(crate) fn key(&self) -> String {
        repo_key(self.param("owner"), self.param("repo"))
    }

    /// The body as JSON (`Null` when absent; the swagger check already
    /// validated it).
    pub(crate) fn json(&self) -> Value {
        self.call.json().unwrap_or(Value::Null)
    }
}

/// Gitea's pagination: `page` (1-based) and `limit` (default 30, at most
/// 50), `X-Total-Count` and a `Link` header with `next`/`last`/`first`/
/// `prev` as there are.
pub(crate) fn paginate(state: &State, request: &Request<'_>, items: Vec<Value>) -> Reply {
    let page = request.call.query_param("page").and_then(|p| p.parse::<usize>().ok()).filter(|p| *p > 0).unwrap_or(1);
    let limit = request
        .call
        .query_param("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .filter(|l| *l > 0)
        .unwrap_or(30)
        .min(50);
    let total = items.len();
    let pages = total.div_ceil(limit).max(1);
    let slice: Vec<Value> = items.into_iter().skip((page - 1) * limit).take(limit).collect();
    let link = |n: usize, rel: &str| {
        let mut query: Vec<String> = request
            .call
            .query
            .iter()
            .filter(|(k, _)| k != "page" && k != "limit")
            .map(|(k, v)| format!("{k}={}", crate::record::percent_encode(v)))
            .collect();
        query.push(format!("page={n}"));
        query.push(format!("limit={limit}"));
        format!("<{}{}?{}>; rel=\"{rel}\"", state.base_url, request.call.path, query.join("&"))
    };
    let mut links = Vec::new();
    if page < pages {
        links.push(link(page + 1, "next"));
        links.push(link(pages, "last"));
    }
    if page > 1 {
        links.push(link(1, "first"));
        links.push(link(page - 1, "prev"));
    }
    let mut reply = Reply::json(200, &Value::Array(slice))
        .with_header("x-total-count", &total.to_string())
        .with_header("access-control-expose-headers", "X-Total-Count, Link");
    if !links.is_empty() {
        reply = reply.with_header("link", &links.join(","));
    }
    reply
}
