//! Secrets at rest: how a catalog entry's `secret` is sealed before a store writes it and
//! opened after a store reads it. The key is kept apart from the database (a key file beside
//! the token for `serve`, a Secrets Manager secret on AWS); a store holds only sealed values.
//! Pure: no IO here, the adapters and the wiring load the key.

use std::fmt;
use std::sync::Arc;

use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};
use serde_json::Value;

use crate::store::{CatalogScope, StoreError, StoreResult};

/// What marks a sealed value: the scheme's version, then hex of nonce ‖ ciphertext ‖ tag.
const PREFIX: &str = "sealed:v1:";
/// The member of a catalog entry that holds its secret (tools, MCP servers, webhooks).
const SECRET: &str = "secret";
pub const KEY_LEN: usize = 32;

/// Seals and opens catalog secrets under one key (ChaCha20-Poly1305). Each sealed value is
/// bound to its owner, kind and key, so a sealed secret copied to another entry will not open.
#[derive(Clone)]
pub struct Sealer {
    key: Arc<LessSafeKey>,
    rng: SystemRandom,
}

impl fmt::Debug for Sealer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Sealer(key redacted)")
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SealError {
    #[error("a sealing key is {KEY_LEN} bytes, got {0}")]
    KeyLength(usize),
    #[error("a sealing key secret must be at least 32 characters")]
    ShortSecret,
    #[error("no randomness available to make a nonce or a key")]
    Random,
}

impl Sealer {
    pub fn from_key(key: &[u8]) -> Result<Sealer, SealError> {
        let unbound = UnboundKey::new(&CHACHA20_POLY1305, key)
            .map_err(|_| SealError::KeyLength(key.len()))?;
        Ok(Sealer {
            key: Arc::new(LessSafeKey::new(unbound)),
            rng: SystemRandom::new(),
        })
    }

    /// A key derived from a long random text (a generated Secrets Manager password): its
    /// SHA-256.
    pub fn from_secret_text(text: &str) -> Result<Sealer, SealError> {
        let text = text.trim();
        if text.len() < 32 {
            return Err(SealError::ShortSecret);
        }
        Sealer::from_key(ring::digest::digest(&ring::digest::SHA256, text.as_bytes()).as_ref())
    }

    /// A fresh random key, for a key file made on first use.
    pub fn new_key() -> Result<[u8; KEY_LEN], SealError> {
        let mut key = [0u8; KEY_LEN];
        SystemRandom::new()
            .fill(&mut key)
            .map_err(|_| SealError::Random)?;
        Ok(key)
    }

    /// `value` with its `secret` sealed; one already sealed (or without a secret) as it is.
    pub fn seal_entry(
        &self, scope: CatalogScope<'_>, key: &str, value: &Value,
    ) -> StoreResult<Value> {
        let mut value = value.clone();
        if let Some(Value::String(secret)) = value.get_mut(SECRET)
            && !secret.starts_with(PREFIX)
        {
            *secret = self.seal(&aad(scope, key), secret)?;
        }
        Ok(value)
    }

    /// `value` with its `secret` opened. An entry written before secrets were sealed is read
    /// as it is (and sealed by the store's next write of it).
    pub fn open_entry(
        &self, scope: CatalogScope<'_>, key: &str, mut value: Value,
    ) -> StoreResult<Value> {
        if let Some(Value::String(secret)) = value.get_mut(SECRET)
            && let Some(sealed) = secret.strip_prefix(PREFIX)
        {
            *secret = self.open(&aad(scope, key), sealed)?;
        }
        Ok(value)
    }

    /// Whether `value` holds a secret not yet sealed: what a store reseals once.
    pub fn needs_sealing(value: &Value) -> bool {
        matches!(value.get(SECRET), Some(Value::String(s)) if !s.starts_with(PREFIX))
    }

