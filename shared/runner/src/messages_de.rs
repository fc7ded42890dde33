//! How the coordinator's tagged messages are read: the tag first, then the
//! variant's fields straight from the JSON, never buffered
//! ([`TagFirst`](agent_zero_codecs::TagFirst) says why). Each mirror
//! lists what its enum's `Deserialize` reads; serde fails the build when a
//! variant or field is missing or misnamed.

use agent_zero_codecs::read_tag_first;
use serde::{Deserialize, Deserializer};

use crate::coordinator::{Acquired, QuotaError};
use crate::kv_coordinator::{CoordinatorOp, CoordinatorReply};
use crate::request::{Lease, LeaseLimits};

impl<'de> Deserialize<'de> for CoordinatorOp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        read_tag_first(deserializer, "op", r#"{"op":"expired","now_ms":0}"#, |d| OpDe::deserialize(d))
    }
}

impl<'de> Deserialize<'de> for CoordinatorReply {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        read_tag_first(deserializer, "reply", r#"{"reply":"done"}"#, |d| ReplyDe::deserialize(d))
    }
}

impl<'de> Deserialize<'de> for QuotaError {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        read_tag_first(deserializer, "code", r#"{"code":"empty-lease"}"#, |d| QuotaDe::deserialize(d))
    }
}

#[derive(Deserialize)]
#[serde(remote = "CoordinatorOp", rename_all = "kebab-case")]
#[allow(dead_code)]
enum OpDe {
    TryAcquire {
        lease: Lease,
        limits: LeaseLimits,
        now_ms: u64,
    },
    Update {
        lease: Lease,
    },
    Release {
        lease_id: String,
        #[serde(default)]
        sandbox: Option<String>,
    },
    Expired {
        now_ms: u64,
    },
    Get {
        lease_id: String,
    },
}

#[derive(Deserialize)]
#[serde(remote = "CoordinatorReply", rename_all = "kebab-case")]
#[allow(dead_code)]
enum ReplyDe {
    Acquired { acquired: Acquired },
    Refused { quota: QuotaError },
    Done,
    Lease { lease: Option<Lease> },
    Leases { leases: Vec<Lease> },
    UnknownLease { lease_id: String },
    Unavailable { message: String },
}

#[derive(Deserialize)]
#[serde(remote = "QuotaError", rename_all = "kebab-case")]
#[allow(dead_code)]
enum QuotaDe {
    MaxActive { active: u32, limit: u32 },
    MaxActivePerRepository { repository: String, active: u32, limit: u32 },
    LeaseTooLong { requested: u64, limit: u64 },
    EmptyLease,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reply_reads_back_in_either_key_order() {
        let replies = vec![
            CoordinatorReply::Refused { quota: QuotaError::MaxActive { active: 2, limit: 2 } },
            CoordinatorReply::Refused { quota: QuotaError::EmptyLease },
            CoordinatorReply::Done,
            CoordinatorReply::Lease { lease: None },
            CoordinatorReply::UnknownLease { lease_id: "l-1".into() },
            CoordinatorReply::Unavailable { message: "m".into() },
        ];
        let written = serde_json::to_vec(&replies).unwrap();
        assert_eq!(serde_json::from_slice::<Vec<CoordinatorReply>>(&written).unwrap(), replies);
        let sorted = serde_json::to_value(&replies).unwrap().to_string();
        assert!(sorted.contains(r#"{"lease_id":"l-1","reply":"unknown-lease"}"#), "{sorted}");
        assert_eq!(serde_json::from_str::<Vec<CoordinatorReply>>(&sorted).unwrap(), replies);
        let ops = vec![CoordinatorOp::Expired { now_ms: 5 }, CoordinatorOp::Get { lease_id: "l".into() }];
        let sorted = serde_json::to_value(&ops).unwrap().to_string();
        assert_eq!(serde_json::from_str::<Vec<CoordinatorOp>>(&sorted).unwrap(), ops);
    }
}
