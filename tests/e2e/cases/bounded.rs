//! Response bodies are bounded at the HTTP port on both runtimes: a model
//! answer over the model client's 4 MiB limit is refused by the host's HTTP
//! adapter (before it is read: its `Content-Length` says so) and the call
//! counts as unavailable, so the task retries and completes on the next,
//! normal answer.

use serde_json::json;

use agent_zero_e2e::Runtime;
use agent_zero_fakes::calc;

use super::lifecycle::{decision, file_issue, policy, wait_terminal, world};
use crate::Case;

pub(crate) const CASES: &[Case] =
    &[Case { name: "bounded_an_oversized_model_answer_is_refused_then_retried", run: oversized_model_answer }];

/// The model client's limit (`shared/models/src/http_provider.rs`).
const MODEL_LIMIT: usize = 4 * 1024 * 1024;

fn oversized_model_answer(runtime: Runtime) {
    let world = world(runtime, &policy("fix"));
    // A well-formed Chat Completions answer carrying a usable decision,
    // padded with insignificant whitespace past the limit: read whole it
    // would be accepted, so only the limit makes this call fail.
    let content = decision("mechanical", calc::CALC_PY_FIXED).to_string();
    let envelope = json!({
        "id": "chatcmpl-oversized",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4.1",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content, "refusal": null},
            "finish_reason": "stop",
        }],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    });
    let body = format!("{envelope}{}", " ".repeat(MODEL_LIMIT + 1));
    world.model.push_raw(200, &[("content-type", "application/json")], &body);
    world.model.push_decision(decision("mechanical", calc::CALC_PY_FIXED));

    let task_id = file_issue(&world, "bounded-model-1");
    let task = wait_terminal(&world, &task_id);
    let text = task.to_string();
    assert_eq!(task["state"], "completed", "{text}");
    assert_eq!(task["result"]["verified"], true, "{text}");
    assert_eq!(world.model.calls().len(), 2, "the oversized answer was refused and the call retried once");
    // The refused call's recorded reason names the limit.
    let named = world.server.files_containing(&[&format!("over the {MODEL_LIMIT}-byte response limit")]);
    assert!(!named.is_empty(), "no record names the limit");
}
