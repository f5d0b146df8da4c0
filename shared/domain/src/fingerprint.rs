//! Stable fingerprints for action sets and errors (stored, so never `DefaultHasher`).

use sha2::{Digest, Sha256};

pub fn of_json(value: &serde_json::Value) -> String {
    // serde_json's Map is ordered, so the same object always serializes the same way.
    hex16(value.to_string().as_bytes())
}

/// Errors that differ only in numbers (ids, offsets, counts) share a fingerprint.
pub fn of_error(message: &str) -> String {
    let normalized: String = message
        .chars()
        .map(|c| if c.is_ascii_digit() { '#' } else { c })
        .collect();
    hex16(normalized.as_bytes())
}

fn hex16(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_order_does_not_change_an_action_fingerprint() {
        let a: serde_json::Value = serde_json::from_str(r#"{"a":1,"b":[1,2]}"#).unwrap();
        let b: serde_json::Value = serde_json::from_str(r#"{"b":[1,2],"a":1}"#).unwrap();
        assert_eq!(of_json(&a), of_json(&b));
    }

    #[test]
    fn errors_differing_only_in_numbers_share_a_fingerprint() {
        assert_eq!(of_error("line 3 col 7: bad"), of_error("line 9 col 1: bad"));
        assert_ne!(of_error("bad"), of_error("worse"));
    }
}
