//! A loopback HTTP server answering scripted provider responses, and an
//! [`HttpClient`] over `ureq` that sends every adapter request to it.
//!
//! Public hosts (`https://api.e2b.app`, `https://api.vercel.com`, ...) are
//! stood in for by rewriting only scheme + authority to the loopback address;
//! the original origin travels in [`ORIGIN_HEADER`], and the server records
//! the request under its original URL so tests assert what the adapter sent.

// Shared by several test binaries, each using a part of it.
#![allow(dead_code)]

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

/// A scripted answer: status, optional content type, body, and how long
/// the server holds it (a vendor slower than the adapter's deadline).
type Answer = (u16, Option<String>, Vec<u8>, Duration);

#[derive(Debug, Default)]
struct Script {
    answers: VecDeque<Answer>,
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
        self.script.lock().unwrap().answers.push_back((status, None, body.as_ref().to_vec(), Duration::ZERO));
        self
    }

    /// Queues the next answer with a `content-type`.
    pub(crate) fn answer_typed(self, status: u16, content_type: &str, body: impl AsRef<[u8]>) -> Self {
        let answer = (status, Some(content_type.to_owned()), body.as_ref().to_vec(), Duration::ZERO);
        self.script.lock().unwrap().answers.push_back(answer);
        self
    }

    /// Queues the next answer, held for `late` before it is sent.
    pub(crate) fn answer_late(self, late: Duration, status: u16, body: impl AsRef<[u8]>) -> Self {
        self.script.lock().unwrap().answers.push_back((status, None, body.as_ref().to_vec(), late));
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
            deadline_cap: None,
        }
    }

    /// A client whose every deadline is at most `cap` (a vendor answering
    /// later than that is a [`HttpError::Timeout`], as the hosts report it).
    pub(crate) fn client_capped(&self, cap: Duration) -> Loopclient {
        Loopclient { deadline_cap: Some(cap), ..self.client() }
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
    let (status, content_type, body, late) =
        answer.unwrap_or((599, None, b"unscripted request".to_vec(), Duration::ZERO));
    let mut response = tiny_http::Response::from_data(body).with_status_code(status);
    if let Some(value) = content_type {
        response = response.with_header(tiny_http::Header::from_bytes("content-type", value).expect("header"));
    }
    if late.is_zero() {
        let _ = request.respond(response);
    } else {
        // Held on its own thread: later requests are answered meanwhile.
        std::thread::spawn(move || {
            std::thread::sleep(late);
            let _ = request.respond(response);
        });
    }
}

/// Blocking HTTP over `ureq`, pointed at one loopback address.
#[derive(Debug)]
pub(crate) struct Loopclient {
    agent: ureq::Agent,
    address: String,
    deadline_cap: Option<Duration>,
}

impl HttpClient for Loopclient {
    async fn send(&self, request: http::Request<Vec<u8>>) -> Result<http::Response<Vec<u8>>, HttpError> {
        let timeout = request.extensions().get::<RequestTimeout>().map(|t| Duration::from_millis(t.0));
        let timeout = match (timeout, self.deadline_cap) {
            (Some(t), Some(cap)) => Some(t.min(cap)),
            (t, cap) => t.or(cap),
        };
        let timeout_ms = timeout.map_or(0, |t| t.as_millis() as u64);
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
        let response = self.agent.run(request).map_err(|e| match e {
            ureq::Error::Timeout(_) => HttpError::Timeout(timeout_ms),
            other => HttpError::Transport(other.to_string()),
        })?;
        let (parts, mut body) = response.into_parts();
        let bytes = body.read_to_vec().map_err(|e| HttpError::Transport(e.to_string()))?;
        Ok(http::Response::from_parts(parts, bytes))
    }
}

pub(crate) use agent_zero_ports::block_on;
