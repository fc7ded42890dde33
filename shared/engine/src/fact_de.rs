//! How the log's tagged enums are read: the tag first, then the variant's
//! fields straight from the JSON, never buffered
//! ([`TagFirst`](agent_zero_codecs::TagFirst) says why; an object
//! whose tag is not first, as a tool that sorts keys writes it, is still
//! read). Each mirror
//! lists what its enum's `Deserialize` reads, with the same defaults; serde
//! fails the build when a variant or field is missing or misnamed.

use agent_zero_codecs::read_tag_first;
use agent_zero_contracts::{
    AgentDecision, CheckResult, EvidenceBundle, Finding, OmittedItem, Refusal, ReviewLedger, RunCost, TaskResult,
    TaskState, Usage,
};
use serde::{Deserialize, Deserializer};

use crate::fact::{
    ApprovalDecision, Fact, LeaseRecord, ModelOutcome, ModelPurpose, PublicationOutcome, ReadBack, Received, Stimulus,
    WriteOutcome,
};

impl<'de> Deserialize<'de> for Fact {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        read_tag_first(deserializer, "fact", r#"{"fact":"released"}"#, |d| FactDe::deserialize(d))
    }
}

impl<'de> Deserialize<'de> for ModelOutcome {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        read_tag_first(deserializer, "outcome", r#"{"outcome":"unavailable","reason":""}"#, |d| {
            ModelOutcomeDe::deserialize(d)
        })
    }
}

impl<'de> Deserialize<'de> for WriteOutcome {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        read_tag_first(deserializer, "outcome", r#"{"outcome":"allowed"}"#, |d| WriteOutcomeDe::deserialize(d))
    }
}

impl<'de> Deserialize<'de> for PublicationOutcome {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        read_tag_first(deserializer, "outcome", r#"{"outcome":"failed","reason":""}"#, |d| {
            PublicationOutcomeDe::deserialize(d)
        })
    }
}

#[derive(Deserialize)]
#[serde(remote = "ModelOutcome", rename_all = "kebab-case")]
#[allow(dead_code)]
enum ModelOutcomeDe {
    Decided { decision: AgentDecision, usage: Usage },
    Unusable { violation: String, usage: Usage },
    Unavailable { reason: String },
}

#[derive(Deserialize)]
#[serde(remote = "WriteOutcome", rename_all = "kebab-case")]
#[allow(dead_code)]
enum WriteOutcomeDe {
    Allowed,
    Refused { refusal: Refusal },
    NeedsHuman { refusal: Refusal },
}

#[derive(Deserialize)]
#[serde(remote = "PublicationOutcome", rename_all = "kebab-case")]
#[allow(dead_code)]
enum PublicationOutcomeDe {
    Published { reference: String },
    Failed { reason: String },
}

#[derive(Deserialize)]
#[serde(remote = "Fact", rename_all = "kebab-case")]
#[allow(dead_code, clippy::large_enum_variant)]
enum FactDe {
    Created {
        stimulus: Box<Stimulus>,
    },
    Received {
        received: Box<Received>,
    },
    Admitted {
        stimulus: Box<Stimulus>,
    },
    Declined {
        reason: String,
        message: String,
    },
    AdmissionError {
        reason: String,
    },
    Transition {
        from: TaskState,
        to: TaskState,
        message: String,
        #[serde(default)]
        attempt: Option<u32>,
    },
    Leased {
        lease: LeaseRecord,
    },
    SandboxError {
        operation: String,
        reason: String,
    },
    Discovered {
        files: Vec<String>,
        checks: Vec<Vec<String>>,
        #[serde(default)]
        diff: Option<String>,
        #[serde(default)]
        omitted: Vec<OmittedItem>,
        #[serde(default)]
        review: Option<ReviewLedger>,
    },
    ModelCall {
        purpose: ModelPurpose,
        outcome: ModelOutcome,
    },
    Finding {
        finding: Finding,
        #[serde(default)]
        omitted: Vec<OmittedItem>,
        #[serde(default)]
        doc_use: agent_zero_agent::DocUse,
        #[serde(default)]
        quoted_files: Vec<String>,
    },
    Witnessed {
        witness: agent_zero_contracts::WitnessRun,
    },
    WriteDecision {
        outcome: WriteOutcome,
    },
    Applied {
        files: Vec<String>,
    },
    ChecksStarted {
        attempt: u32,
        job: String,
        lease: String,
    },
    Checked {
        attempt: u32,
        results: Vec<CheckResult>,
    },
    Reviewed {
        changed_files: Vec<String>,
        out_of_scope: Vec<String>,
        #[serde(default)]
        byproducts: Vec<String>,
        #[serde(default)]
        tree: Vec<ReadBack>,
    },
    Approval {
        principal: String,
        decision: ApprovalDecision,
        #[serde(default)]
        comment: Option<String>,
        #[serde(default)]
        shown: Option<String>,
    },
    Concluded {
        result: Box<TaskResult>,
        evidence: Box<EvidenceBundle>,
    },
    Released,
    Published {
        outcome: PublicationOutcome,
    },
    Failure {
        reason: String,
    },
    Metered {
        cost: RunCost,
    },
}

