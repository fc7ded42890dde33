//! [`FakeModel`]: a loopback stand-in for the model providers, answering
//! from a script a test enqueues, in whichever wire format each request
//! speaks (see [`WireFormat`]), all on one port:
//!
//! - OpenAI Chat Completions: `POST /v1/chat/completions` (or any prefix)
//! - OpenAI Responses: `POST /v1/responses`
//! - Anthropic Messages: `POST /v1/messages`
//! - Gemini: `POST /v1beta/models/{model}:generateContent`
//!
//! Each request takes the next scripted answer. With the script empty the
//! fake answers 500 naming itself, so a test that calls the model more often
//! than it planned fails loudly.

mod wire;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;

use wire::Said;
pub use wire::WireFormat;

use crate::record::RecordedCall;
use crate::server::{Loopback, Reply};

/// Status of the answer to a [`FakeModel::push_delay`] request, should the
/// client still be waiting.
pub const DELAYED_STATUS: u16 = 504;

#[derive(Debug, Clone)]
enum Step {
    Say(Said),
    /// Like `Say`, answered after this many milliseconds.
    SayLate(Said, u64),
    Raw(Reply),
    Delay(u64),
}

#[derive(Debug, Default)]
struct Script {
    steps: VecDeque<Step>,
    served: u64,
}

/// A fake model provider on `127.0.0.1:<port>`; stops when dropped.
#[derive(Debug)]
pub struct FakeModel {
    script: Arc<Mutex<Script>>,
    server: Loopback,
}

impl FakeModel {
    /// Starts serving on an ephemeral loopback port.
    ///
    /// # Panics
    /// When no loopback port can be bound.
    pub fn start() -> Self {
        let script = Arc::new(Mutex::new(Script::default()));
        let handler_script = Arc::clone(&script);
        let server = Loopback::start("fake-model", Arc::new(move |call| answer(&handler_script, call)));
        Self { script, server }
    }

    /// `http://127.0.0.1:<port>`, without a trailing slash.
    pub fn url(&self) -> String {
        self.server.url().to_owned()
    }

    /// The OpenAI-style base URL, `{url}/v1`, for `AGENT_ZERO_MODEL_BASE_URL`
    /// (the product appends `/chat/completions`, `/messages`, ...).
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.server.url())
    }

    fn push(&self, step: Step) {
        self.script.lock().unwrap_or_else(PoisonError::into_inner).steps.push_back(step);
    }

    /// Answers the next request with this structured output, wrapped for the
    /// request's format: the `choices[0].message.content` string (Chat
    /// Completions), `output[0].content[0].text` (Responses), a `tool_use`
    /// block whose `input` it is, named after the request's forced tool
    /// (Anthropic), `candidates[0].content.parts[0].text` (Gemini).
    pub fn push_decision(&self, decision: Value) {
        self.push(Step::Say(Said::Decision(decision)));
    }

    /// [`FakeModel::push_decision`], answered only after `ms` milliseconds:
    /// a call that is in flight for that long and then succeeds.
    pub fn push_decision_after(&self, ms: u64, decision: Value) {
        self.push(Step::SayLate(Said::Decision(decision), ms));
    }

    /// Answers with free text where structured output was asked for (an
    /// Anthropic `text` block instead of the tool call).
    pub fn push_text(&self, text: &str) {
        self.push(Step::Say(Said::Text(text.to_owned())));
    }

    /// Answers with the format's refusal: `message.refusal`, a `refusal`
    /// content part, `stop_reason: "refusal"`, `finishReason: "SAFETY"`.
    pub fn push_refusal(&self, words: &str) {
        self.push(Step::Say(Said::Refusal(words.to_owned())));
    }

    /// Answers with partial output cut at the token limit:
    /// `finish_reason: "length"`, `status: "incomplete"`,
    /// `stop_reason: "max_tokens"`, `finishReason: "MAX_TOKENS"`.
    pub fn push_truncated(&self) {
        self.push(Step::Say(Said::Truncated));
    }

    /// Answers with exactly this status, headers and body (429 with
    /// `retry-after`, 500, a body that is not JSON, ...).
    pub fn push_raw(&self, status: u16, headers: &[(&str, &str)], body: &str) {
        let mut reply = Reply { status, headers: Vec::new(), body: body.as_bytes().to_vec(), delay_ms: 0 };
        for (name, value) in headers {
            reply = reply.with_header(name, value);
        }
        self.push(Step::Raw(reply));
    }

    /// Holds the next request for `ms` milliseconds, then answers
    /// [`DELAYED_STATUS`] in the format's error envelope: a client with a
    /// shorter timeout gives up first; its retry takes the following step.
    pub fn push_delay(&self, ms: u64) {
        self.push(Step::Delay(ms));
    }

    /// How many scripted answers are left.
    pub fn pending(&self) -> usize {
        self.script.lock().unwrap_or_else(PoisonError::into_inner).steps.len()
    }

    /// Every request so far, in arrival order.
    pub fn calls(&self) -> Vec<RecordedCall> {
        self.server.calls()
    }

    /// The requests that spoke `format`.
    pub fn calls_in(&self, format: WireFormat) -> Vec<RecordedCall> {
        self.calls().into_iter().filter(|c| WireFormat::of_path(&c.decoded_path()) == Some(format)).collect()
    }

    /// Forgets the recorded requests.
    pub fn clear_calls(&self) {
        self.server.clear_calls();
    }
}

fn answer(script: &Mutex<Script>, call: &RecordedCall) -> Reply {
    let path = call.decoded_path();
    let format = WireFormat::of_path(&path);
    let mut script = script.lock().unwrap_or_else(PoisonError::into_inner);
    script.served += 1;
    let serial = script.served;
    let Some(format) = format else {
        let message = format!("agent-zero-fakes FakeModel: no model API at {} {path}", call.method);
        return wire::error(None, 404, &message, serial);
    };
    if call.method != "POST" {
        let message = format!("agent-zero-fakes FakeModel: {} {path} is not allowed (POST only)", call.method);
        return wire::error(Some(format), 405, &message, serial);
    }
    match script.steps.pop_front() {
        Some(Step::Say(said)) => wire::render(format, call, &said, serial),
        Some(Step::SayLate(said, ms)) => Reply { delay_ms: ms, ..wire::render(format, call, &said, serial) },
        Some(Step::Raw(reply)) => reply,
        Some(Step::Delay(ms)) => {
            let message = format!("agent-zero-fakes FakeModel: answer delayed {ms} ms by push_delay");
            Reply { delay_ms: ms, ..wire::error(Some(format), DELAYED_STATUS, &message, serial) }
        }
        None => {
            let message = format!(
                "agent-zero-fakes FakeModel: no scripted answer left for POST {path} (request {serial}); \
                 push_decision/push_raw more answers"
            );
            wire::error(Some(format), 500, &message, serial)
        }
    }
}