    fn seal(&self, aad: &str, plain: &str) -> StoreResult<String> {
        let mut nonce = [0u8; NONCE_LEN];
        self.rng
            .fill(&mut nonce)
            .map_err(|_| StoreError::Unavailable(SealError::Random.to_string()))?;
        let mut buf = plain.as_bytes().to_vec();
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad.as_bytes()),
                &mut buf,
            )
            .map_err(|_| StoreError::Unavailable("sealing a secret failed".into()))?;
        let mut out = String::with_capacity(PREFIX.len() + 2 * (NONCE_LEN + buf.len()));
        out.push_str(PREFIX);
        hex(&nonce, &mut out);
        hex(&buf, &mut out);
        Ok(out)
    }

    fn open(&self, aad: &str, sealed: &str) -> StoreResult<String> {
        let unreadable = || {
            StoreError::Corrupt(
                "a sealed secret does not open with this key (was the key file or secret replaced?)"
                    .into(),
            )
        };
        let mut bytes = unhex(sealed).ok_or_else(unreadable)?;
        if bytes.len() < NONCE_LEN {
            return Err(unreadable());
        }
        let rest = bytes.split_off(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(&bytes).map_err(|_| unreadable())?;
        let mut rest = rest;
        let plain = self
            .key
            .open_in_place(nonce, Aad::from(aad.as_bytes()), &mut rest)
            .map_err(|_| unreadable())?;
        String::from_utf8(plain.to_vec()).map_err(|_| unreadable())
    }
}

fn aad(scope: CatalogScope<'_>, key: &str) -> String {
    format!("{}\n{}\n{key}", scope.user_id, scope.kind.as_str())
}

fn hex(bytes: &[u8], out: &mut String) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 15)] as char);
    }
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    s.as_bytes()
        .chunks(2)
        .map(|pair| {
            let digit = |c: u8| (c as char).to_digit(16);
            Some((digit(pair[0])? * 16 + digit(pair[1])?) as u8)
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::store::CatalogKind;
    use serde_json::json;

    fn scope(user_id: &str) -> CatalogScope<'_> {
        CatalogScope {
            user_id,
            kind: CatalogKind::Tool,
        }
    }

    #[test]
    fn a_sealed_secret_holds_none_of_its_bytes_and_opens_to_itself() {
        let sealer = Sealer::from_key(&Sealer::new_key().unwrap()).unwrap();
        let entry =
            json!({"name": "crm", "secret": "s3cret-value-of-the-tool", "url": "https://x"});

        let sealed = sealer.seal_entry(scope("ana"), "crm", &entry).unwrap();
        let opened = sealer
            .open_entry(scope("ana"), "crm", sealed.clone())
            .unwrap();

        assert!(!sealed.to_string().contains("s3cret-value-of-the-tool"));
        assert_eq!(sealed["url"], "https://x");
        assert_eq!(opened, entry);
        assert!(!Sealer::needs_sealing(&sealed));
        assert!(Sealer::needs_sealing(&entry));
    }

    #[test]
    fn a_sealed_secret_does_not_open_for_another_owner_or_under_another_key() {
        let sealer = Sealer::from_key(&Sealer::new_key().unwrap()).unwrap();
        let other = Sealer::from_secret_text("a-long-generated-password-of-forty-chars").unwrap();
        let sealed = sealer
            .seal_entry(scope("ana"), "crm", &json!({"secret": "abc"}))
            .unwrap();

        let moved = sealer.open_entry(scope("bob"), "crm", sealed.clone());
        let rekeyed = other.open_entry(scope("ana"), "crm", sealed);

        assert!(matches!(moved, Err(StoreError::Corrupt(_))));
        assert!(matches!(rekeyed, Err(StoreError::Corrupt(_))));
    }

    #[test]
    fn an_entry_written_before_sealing_is_read_as_it_is() {
        let sealer = Sealer::from_key(&[7u8; KEY_LEN]).unwrap();
        let plain = json!({"secret": "old-plain-secret"});

        let opened = sealer.open_entry(scope("ana"), "k", plain.clone()).unwrap();

        assert_eq!(opened, plain);
    }

    #[test]
    fn a_short_key_or_secret_text_is_refused() {
        assert!(matches!(
            Sealer::from_key(&[1, 2, 3]),
            Err(SealError::KeyLength(3))
        ));
        assert!(matches!(
            Sealer::from_secret_text("short"),
            Err(SealError::ShortSecret)
        ));
    }
}
