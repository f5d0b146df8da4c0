//! What keeps a database's secrets its owner's: the file and its WAL readable by the owner
//! only, and the key that seals catalog secrets in a file of its own beside the database
//! (`seal.key`), so a copy of the database alone holds no secret.

use std::path::{Path, PathBuf};

use longrun_ports::{CatalogKind, CatalogScope, Sealer, StoreError, StoreResult};
use rusqlite::{Connection, params};

use super::unavailable;

/// The key file beside the database at `db`.
pub fn key_path(db: &Path) -> PathBuf {
    db.with_file_name("seal.key")
}

/// The database file and its companions (WAL, shared memory, lock) made the owner's only:
/// created 0600 when absent, tightened when an older version left them 0644. SQLite gives the
/// WAL and shared-memory files the database file's mode, so creating it 0600 first is what
/// keeps them private too.
pub fn make_private(db: &Path) -> StoreResult<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(db)
            .map_err(unavailable)?;
        for suffix in ["", "-wal", "-shm", ".lock"] {
            let mut p = db.as_os_str().to_owned();
            p.push(suffix);
            let p = PathBuf::from(p);
            if p.exists() {
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600))
                    .map_err(unavailable)?;
            }
        }
    }
    Ok(())
}

/// The sealer of the database at `db`: its key file read, or made (0600, a fresh random key)
/// on first use.
pub fn load_or_create_key(db: &Path) -> StoreResult<Sealer> {
    let path = key_path(db);
    let bad = |why: String| StoreError::Unavailable(format!("{}: {why}", path.display()));
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let key = unhex(text.trim()).ok_or_else(|| bad("not a sealing key".into()))?;
            Sealer::from_key(&key).map_err(|e| bad(e.to_string()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let key = Sealer::new_key().map_err(|e| bad(e.to_string()))?;
            let mut file = std::fs::OpenOptions::new();
            file.write(true).create_new(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                file.mode(0o600);
            }
            let text: String = key.iter().map(|b| format!("{b:02x}")).collect();
            file.open(&path)
                .and_then(|mut f| {
                    std::io::Write::write_all(&mut f, text.as_bytes())?;
                    f.sync_all()
                })
                .map_err(|e| bad(e.to_string()))?;
            Sealer::from_key(&key).map_err(|e| bad(e.to_string()))
        }
        Err(e) => Err(bad(e.to_string())),
    }
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.is_ascii() {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
}

/// Seals, once, the catalog secrets an older version stored in plain text. Secure delete is on
/// for it, so the plain values' old pages are overwritten rather than left in free space.
pub fn seal_plain_entries(c: &Connection, sealer: &Sealer) -> StoreResult<usize> {
    let mut plain = vec![];
    {
        let mut st = c
            .prepare(
                "SELECT user_id, kind, key, body FROM catalog WHERE body LIKE '%\"secret\":\"%'",
            )
            .map_err(unavailable)?;
        let rows = st
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                ))
            })
            .map_err(unavailable)?;
        for row in rows {
            let (user, kind, key, body) = row.map_err(unavailable)?;
            let value: serde_json::Value =
                serde_json::from_str(&body).map_err(|e| StoreError::Corrupt(e.to_string()))?;
            if !Sealer::needs_sealing(&value) {
                continue;
            }
            let Some(kind) = CatalogKind::ALL.into_iter().find(|k| k.as_str() == kind) else {
                continue;
            };
            let scope = CatalogScope {
                user_id: &user,
                kind,
            };
            let sealed = sealer.seal_entry(scope, &key, &value)?;
            plain.push((user.clone(), kind.as_str(), key, sealed.to_string()));
        }
    }
    if plain.is_empty() {
        return Ok(0);
    }
    c.pragma_update(None, "secure_delete", "ON")
        .map_err(unavailable)?;
    let tx = c.unchecked_transaction().map_err(unavailable)?;
    for (user, kind, key, body) in &plain {
        tx.execute(
            "UPDATE catalog SET body = ?4 WHERE user_id = ?1 AND kind = ?2 AND key = ?3",
            params![user, kind, key, body],
        )
        .map_err(unavailable)?;
    }
    tx.commit().map_err(unavailable)?;
    c.pragma_update(None, "secure_delete", "OFF")
        .map_err(unavailable)?;
    Ok(plain.len())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::{SqliteDb, SqliteRunStore};
    use super::*;
    use longrun_ports::UserCatalog;
    use serde_json::json;

    #[tokio::test]
    async fn a_secret_an_older_version_stored_in_plain_text_is_sealed_when_the_database_opens() {
        // Arrange: a catalog row as an older version wrote it.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("longrun.sqlite3");
        drop(SqliteDb::open(&path).unwrap());
        let plain =
            json!({"url": "https://hooks.example.com", "secret": "plain-old-webhook-secret"});
        Connection::open(&path)
            .unwrap()
            .execute(
                "INSERT INTO catalog (user_id, kind, key, body) VALUES ('ana', 'webhook', '0000', ?1)",
                [plain.to_string()],
            )
            .unwrap();

        // Act
        let store = SqliteRunStore::new(SqliteDb::open(&path).unwrap());
        let scope = CatalogScope {
            user_id: "ana",
            kind: CatalogKind::Webhook,
        };
        let read = store.entries(scope).await.unwrap();

        // Assert: read back as it was, stored sealed.
        assert_eq!(read, vec![("0000".to_string(), plain)]);
        let body: String = Connection::open(&path)
            .unwrap()
            .query_row("SELECT body FROM catalog WHERE user_id = 'ana'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert!(!body.contains("plain-old-webhook-secret"), "{body}");
        assert!(body.contains("sealed:v1:"), "{body}");
    }

    #[test]
    fn a_key_file_is_made_private_once_and_read_back_after() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("longrun.sqlite3");

        let first = load_or_create_key(&db).unwrap();
        let text = std::fs::read_to_string(key_path(&db)).unwrap();
        let again = load_or_create_key(&db).unwrap();

        let scope = CatalogScope {
            user_id: "ana",
            kind: CatalogKind::Tool,
        };
        let sealed = first
            .seal_entry(scope, "t", &json!({"secret": "s"}))
            .unwrap();
        assert_eq!(
            again.open_entry(scope, "t", sealed).unwrap(),
            json!({"secret": "s"})
        );
        assert_eq!(text.len(), 64);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(key_path(&db))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
