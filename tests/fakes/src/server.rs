//! A loopback HTTP server on a background thread: binds `127.0.0.1:0`,
//! records every request, answers each on its own thread (so a delayed
//! answer never holds up the next request), and stops when dropped.

use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::record::{RecordedCall, parse_query};

/// An answer: status, headers, body, and how long to hold it back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
    pub(crate) delay_ms: u64,
}

impl Reply {
    /// A JSON answer with `content-type: application/json; charset=utf-8`.
    pub(crate) fn json(status: u16, body: &serde_json::Value) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json; charset=utf-8".into())],
            body: body.to_string().into_bytes(),
            delay_ms: 0,
        }
    }

    /// Sets `name` to `value`, replacing a header of the same name.
    pub(crate) fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self.headers.push((name.to_ascii_lowercase(), value.to_owned()));
        self
    }
}

/// The request handler a fake plugs in.
pub(crate) type Handler = Arc<dyn Fn(&RecordedCall) -> Reply + Send + Sync>;

/// A running loopback server.
pub(crate) struct Loopback {
    server: Arc<tiny_http::Server>,
    url: String,
    calls: Arc<Mutex<Vec<RecordedCall>>>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Loopback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loopback").field("url", &self.url).finish_non_exhaustive()
    }
}

impl Loopback {
    /// Binds an ephemeral loopback port and serves `handler` until dropped.
    ///
    /// # Panics
    /// When no loopback port can be bound (a test environment problem).
    pub(crate) fn start(name: &'static str, handler: Handler) -> Self {
        let server = tiny_http::Server::http("127.0.0.1:0")
            .unwrap_or_else(|e| panic!("{name}: cannot bind a loopback port: {e}"));
        let server = Arc::new(server);
        let port = server
            .server_addr()
            .to_ip()
            .map(|addr| addr.port())
            .unwrap_or_else(|| panic!("{name}: not listening on an IP address"));
        let calls = Arc::new(Mutex::new(Vec::new()));
        let thread = {
            let server = Arc::clone(&server);
            let calls = Arc::clone(&calls);
            std::thread::Builder::new()
                .name(name.into())
                .spawn(move || {
                    for request in server.incoming_requests() {
                        let handler = Arc::clone(&handler);
                        let calls = Arc::clone(&calls);
                        // One thread per request: a delayed answer must not
                        // hold up a client's retry.
                        let _ = std::thread::Builder::new()
                            .name(format!("{name}-request"))
                            .spawn(move || answer(request, &handler, &calls));
                    }
                })
                .unwrap_or_else(|e| panic!("{name}: cannot start the server thread: {e}"))
        };
        Self { server, url: format!("http://127.0.0.1:{port}"), calls, thread: Some(thread) }
    }

    /// `http://127.0.0.1:<port>`, without a trailing slash.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// Every request so far, in arrival order.
    pub(crate) fn calls(&self) -> Vec<RecordedCall> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Forgets the recorded requests.
    pub(crate) fn clear_calls(&self) {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner).clear();
    }
}

impl Drop for Loopback {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn answer(mut request: tiny_http::Request, handler: &Handler, calls: &Mutex<Vec<RecordedCall>>) {
    let mut body = Vec::new();
    let _ = request.as_reader().read_to_end(&mut body);
    let url = request.url().to_owned();
    let (path, query) = url.split_once('?').unwrap_or((&url, ""));
    let call = RecordedCall {
        method: request.method().as_str().to_ascii_uppercase(),
        path: path.to_owned(),
        query: parse_query(query),
        headers: request
            .headers()
            .iter()
            .map(|h| (h.field.as_str().as_str().to_ascii_lowercase(), h.value.as_str().to_owned()))
            .collect(),
        body,
    };
    calls.lock().unwrap_or_else(PoisonError::into_inner).push(call.clone());
    let reply = handler(&call);
    if reply.delay_ms > 0 {
        std::thread::sleep(Duration::from_millis(reply.delay_ms));
    }
    let mut response = tiny_http::Response::from_data(reply.body).with_status_code(reply.status);
    for (name, value) in &reply.headers {
        if let Ok(header) = tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes()) {
            response.add_header(header);
        }
    }
    // The client may have given up (a timeout test): nothing to do then.
    let _ = request.respond(response);
}
