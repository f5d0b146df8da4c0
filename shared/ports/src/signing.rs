//! How the platform signs what it POSTs to users' endpoints (registered tools and outcome
//! webhooks): HMAC-SHA256 over the body, so a receiver can check the sender.

use ring::hmac;

/// `sha256=<hex HMAC-SHA256(secret, body)>`.
pub const SIGNATURE_HEADER: &str = "x-longrun-signature";
/// The delivery id (`longrun_domain::delivery_id`): one per outcome and webhook, the same on
/// every attempt, so receivers can drop repeats.
pub const DELIVERY_HEADER: &str = "x-longrun-delivery";

/// `sha256=<hex HMAC-SHA256(secret, body)>`.
pub fn signature(secret: &str, body: &[u8]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    let tag = hmac::sign(&key, body);
    let hex: String = tag.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256={hex}")
}

#[cfg(test)]
mod tests {
    use super::signature;

    #[test]
    fn the_signature_is_the_rfc_hmac_sha256_of_the_body_in_hex() {
        let sig = signature("key", b"The quick brown fox jumps over the lazy dog");

        assert_eq!(
            sig,
            "sha256=f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8"
        );
    }
}
