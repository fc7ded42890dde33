//! `.agent-zero.yml` text to [`Policy`]: YAML, then shape, then ranges.

use agent_zero_contracts::ChangeRisk;

use super::checks::check_command;
use super::yaml::{self, Value};
use super::{Policy, PolicyError, check_branch_prefix, read};

/// Largest policy file read, in bytes. Real files are well under 4 KiB.
pub const MAX_POLICY_BYTES: usize = 64 * 1024;

/// GitHub's limit on a label name, in characters.
const MAX_LABEL_CHARS: usize = 50;

/// Longest bot login accepted in `triggers.allowedBots`.
const MAX_LOGIN_BYTES: usize = 100;

/// Keys the reference knows that a repository may not set at the edge.
const FORBIDDEN: &[(&str, &str, &str)] =
    &[("model", "baseUrl", "the endpoint comes from the operator's AGENT_ZERO_MODEL_BASE_URL")];

impl Policy {
    /// A policy as a record holds it (its `Serialize` JSON, in a task's
    /// stimulus), read through the tree and reader a file is read with:
    /// a JSON deserializer of every policy type besides would be 26 KB
    /// more wasm. The record was checked when it was written.
    pub fn from_record(value: &serde_json::Value) -> Result<Self, PolicyError> {
        read::policy(&yaml::Node::from_json(value)).map_err(|message| PolicyError::Syntax { message })
    }

