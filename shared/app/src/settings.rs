//! Typed operator settings for running tasks, parsed from the host's
//! variables: every malformed value is an error naming its variable (never
//! its value, never silently the default), and a task that could never run
//! is refused before it is created.

use agent_zero_agent::Policy;
use agent_zero_ports::HttpClient;
use agent_zero_runtime::Limits;

use crate::Config;
use crate::error::{ApiError, ErrorCode};
use crate::retention::Lifetimes;

/// What a tick needs from the operator besides its services.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunSettings {
    /// The engine's bounds: a model step's claim lasts as long as the calls
    /// it may make (`AGENT_ZERO_MODEL_TIMEOUT_MS`), plus
    /// `AGENT_ZERO_CLAIM_MARGIN_MS` (default 30 s) on every step.
    pub limits: Limits,
    /// `AGENT_ZERO_RETENTION_DAYS`, `AGENT_ZERO_DELIVERY_RETENTION_DAYS`.
    pub lifetimes: Lifetimes,
}

impl RunSettings {
    /// Parses the run settings; the first malformed variable is the error.
    pub fn from_config(config: &Config) -> Result<Self, ApiError> {
        let mut limits = Limits::default();
        if let Some(ms) = millis(config, "AGENT_ZERO_MODEL_TIMEOUT_MS")? {
            limits.model_call_ms = ms;
        }
        if let Some(ms) = millis(config, "AGENT_ZERO_CLAIM_MARGIN_MS")? {
            limits.claim_margin_ms = ms;
        }
        Ok(Self { limits, lifetimes: Lifetimes::from_config(config)? })
    }
}

/// A duration in whole milliseconds (1 ms to 24 h), or `None` when unset.
fn millis(config: &Config, name: &str) -> Result<Option<u64>, ApiError> {
    let Some(text) = config.get(name) else { return Ok(None) };
    match text.trim().parse::<u64>() {
        Ok(ms) if (1..=86_400_000).contains(&ms) => Ok(Some(ms)),
        _ => Err(ApiError::new(
            ErrorCode::NotConfigured,
            format!("{name} must be whole milliseconds, at least 1 and at most a day"),
        )
        .with_field(name)),
    }
}

/// Whether a task under `policy` can run at all here: a sandbox provider
/// with its credentials, a model the policy selects with its credential,
/// and well-formed run settings. The error (503) names what to set.
pub(crate) fn check_runnable<C: HttpClient>(config: &Config, policy: &Policy, http: C) -> Result<(), ApiError> {
    RunSettings::from_config(config)?;
    if let Err(reason) = crate::services::sandbox_from_config(config, http) {
        let field = variable_in(&reason).unwrap_or("AGENT_ZERO_SANDBOX_PROVIDER");
        return Err(ApiError::new(ErrorCode::NotConfigured, format!("no task can run: {reason}")).with_field(field));
    }
    if let Err(e) = crate::services::model_selection(policy, config) {
        let reason = e.to_string();
        let field = variable_in(&reason).unwrap_or("model.provider");
        return Err(ApiError::new(ErrorCode::NotConfigured, format!("no task can run: {reason}")).with_field(field));
    }
    Ok(())
}

/// The first `` `NAME` `` in `reason` that is an operator variable.
fn variable_in(reason: &str) -> Option<&'static str> {
    reason
        .split('`')
        .skip(1)
        .step_by(2)
        .find_map(|name| crate::config::KNOWN_VARIABLES.iter().copied().find(|known| *known == name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_durations_name_their_variable_and_never_fall_back() {
        let ok = Config::from_pairs([("AGENT_ZERO_MODEL_TIMEOUT_MS", "1500"), ("AGENT_ZERO_CLAIM_MARGIN_MS", "2000")]);
        let settings = RunSettings::from_config(&ok).unwrap();
        assert_eq!((settings.limits.model_call_ms, settings.limits.claim_margin_ms), (1_500, 2_000));
        assert_eq!(RunSettings::from_config(&Config::default()).unwrap().limits, Limits::default());
        for (name, bad) in [
            ("AGENT_ZERO_MODEL_TIMEOUT_MS", "2m"),
            ("AGENT_ZERO_MODEL_TIMEOUT_MS", "0"),
            ("AGENT_ZERO_CLAIM_MARGIN_MS", "-5"),
            ("AGENT_ZERO_CLAIM_MARGIN_MS", "99999999999"),
            ("AGENT_ZERO_RETENTION_DAYS", "a month"),
        ] {
            let error = RunSettings::from_config(&Config::from_pairs([(name, bad)])).unwrap_err();
            assert_eq!((error.code, error.field.as_deref()), (ErrorCode::NotConfigured, Some(name)), "{name}={bad}");
            assert!(!error.message.contains(bad), "the value is not shown: {}", error.message);
        }
    }

    #[test]
    fn a_task_that_could_never_run_is_refused_naming_what_to_set() {
        let http = crate::test_host::RefusingHttp;
        let policy = Policy::default();
        let none = check_runnable(&Config::default(), &policy, &http).unwrap_err();
        assert_eq!(none.field.as_deref(), Some("AGENT_ZERO_SANDBOX_PROVIDER"), "{}", none.message);
        let no_token =
            Config::from_pairs([("AGENT_ZERO_SANDBOX_PROVIDER", "custom"), ("AGENT_ZERO_SANDBOX_URL", "http://s")]);
        let error = check_runnable(&no_token, &policy, &http).unwrap_err();
        assert_eq!(error.field.as_deref(), Some("AGENT_ZERO_SANDBOX_TOKEN"), "{}", error.message);
        let sandbox = [
            ("AGENT_ZERO_SANDBOX_PROVIDER", "custom"),
            ("AGENT_ZERO_SANDBOX_URL", "http://s"),
            ("AGENT_ZERO_SANDBOX_TOKEN", "t"),
        ];
        let no_model = check_runnable(&Config::from_pairs(sandbox), &policy, &http).unwrap_err();
        assert!(no_model.message.contains("no task can run"), "{}", no_model.message);
        assert!(no_model.field.as_deref().is_some_and(|f| f.ends_with("_API_KEY")), "{:?}", no_model.field);
        let mut all = sandbox.to_vec();
        all.push(("OPENAI_API_KEY", "sk-test"));
        check_runnable(&Config::from_pairs(all), &policy, &http).unwrap();
    }
}
