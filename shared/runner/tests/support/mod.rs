//! A loopback HTTP server answering scripted provider responses, and an
//! [`HttpClient`] over `ureq` that sends every adapter request to it.
//!
//! Public hosts (`https://api.e2b.app`, `https://api.vercel.com`, ...) are
//! stood in for by rewriting only scheme + authority to the loopback address;
//! the original origin travels in [`ORIGIN_HEADER`], and the server records
//! the request under its original URL so tests assert what the adapter sent.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use agent_zero_ports::{HttpClient, HttpError, RequestTimeout};

/// Carries the scheme + authority a rewritten request was addressed to.
pub(crate) const ORIGIN_HEADER: &str = "x-loopback-origin";

/// One request as it arrived on the wire, under the URL the adapter used.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) method: String,
    pub(crate) uri: String,
    pub(crate) headers: BTreeMap<String, String>,
    pub(crate) body: Vec<u8>,
}

#[derive(Debug, Default)]
struct Script {
    answers: VecDeque<(u16, Vec<u8>)>,
    seen: Vec<Seen>,
    unscripted: Vec<String>,
}

/// A `tiny_http` server on `127.0.0.1:0` answering its script in order.
pub(crate) struct Loopback {
    server: Arc<tiny_http::Server>,
    script: Arc<Mutex<Script>>,
    thread: Option<JoinHandle<()>>,
    address: String,
}

impl Loopback {
    pub(crate) fn start() -> Self {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("bind loopback"));
        let address = server.server_addr().to_ip().expect("ip listener").to_string();
        let script = Arc::new(Mutex::new(Script::default()));
        let thread = {
            let (server, script) = (Arc::clone(&server), Arc::clone(&script));
            std::thread::spawn(move || {
                for request in server.incoming_requests() {
                    serve(&script, request);
                }
            })
        };
        Self { server, script, thread: Some(thread), address }
    }

    /// Queues the next answer.
    pub(crate) fn answer(self, status: u16, body: impl AsRef<[u8]>) -> Self {
        self.script.lock().unwrap().answers.push_back((status, body.as_ref().to_vec()));
        self
    }

    /// `http://127.0.0.1:PORT`, for adapters whose base URL is configurable.
    pub(crate) fn base_url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// A client sending every request to this server.
    pub(crate) fn client(&self) -> Loopclient {
        Loopclient {
            agent: ureq::Agent::config_builder().http_status_as_error(false).build().into(),
            address: self.address.clone(),
        }
    }

    /// Every request received, after checking none was unscripted and the
    /// whole script was used.
    pub(crate) fn seen(&self) -> Vec<Seen> {
        let script = self.script.lock().unwrap();
        assert!(script.unscripted.is_empty(), "unscripted requests: {:?}", script.unscripted);
        assert!(script.answers.is_empty(), "{} scripted answers never requested", script.answers.len());
        script.seen.clone()
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

fn serve(script: &Mutex<Script>, mut request: tiny_http::Request) {
    let mut body = Vec::new();
    let _ = request.as_reader().read_to_end(&mut body);
    let mut headers = BTreeMap::new();
    for header in request.headers() {
        headers.insert(header.field.as_str().as_str().to_ascii_lowercase(), header.value.as_str().to_owned());
    }
    let origin = match headers.remove(ORIGIN_HEADER) {
        Some(origin) => origin,
        None => format!("http://{}", headers.get("host").map_or("", String::as_str)),
    };
    let seen =
        Seen { method: request.method().as_str().to_owned(), uri: format!("{origin}{}", request.url()), headers, body };
    let answer = {
        let mut script = script.lock().unwrap();
        let answer = script.answers.pop_front();
        if answer.is_none() {
            script.unscripted.push(format!("{} {}", seen.method, seen.uri));
        }
        script.seen.push(seen);
        answer
    };
    let (status, body) = answer.unwrap_or((599, b"unscripted request".to_vec()));
    let _ = request.respond(tiny_http::Response::from_data(body).with_status_code(status));
}

/// Blocking HTTP over `ureq`, pointed at one loopback address.
#[derive(Debug)]
pub(crate) struct Loopclient {
    agent: ureq::Agent,
    address: String,
}

impl HttpClient for Loopclient {
    async fn send(&self, request: http::Request<Vec<u8>>) -> Result<http::Response<Vec<u8>>, HttpError> {
        let timeout = request.extensions().get::<RequestTimeout>().map(|t| Duration::from_millis(t.0));
        let (mut parts, body) = request.into_parts();
        let authority = parts.uri.authority().map(|a| a.as_str().to_owned()).unwrap_or_default();
        if authority != self.address {
            let scheme = parts.uri.scheme_str().unwrap_or("http");
            let origin = format!("{scheme}://{authority}");
            parts.headers.insert(ORIGIN_HEADER, origin.parse().map_err(|_| HttpError::Transport("bad origin".into()))?);
            let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
            parts.uri =
                format!("http://{}{path}", self.address).parse().map_err(|_| HttpError::Transport("bad uri".into()))?;
        }
        let request =
            self.agent.configure_request(http::Request::from_parts(parts, body)).timeout_global(timeout).build();
        let response = self.agent.run(request).map_err(|e| HttpError::Transport(e.to_string()))?;
        let (parts, mut body) = response.into_parts();
        let bytes = body.read_to_vec().map_err(|e| HttpError::Transport(e.to_string()))?;
        Ok(http::Response::from_parts(parts, bytes))
    }
}

pub(crate) use agent_zero_ports::block_on;