#[cfg(test)]
mod tests {
    use agent_zero_contracts::{Refusal, RunCost, TaskState, Usage};

    #[test]
    fn a_ticks_cost_is_stored_without_its_zero_counts_and_reads_back_whole() {
        let cost = RunCost { ticks: 1, kv_atomic: 2, github_requests: 1, ..RunCost::default() };
        let stored = serde_json::to_string(&Fact::Metered { cost }).unwrap();
        assert_eq!(stored, r#"{"fact":"metered","cost":{"githubRequests":1,"kvAtomic":2,"ticks":1}}"#);
        let read: Fact = serde_json::from_str(&stored).unwrap();
        assert_eq!(read, Fact::Metered { cost });
        // As older code wrote it, every count present.
        let whole = format!(r#"{{"fact":"metered","cost":{}}}"#, serde_json::to_string(&cost).unwrap());
        assert!(whole.contains(r#""kvLists":0"#), "{whole}");
        assert_eq!(serde_json::from_str::<Fact>(&whole).unwrap(), Fact::Metered { cost });
    }

    use crate::fact::{
        ApprovalDecision, Entry, Fact, LeaseRecord, LeasedSandbox, ModelOutcome, ModelPurpose, PublicationOutcome,
        WriteOutcome,
    };

    /// A deserializer that refuses `deserialize_any` at the top and hands
    /// every other call to serde_json. serde's derived reader of an
    /// internally tagged enum starts with `deserialize_any` (it buffers the
    /// object into its `Content` tree); the tag-first readers here ask for
    /// a map. docs/decisions.md ("The task log is read tag first") has the
    /// measurements that keep them: this test fails when a derive replaces one.
    struct NoBuffering<D>(D);

    macro_rules! forward {
        ($($method:ident)*) => {$(
            fn $method<V: serde::de::Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
                self.0.$method(visitor)
            }
        )*};
    }

    impl<'de, D: serde::Deserializer<'de>> serde::Deserializer<'de> for NoBuffering<D> {
        type Error = D::Error;

        fn deserialize_any<V: serde::de::Visitor<'de>>(self, _: V) -> Result<V::Value, D::Error> {
            Err(serde::de::Error::custom("read through deserialize_any: buffered, not tag first"))
        }

        forward! {
            deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64 deserialize_u8
            deserialize_u16 deserialize_u32 deserialize_u64 deserialize_f32 deserialize_f64 deserialize_char
            deserialize_str deserialize_string deserialize_bytes deserialize_byte_buf deserialize_option
            deserialize_unit deserialize_seq deserialize_map deserialize_identifier deserialize_ignored_any
        }

        fn deserialize_unit_struct<V: serde::de::Visitor<'de>>(
            self,
            n: &'static str,
            v: V,
        ) -> Result<V::Value, D::Error> {
            self.0.deserialize_unit_struct(n, v)
        }
        fn deserialize_newtype_struct<V: serde::de::Visitor<'de>>(
            self,
            n: &'static str,
            v: V,
        ) -> Result<V::Value, D::Error> {
            self.0.deserialize_newtype_struct(n, v)
        }
        fn deserialize_tuple<V: serde::de::Visitor<'de>>(self, len: usize, v: V) -> Result<V::Value, D::Error> {
            self.0.deserialize_tuple(len, v)
        }
        fn deserialize_tuple_struct<V: serde::de::Visitor<'de>>(
            self,
            n: &'static str,
            len: usize,
            v: V,
        ) -> Result<V::Value, D::Error> {
            self.0.deserialize_tuple_struct(n, len, v)
        }
        fn deserialize_struct<V: serde::de::Visitor<'de>>(
            self,
            n: &'static str,
            fields: &'static [&'static str],
            v: V,
        ) -> Result<V::Value, D::Error> {
            self.0.deserialize_struct(n, fields, v)
        }
        fn deserialize_enum<V: serde::de::Visitor<'de>>(
            self,
            n: &'static str,
            variants: &'static [&'static str],
            v: V,
        ) -> Result<V::Value, D::Error> {
            self.0.deserialize_enum(n, variants, v)
        }
    }

    fn unbuffered<T: for<'de> serde::Deserialize<'de>>(json: &str) -> Result<T, serde_json::Error> {
        T::deserialize(NoBuffering(&mut serde_json::Deserializer::from_str(json)))
    }

    const WHY: &str =
        "the log's enums are read tag first, not by a derive (docs/decisions.md, \"The task log is read tag first\")";

    #[test]
    fn the_logs_enums_are_read_tag_first_not_buffered() {
        assert_eq!(
            unbuffered::<Fact>(r#"{"fact":"failure","reason":"r"}"#).expect(WHY),
            Fact::Failure { reason: "r".into() }
        );
        assert_eq!(
            unbuffered::<ModelOutcome>(r#"{"outcome":"unavailable","reason":"r"}"#).expect(WHY),
            ModelOutcome::Unavailable { reason: "r".into() }
        );
        assert_eq!(unbuffered::<WriteOutcome>(r#"{"outcome":"allowed"}"#).expect(WHY), WriteOutcome::Allowed);
        assert_eq!(
            unbuffered::<PublicationOutcome>(r#"{"outcome":"published","reference":"u"}"#).expect(WHY),
            PublicationOutcome::Published { reference: "u".into() }
        );
        // The probe itself refuses a buffered read.
        let refused = unbuffered::<serde_json::Value>("{}").unwrap_err().to_string();
        assert!(refused.contains("buffered"), "{refused}");
    }

    fn entry() -> Entry {
        let facts = vec![
            Fact::Transition {
                from: TaskState::Queued,
                to: TaskState::Discovering,
                message: "m".into(),
                attempt: None,
            },
            Fact::ModelCall {
                purpose: ModelPurpose::Plan,
                outcome: ModelOutcome::Unusable { violation: "v".into(), usage: Usage::default() },
            },
            Fact::WriteDecision { outcome: WriteOutcome::Allowed },
            Fact::WriteDecision {
                outcome: WriteOutcome::NeedsHuman { refusal: Refusal { code: "c".into(), message: "m".into() } },
            },
            Fact::Published { outcome: PublicationOutcome::Failed { reason: "gone".into() } },
            Fact::Checked { attempt: 1, results: Vec::new() },
            Fact::ChecksStarted { attempt: 2, job: "j".into(), lease: "l".into() },
            Fact::Approval {
                principal: "p".into(),
                decision: ApprovalDecision::Approve,
                comment: Some("ok".into()),
                shown: Some("sha256:00".into()),
            },
            Fact::Released,
        ];
        Entry { seq: 3, at_ms: 9, facts }
    }

    #[test]
    fn an_entry_reads_back_what_it_wrote() {
        let entry = entry();
        assert_eq!(serde_json::from_slice::<Entry>(&serde_json::to_vec(&entry).unwrap()).unwrap(), entry);
    }

    #[test]
    fn an_entry_whose_keys_a_tool_sorted_reads_back_the_same() {
        let entry = entry();
        // serde_json's `Value` keeps keys sorted: these tags move behind
        // `attempt` and `comment`.
        let sorted = serde_json::to_value(&entry).unwrap().to_string();
        assert!(sorted.contains(r#"{"attempt":1,"fact":"checked""#), "{sorted}");
        assert!(sorted.contains(r#"{"comment":"ok","decision":"approve","fact":"approval""#), "{sorted}");
        assert_eq!(serde_json::from_str::<Entry>(&sorted).unwrap(), entry);
    }

    #[test]
    fn a_lease_reads_back_with_its_sandbox_and_without_it_as_older_code_wrote_it() {
        let runner = r#""runner":{"provider":"custom","isolated":true,"writable":true,"network":"restricted"}"#;
        let old = format!(r#"{{"fact":"leased","lease":{{"id":"lease-t",{runner}}}}}"#);
        let Fact::Leased { lease } = serde_json::from_str::<Fact>(&old).unwrap() else { panic!("{old}") };
        assert_eq!((lease.id.as_str(), lease.sandbox.as_ref()), ("lease-t", None));
        // Written back as it was: no `sandbox` key.
        assert_eq!(serde_json::to_string(&Fact::Leased { lease: lease.clone() }).unwrap(), old);
        let sandbox = LeasedSandbox { external_id: "sbx-1".into(), root: "/w".into(), expires_at_ms: 9 };
        let fact = Fact::Leased { lease: LeaseRecord { sandbox: Some(sandbox), ..lease } };
        let written = serde_json::to_string(&fact).unwrap();
        assert!(written.contains(r#""sandbox":{"externalId":"sbx-1","root":"/w","expiresAtMs":9}"#), "{written}");
        assert_eq!(serde_json::from_str::<Fact>(&written).unwrap(), fact);
    }

    #[test]
    fn a_fact_without_its_tag_or_with_an_unknown_one_is_named() {
        let error = |json: &str| serde_json::from_str::<Fact>(json).unwrap_err().to_string();
        assert!(error(r#"{"reason":"x"}"#).starts_with("missing field `fact`"), "{}", error(r#"{"reason":"x"}"#));
        assert!(error(r#"{"fact":"forgotten"}"#).starts_with("unknown variant `forgotten`"));
        assert!(error(r#"{"fact":"failure"}"#).starts_with("missing field `reason`"));
    }
}