    /// Parses `.agent-zero.yml` bytes; see [`Policy::parse`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, PolicyError> {
        if bytes.len() > MAX_POLICY_BYTES {
            return Err(PolicyError::TooLarge { bytes: bytes.len(), max: MAX_POLICY_BYTES });
        }
        let text = std::str::from_utf8(bytes).map_err(|_| PolicyError::NotUtf8)?;
        Self::parse(text)
    }

    /// Parses and validates `.agent-zero.yml`. An empty file (or one with
    /// only comments) is the default policy; an absent file is the
    /// caller's `Policy::default()`. Unknown keys, `model.baseUrl` and
    /// out-of-range values are errors naming the field path; the
    /// reference's settings without an edge meaning parse, and are listed
    /// by [`Policy::warnings`].
    pub fn parse(text: &str) -> Result<Self, PolicyError> {
        if text.len() > MAX_POLICY_BYTES {
            return Err(PolicyError::TooLarge { bytes: text.len(), max: MAX_POLICY_BYTES });
        }
        let Some(document) = yaml::load(text)? else { return Ok(Self::default()) };
        match &document.value {
            _ if document.is_null() => return Ok(Self::default()),
            Value::Mapping(_) => {}
            _ => {
                return Err(PolicyError::Syntax { message: "the document must be a mapping of policy fields".into() });
            }
        }
        for (section, key, reason) in FORBIDDEN {
            if document.get(section).and_then(|s| s.get(key)).is_some() {
                return Err(PolicyError::Forbidden { field: format!("{section}.{key}"), reason: (*reason).into() });
            }
        }
        let mut policy = read::policy(&document).map_err(|message| PolicyError::Syntax { message })?;
        policy.check()?;
        policy.map_reference_fields();
        Ok(policy)
    }

    /// The range and shape rules beyond the types.
    fn check(&self) -> Result<(), PolicyError> {
        if self.version != 1 {
            return Err(PolicyError::invalid(
                "version",
                format!("unsupported version {}; only 1 exists", self.version),
            ));
        }
        for (index, command) in self.checks.iter().enumerate() {
            check_command(index, command)?;
        }
        let label = &self.issues.require_label;
        if label.trim().is_empty() {
            return Err(PolicyError::invalid("issues.requireLabel", "must be a non-empty label name"));
        }
        if label.chars().count() > MAX_LABEL_CHARS {
            return Err(PolicyError::invalid(
                "issues.requireLabel",
                format!("must be at most {MAX_LABEL_CHARS} characters (GitHub's limit)"),
            ));
        }
        for (index, association) in self.triggers.author_associations.iter().enumerate() {
            if !super::AUTHOR_ASSOCIATIONS.contains(&association.as_str()) {
                return Err(PolicyError::invalid(
                    format!("triggers.authorAssociations[{index}]"),
                    format!("`{association}` is not one of GitHub's {}", super::AUTHOR_ASSOCIATIONS.join(", ")),
                ));
            }
        }
        for (index, login) in self.triggers.allowed_bots.iter().enumerate() {
            let valid = !login.is_empty()
                && login.len() <= MAX_LOGIN_BYTES
                && login.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'[' | b']'));
            if !valid {
                return Err(PolicyError::invalid(
                    format!("triggers.allowedBots[{index}]"),
                    format!("must be a GitHub login of 1 to {MAX_LOGIN_BYTES} letters, digits, `-`, `_` and `[bot]`"),
                ));
            }
        }
        let opt_in = &self.triggers.opt_in_label;
        if !opt_in.is_empty() && opt_in.trim().is_empty() {
            return Err(PolicyError::invalid(
                "triggers.optInLabel",
                "must be a label name, or empty to opt no pull request in",
            ));
        }
        if opt_in.chars().count() > MAX_LABEL_CHARS {
            return Err(PolicyError::invalid(
                "triggers.optInLabel",
                format!("must be at most {MAX_LABEL_CHARS} characters (GitHub's limit)"),
            ));
        }
        let runs = self.triggers.max_runs_per_hour;
        if !(1..=super::MAX_RUNS_PER_HOUR).contains(&runs) {
            return Err(PolicyError::invalid(
                "triggers.maxRunsPerHour",
                format!("must be between 1 and {}, got {runs}", super::MAX_RUNS_PER_HOUR),
            ));
        }
        check_branch_prefix(&self.issues.branch_prefix)
            .map_err(|reason| PolicyError::invalid("issues.branchPrefix", reason))?;
        ratio(self.autofix.min_confidence, "autofix.minConfidence")?;
        if let Some(index) = self.autofix.allowed_change_risks.iter().position(|r| *r == ChangeRisk::HighImpact) {
            return Err(PolicyError::invalid(
                format!("autofix.allowedChangeRisks[{index}]"),
                "high-impact changes always need a human and cannot be allowed",
            ));
        }
        ratio(self.validation.min_confidence, "validation.minConfidence")?;
        positive(self.agent.max_attempts.into(), "agent.maxAttempts")?;
        positive(self.agent.timeout_ms, "agent.timeoutMs")?;
        positive(self.agent.max_changed_files.into(), "agent.maxChangedFiles")?;
        positive(self.runner.max_output_bytes, "runner.maxOutputBytes")?;
        if self.model.name.as_ref().is_some_and(|name| name.trim().is_empty()) {
            return Err(PolicyError::invalid("model.name", "must be a non-empty string"));
        }
        self.review.check()?;
        price(self.model.input_cost_per_million_tokens, "model.inputCostPerMillionTokens")?;
        price(self.model.output_cost_per_million_tokens, "model.outputCostPerMillionTokens")?;
        Ok(())
    }
}

fn ratio(value: f64, field: &str) -> Result<(), PolicyError> {
    if value.is_finite() && (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(PolicyError::invalid(field, format!("must be between 0 and 1, got {value}")))
    }
}

fn positive(value: u64, field: &str) -> Result<(), PolicyError> {
    if value >= 1 { Ok(()) } else { Err(PolicyError::invalid(field, "must be a positive integer")) }
}

fn price(value: Option<f64>, field: &str) -> Result<(), PolicyError> {
    match value {
        Some(v) if !v.is_finite() || v < 0.0 => {
            Err(PolicyError::invalid(field, format!("must be a non-negative number, got {v}")))
        }
        _ => Ok(()),
    }
}

/// A [`Policy`] field of a record, for
/// `#[serde(deserialize_with = "agent_zero_agent::policy::record")]`:
/// read with [`Policy::from_record`].
pub fn record<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Policy, D::Error> {
    let value = <serde_json::Value as serde::Deserialize>::deserialize(deserializer)?;
    Policy::from_record(&value).map_err(serde::de::Error::custom)
}
