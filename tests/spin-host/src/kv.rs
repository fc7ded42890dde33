//! `fermyon:spin/key-value@2.0.0` over a directory: one file per key (the
//! key hex-encoded as the file name), written atomically (temp file +
//! rename), so values survive a host restart and a crash mid-write leaves
//! the old value. Only stores listed in the component's `key_value_stores`
//! can be opened (`access-denied` otherwise), as in Spin.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::Context;

/// Serialises file operations across concurrent requests.
static LOCK: Mutex<()> = Mutex::new(());

/// An open store: its directory.
#[derive(Debug)]
pub struct KvStore {
    dir: PathBuf,
}

#[derive(Debug)]
pub(crate) enum KvError {
    NoSuchStore,
    AccessDenied,
    Other(String),
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(name: &str) -> Option<String> {
    let bytes: Option<Vec<u8>> = (0..name.len())
        .step_by(2)
        .map(|i| name.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()))
        .collect();
    String::from_utf8(bytes?).ok()
}

fn other(e: impl std::fmt::Display) -> KvError {
    KvError::Other(e.to_string())
}

impl KvStore {
    /// Opens `label` if the component may use it. Spin 3 defines only the
    /// `default` store unless a runtime config adds others.
    pub(crate) fn open(root: &Path, allowed: &[String], label: &str) -> Result<Self, KvError> {
        if !allowed.iter().any(|l| l == label) {
            return Err(KvError::AccessDenied);
        }
        if label != "default" {
            return Err(KvError::NoSuchStore);
        }
        let dir = root.join(label);
        std::fs::create_dir_all(&dir).map_err(other)?;
        Ok(Self { dir })
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(hex(key.as_bytes()))
    }

    pub(crate) fn get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
        match std::fs::read(self.path(key)) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(other(e)),
        }
    }

    pub(crate) fn set(&self, key: &str, value: &[u8]) -> Result<(), KvError> {
        let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let path = self.path(key);
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, value).and_then(|()| std::fs::rename(&tmp, &path)).map_err(other)
    }

    pub(crate) fn delete(&self, key: &str) -> Result<(), KvError> {
        let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
        match std::fs::remove_file(self.path(key)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(other(e)),
            _ => Ok(()),
        }
    }

    pub(crate) fn keys(&self) -> Result<Vec<String>, KvError> {
        let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let mut keys = Vec::new();
        for entry in std::fs::read_dir(&self.dir).context("listing store").map_err(other)? {
            let name = entry.map_err(other)?.file_name();
            if let Some(key) = name.to_str().filter(|n| !n.ends_with(".tmp")).and_then(unhex) {
                keys.push(key);
            }
        }
        Ok(keys)
    }
}
