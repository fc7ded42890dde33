//! Revoked dashboard sessions, kept in the key-value store and read on
//! every signed-in dashboard request:
//!
//! | key | written by | value | lives |
//! |---|---|---|---|
//! | `dashboard/revoked/session/{h}` | a sign-out | when the session expires (ms) | until then |
//! | `dashboard/revoked/user/{id}` | `DELETE /api/v1/dashboard/users/{id}/sessions` | the revocation time (ms) | [`SESSION_MS`] after it |
//!
//! `{h}` is the first 16 bytes of SHA-256 of the session id, in hex (the id
//! never reaches a key). A session is refused when its id is revoked, or
//! when it was issued at or before its account's revocation time: by the
//! end of a user record's lifetime every session it refused has expired
//! anyway. Each record is written with `put_expiring` (Workers KV removes
//! it by itself) and, where the store keeps keys, scheduled for the
//! retention pass (`crate::retention`, kind `revocation`), which removes it
//! only once its own time says so (a later revocation of the same account
//! rewrites the record and outlives the earlier schedule). Revocations
//! never accumulate; a refused sign-in writes nothing.

use agent_zero_ports::{KeyValue, KvError};
use sha2::{Digest, Sha256};

use super::session::{SESSION_MS, Session};
use crate::retention::{self, Kind};

/// Prefix of every revocation record.
pub(crate) const PREFIX: &str = "dashboard/revoked/";

/// The record id (after [`PREFIX`]) revoking session `id`.
fn session_record(id: &str) -> String {
    format!("session/{}", hex::encode(&Sha256::digest(id.as_bytes())[..16]))
}

/// The record id (after [`PREFIX`]) revoking the sessions of account `user_id`.
fn user_record(user_id: u64) -> String {
    format!("user/{user_id}")
}

/// The time a record holds.
fn time_of(value: &[u8]) -> Option<u64> {
    std::str::from_utf8(value).ok()?.trim().parse().ok()
}

/// Whether `session` was revoked: by a sign-out of it, or by a revocation
/// of its account at or after it was issued. A record that does not parse
/// revokes (fail closed).
pub(crate) async fn is_revoked<K: KeyValue>(kv: &K, session: &Session) -> Result<bool, KvError> {
    if kv.get(&format!("{PREFIX}{}", session_record(&session.id))).await?.is_some() {
        return Ok(true);
    }
    let user = kv.get(&format!("{PREFIX}{}", user_record(session.user_id))).await?;
    Ok(user.is_some_and(|value| time_of(&value).is_none_or(|not_after| session.issued_ms <= not_after)))
}

/// Writes record `id` holding `time`, living until `until_ms`.
async fn write<K: KeyValue>(kv: &K, id: &str, time: u64, now_ms: u64, until_ms: u64) -> Result<(), KvError> {
    let key = format!("{PREFIX}{id}");
    let lifetime_ms = until_ms.saturating_sub(now_ms).max(1);
    kv.put_expiring(&key, time.to_string().as_bytes(), lifetime_ms.div_ceil(1000)).await?;
    if !kv.expires_on_its_own(&key) {
        retention::schedule(kv, until_ms, Kind::Revocation, id).await?;
    }
    Ok(())
}

/// Revokes `session` (a sign-out) until it would have expired.
pub(crate) async fn revoke_session<K: KeyValue>(kv: &K, session: &Session, now_ms: u64) -> Result<(), KvError> {
    let until = session.expires_ms.max(now_ms + 1);
    write(kv, &session_record(&session.id), until, now_ms, until).await
}

/// Revokes every session of account `user_id` issued up to `now_ms`;
/// answers when the record goes (every such session has expired by then).
pub(crate) async fn revoke_user<K: KeyValue>(kv: &K, user_id: u64, now_ms: u64) -> Result<u64, KvError> {
    let until = now_ms + SESSION_MS;
    write(kv, &user_record(user_id), now_ms, now_ms, until).await?;
    Ok(until)
}

/// Removes record `id` (after [`PREFIX`]) when its own time says it is
/// over at `now_ms`: the retention pass's part. `Ok(false)` when it is
/// gone already or was rewritten to live longer.
pub(crate) async fn remove_if_due<K: KeyValue>(kv: &K, id: &str, now_ms: u64) -> Result<bool, KvError> {
    let key = format!("{PREFIX}{id}");
    let Some(value) = kv.get(&key).await? else { return Ok(false) };
    let due = match time_of(&value) {
        Some(not_after) if id.starts_with("user/") => not_after.saturating_add(SESSION_MS),
        Some(until) => until,
        None => 0,
    };
    if due > now_ms {
        return Ok(false);
    }
    kv.delete(&key).await?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use agent_zero_ports::{MemoryKv, block_on};

    use super::*;
    use crate::retention::RETENTION_PREFIX;
    use crate::retention_pass::pass;

    fn session(id: &str, user_id: u64, issued_ms: u64) -> Session {
        Session::issue("octocat".into(), user_id, vec![], id.into(), issued_ms)
    }

    fn keys(kv: &MemoryKv) -> Vec<String> {
        kv.snapshot().keys().cloned().collect()
    }

    /// A sign-out revokes that session only; an account's revocation every
    /// session issued up to it, not the ones after.
    #[test]
    fn sessions_are_revoked_one_by_one_or_per_account() {
        let kv = MemoryKv::new();
        block_on(async {
            let (a, b, other) = (session("session-a", 7, 100), session("session-b", 7, 200), session("c", 8, 100));
            revoke_session(&kv, &a, 300).await.unwrap();
            assert!(is_revoked(&kv, &a).await.unwrap());
            assert!(!is_revoked(&kv, &b).await.unwrap() && !is_revoked(&kv, &other).await.unwrap());
            assert!(
                keys(&kv).iter().all(|k| !k.contains("session-a")),
                "the session id reaches no key: {:?}",
                keys(&kv)
            );
            revoke_user(&kv, 7, 200).await.unwrap();
            assert!(is_revoked(&kv, &b).await.unwrap(), "issued at the revocation's millisecond");
            assert!(!is_revoked(&kv, &session("session-d", 7, 201)).await.unwrap(), "issued after");
            assert!(!is_revoked(&kv, &other).await.unwrap());
        });
    }

    /// Every record is scheduled, and the retention pass removes it once
    /// it is over, not before, and not while a later revocation rewrote it.
    #[test]
    fn revocations_do_not_accumulate() {
        let kv = MemoryKv::new();
        block_on(async {
            let a = session("session-a", 7, 0);
            revoke_session(&kv, &a, 1_000).await.unwrap();
            revoke_user(&kv, 7, 1_000).await.unwrap();
            // Revoked again an hour on: the record lives an hour longer.
            revoke_user(&kv, 7, 3_601_000).await.unwrap();
            let scheduled = keys(&kv).into_iter().filter(|k| k.starts_with(RETENTION_PREFIX)).count();
            assert_eq!(scheduled, 3, "{:?}", keys(&kv));
            assert_eq!(pass(&kv, SESSION_MS - 1).await.unwrap().revocations, 0);
            assert_eq!(pass(&kv, SESSION_MS).await.unwrap().revocations, 1, "the session's record");
            assert_eq!(pass(&kv, SESSION_MS + 1_000).await.unwrap().revocations, 0, "the rewritten user record");
            assert!(is_revoked(&kv, &session("session-e", 7, 3_600_000)).await.unwrap());
            assert_eq!(pass(&kv, SESSION_MS + 3_601_000).await.unwrap().revocations, 1);
            assert_eq!(keys(&kv), Vec::<String>::new());
        });
    }
}
