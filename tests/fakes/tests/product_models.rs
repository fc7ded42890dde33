//! The product's own model providers against FakeModel: each wire format
//! the fake speaks is one the product parses, answers and failures alike.

mod support;

use agent_zero_contracts::ModelProvider;
use agent_zero_fakes::FakeModel;
use agent_zero_models::{
    DecisionRequest, HttpProvider, ModelClient as _, ProviderConfig, SchemaName, decision_from_value,
};
use agent_zero_ports::Secret;
use agent_zero_ports::{ManualClock, block_on};
use serde_json::{Value, json};
use support::http;

const KEY: &str = "sk-fake-key-0123456789";

fn decision_json() -> Value {
    json!({
        "finding": {
            "title": "average divides by n + 1",
            "explanation": "average() adds one to the divisor.",
            "severity": "high",
            "confidence": 0.95,
            "valid": true,
            "evidence": ["`return sum(values) / (len(values) + 1)`"],
            "files": ["calc.py"],
            "changeRisk": "mechanical"
        },
        "plan": ["Divide by len(values)"],
        "acceptanceCriteria": ["python3 -m unittest passes"],
        "changes": [{"path": "calc.py", "content": agent_zero_fakes::calc::CALC_PY_FIXED, "reason": "fix the divisor"}]
    })
}

fn provider_config(model: &FakeModel, kind: ModelProvider, name: &str) -> ProviderConfig {
    let mut config = ProviderConfig::new(kind, name, Some(Secret::new(KEY)));
    config.base_url = match kind {
        ModelProvider::Google => format!("{}/v1beta", model.url()),
        _ => model.base_url(),
    };
    config
}

#[test]
fn every_provider_parses_the_fakes_decision() {
    let kinds = [
        (ModelProvider::OpenAi, "gpt-5"),
        (ModelProvider::OpenAiCompatible, "llama3"),
        (ModelProvider::AiGateway, "openai/gpt-5"),
        (ModelProvider::Anthropic, "claude-sonnet-4-5"),
        (ModelProvider::Google, "gemini-2.5-pro"),
    ];
    let http = http();
    let clock = ManualClock::new(1_700_000_000_000);
    let expected = decision_from_value(decision_json()).unwrap();
    for (kind, name) in kinds {
        let model = FakeModel::start();
        model.push_decision(decision_json());
        let config = provider_config(&model, kind, name);
        let request = DecisionRequest::new("SYSTEM", "CONTEXT-MARKER", SchemaName::Plan);
        let decided = block_on(HttpProvider::new(&config, &http, &clock).decide(&request))
            .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        assert_eq!(decided.decision, expected, "{kind:?}");
        let calls = model.calls();
        assert_eq!(calls.len(), 1, "{kind:?}");
        assert!(calls[0].contains("CONTEXT-MARKER"), "{kind:?}");
        assert!(!calls[0].body_text().contains(KEY), "{kind:?}: the key stays out of the body");
    }
}

#[test]
fn truncations_refusals_and_server_errors_are_failures_to_the_product() {
    let http = http();
    let clock = ManualClock::new(1_700_000_000_000);
    for kind in [ModelProvider::OpenAi, ModelProvider::Anthropic, ModelProvider::Google] {
        let model = FakeModel::start();
        model.push_truncated();
        model.push_refusal("no");
        let config = provider_config(&model, kind, "m");
        let request = DecisionRequest::new("SYSTEM", "CONTEXT", SchemaName::Understand);
        let provider = HttpProvider::new(&config, &http, &clock);
        assert!(block_on(provider.decide(&request)).is_err(), "{kind:?}: truncated");
        assert!(block_on(provider.decide(&request)).is_err(), "{kind:?}: refused");
        // The script is empty: the fake's 500 is an error, not a decision.
        assert!(block_on(provider.decide(&request)).is_err(), "{kind:?}: empty script");
    }
}
