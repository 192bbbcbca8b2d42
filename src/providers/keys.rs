//! Provider API keys stored by `agentwire login`: `auth.json` in the config dir,
//! `{"keys": {"<provider>": "<key>"}}`, file mode 0600. A key from the environment or
//! `models.json` wins over a stored one. Keys are never logged; provider errors redact them
//! like any other key (`super::redact`).

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The key store's file name in the config dir.
pub const FILE: &str = "auth.json";

#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Store {
    keys: BTreeMap<String, String>,
}

/// Why the key store could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyStoreError {
    /// Reading or writing the file failed.
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// The file is not a key store (its content is never quoted: it holds keys).
    #[error("{}: not a key store ({reason})", path.display())]
    Invalid { path: PathBuf, reason: String },
}

fn read(dir: &Path) -> Result<Store, KeyStoreError> {
    let path = dir.join(FILE);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| KeyStoreError::Invalid { path, reason: format!("line {}, column {}", e.line(), e.column()) }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Store::default()),
        Err(source) => Err(KeyStoreError::Io { path, source }),
    }
}

/// The stored keys by provider (none when the file is missing or unreadable: a broken store
/// must not stop the agent, which still has the environment's keys).
pub fn stored(dir: &Path) -> BTreeMap<String, String> {
    match read(dir) {
        Ok(store) => store.keys,
        Err(e) => {
            tracing::warn!("ignoring the stored keys: {e}");
            BTreeMap::new()
        }
    }
}

/// Stores `key` for `provider`, replacing an earlier one; returns the file. The file is
/// written whole to a temporary file created with mode 0600, then renamed over the old one.
pub fn store(dir: &Path, provider: &str, key: &str) -> Result<PathBuf, KeyStoreError> {
    let path = dir.join(FILE);
    let io = |source| KeyStoreError::Io { path: path.clone(), source };
    let mut store = read(dir)?;
    store.keys.insert(provider.to_owned(), key.to_owned());
    std::fs::create_dir_all(dir).map_err(io)?;
    let tmp = dir.join(format!(".{FILE}.{}", std::process::id()));
    let text = serde_json::to_vec_pretty(&store).expect("a map of strings is JSON");
    let written = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&tmp).and_then(|mut f| f.write_all(&text).and_then(|()| f.sync_all()));
    if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, &path)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(io(e));
    }
    Ok(path)
}

/// Forgets every stored key (removes the file); whether there was one.
pub fn forget(dir: &Path) -> std::io::Result<bool> {
    match std::fs::remove_file(dir.join(FILE)) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn store_is_private_and_forget_removes_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = store(dir.path(), "openai", "sk-one").unwrap();
        store(dir.path(), "anthropic", "sk-two").unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(stored(dir.path()).get("openai").map(String::as_str), Some("sk-one"));
        assert_eq!(stored(dir.path()).len(), 2);
        assert!(forget(dir.path()).unwrap());
        assert!(stored(dir.path()).is_empty());
        assert!(!forget(dir.path()).unwrap());
    }
}
