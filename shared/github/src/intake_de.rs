//! How a recorded delivery's tagged enums are read: the tag first, then the
//! variant's fields straight from the JSON, never buffered
//! ([`TagFirst`](agent_zero_codecs::TagFirst) says why). Each mirror
//! lists what its enum's `Deserialize` reads, with the same defaults; serde
//! fails the build when a variant or field is missing or misnamed.

use agent_zero_codecs::read_tag_first;
use agent_zero_contracts::{IssueRef, PullRequestRef};
use serde::{Deserialize, Deserializer};

use crate::command::ReviewCommand;
use crate::intake::{PolicyGate, Subject};

impl<'de> Deserialize<'de> for Subject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let placeholder = r#"{"type":"issue","owner":"","repo":"","number":0,"title":{"text":"","untrusted":true}}"#;
        read_tag_first(deserializer, "type", placeholder, |d| SubjectDe::deserialize(d))
    }
}

impl<'de> Deserialize<'de> for PolicyGate {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        read_tag_first(deserializer, "gate", r#"{"gate":"feedback"}"#, |d| GateDe::deserialize(d))
    }
}

#[derive(Deserialize)]
#[serde(remote = "Subject", rename_all = "kebab-case")]
#[allow(dead_code)]
enum SubjectDe {
    PullRequest(PullRequestRef),
    Issue(IssueRef),
}

#[derive(Deserialize)]
#[serde(remote = "PolicyGate", rename_all = "kebab-case")]
#[allow(dead_code)]
enum GateDe {
    Feedback,
    Proactive,
    OptIn {
        added_label: String,
    },
    Command {
        command: ReviewCommand,
        #[serde(default)]
        mention: Option<String>,
        #[serde(default)]
        comment_id: Option<u64>,
    },
    IssueLabel {
        labels: Vec<String>,
        #[serde(default)]
        added_label: Option<String>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_placeholders_read_and_either_key_order_reads_back() {
        let issue: Subject = serde_json::from_str(
            r#"{"type":"issue","owner":"","repo":"","number":0,"title":{"text":"","untrusted":true}}"#,
        )
        .unwrap();
        assert!(matches!(issue, Subject::Issue(_)));
        let gates = vec![
            PolicyGate::Feedback,
            PolicyGate::IssueLabel { labels: vec!["a".into()], added_label: Some("a".into()) },
            PolicyGate::OptIn { added_label: "agent-zero".into() },
            PolicyGate::Proactive,
        ];
        let sorted = serde_json::to_value(&gates).unwrap().to_string();
        assert!(sorted.contains(r#"{"added_label":"a","gate":"issue-label""#), "{sorted}");
        assert_eq!(serde_json::from_str::<Vec<PolicyGate>>(&sorted).unwrap(), gates);
        let sorted = serde_json::to_value(&issue).unwrap().to_string();
        assert_eq!(serde_json::from_str::<Subject>(&sorted).unwrap(), issue);
        assert_eq!(serde_json::from_slice::<Subject>(&serde_json::to_vec(&issue).unwrap()).unwrap(), issue);
    }
}
