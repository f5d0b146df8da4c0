//! Secrets kept out of error text. A provider or a tool that echoes a key (a proxy, a
//! self-hosted server, a tool that quotes its request) would otherwise have it stored and sent
//! on: the run, its events and records, the report, the inbox, webhooks, exports.
//!
//! One process-wide set of the secrets this process holds (provider keys, registered tool,
//! MCP and webhook secrets, bearer tokens), only ever grown: secrets are learned in several
//! places (wiring, the catalog, the token table) and error text is made in many more, and a
//! set every constructor of error text can reach is what lets each of them scrub without a
//! handle threaded through every adapter. Besides those, strings shaped like well-known keys
//! are scrubbed too.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::RwLock;

/// What a scrubbed secret reads as.
pub const REDACTED: &str = "[redacted]";

/// Shorter values are not treated as secrets: scrubbing `abc` from every error would mangle
/// text without protecting anything.
const MIN_SECRET: usize = 8;

static KNOWN: RwLock<BTreeSet<String>> = RwLock::new(BTreeSet::new());

/// Adds `secret` to the set scrubbed from error text.
pub fn register(secret: &str) {
    let secret = secret.trim();
    if secret.len() < MIN_SECRET {
        return;
    }
    let known = KNOWN.read().unwrap_or_else(|e| e.into_inner());
    if known.contains(secret) {
        return;
    }
    drop(known);
    KNOWN
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .insert(secret.to_string());
}

/// `text` with every known secret and every key-shaped string replaced by `[redacted]`.
pub fn scrub(text: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(text);
    {
        let known = KNOWN.read().unwrap_or_else(|e| e.into_inner());
        // Longest first, so a secret that contains another is replaced whole.
        let mut hits: Vec<&String> = known.iter().filter(|s| out.contains(s.as_str())).collect();
        hits.sort_by_key(|s| std::cmp::Reverse(s.len()));
        for s in hits {
            out = Cow::Owned(out.replace(s.as_str(), REDACTED));
        }
    }
    match scrub_shapes(&out) {
        Some(shaped) => Cow::Owned(shaped),
        None => out,
    }
}

/// `scrub`, owned.
pub fn scrubbed(text: impl AsRef<str>) -> String {
    scrub(text.as_ref()).into_owned()
}

/// Prefixes of keys issued by providers we talk to or that users commonly hold, each followed
/// by at least `min` key characters.
const SHAPES: &[(&str, usize)] = &[
    ("sk-", 16),   // OpenAI, Anthropic (sk-ant-…), many OpenAI-compatible servers
    ("pplx-", 16), // Perplexity
    ("AKIA", 16),  // AWS access key ids
    ("ASIA", 16),  // AWS temporary access key ids
    ("AIza", 30),  // Google API keys
    ("ghp_", 20),  // GitHub tokens
    ("gho_", 20),
    ("github_pat_", 20),
    ("xoxb-", 10), // Slack
    ("xoxp-", 10),
    ("tvly-", 16), // Tavily
    ("lr_", 16),   // longrun's own bearer tokens
];

fn key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

/// Key-shaped words, and what follows `Bearer ` or an `api_key=`-like label; `None` when
/// there is none.
fn scrub_shapes(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    let mut rest = text;
    while !rest.is_empty() {
        let start = rest.find(key_char).unwrap_or(rest.len());
        out.push_str(&rest[..start]);
        rest = &rest[start..];
        let end = rest.find(|c| !key_char(c)).unwrap_or(rest.len());
        let word = &rest[..end];
        rest = &rest[end..];
        if word.is_empty() {
            break;
        }
        let shaped = SHAPES
            .iter()
            .any(|(p, min)| word.starts_with(p) && word.len() >= p.len() + min);
        if shaped {
            out.push_str(REDACTED);
            changed = true;
            continue;
        }
        out.push_str(word);
        // A label whose value is a credential: the next word goes, whatever its shape.
        let label = word.eq_ignore_ascii_case("bearer")
            || [
                "api_key",
                "apikey",
                "api-key",
                "x-api-key",
                "access_token",
                "secret",
                "password",
            ]
            .iter()
            .any(|l| word.eq_ignore_ascii_case(l));
        if label {
            let sep_len = rest
                .find(|c: char| !(c == ' ' || c == '=' || c == ':' || c == '"' || c == '\''))
                .unwrap_or(rest.len());
            let sep = &rest[..sep_len];
            let bearer = word.eq_ignore_ascii_case("bearer");
            if (bearer && sep.contains(' '))
                || (!bearer && (sep.contains('=') || sep.contains(':')))
            {
                let after = &rest[sep_len..];
                let value_len = after
                    .find(|c| !key_char(c) && c != '.')
                    .unwrap_or(after.len());
                if value_len >= MIN_SECRET {
                    out.push_str(sep);
                    out.push_str(REDACTED);
                    rest = &after[value_len..];
                    changed = true;
                }
            }
        }
    }
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registered_secret_is_scrubbed_wherever_it_appears() {
        register("registered-secret-of-a-tool");

        let out = scrub(
            "HTTP 500: bad signature registered-secret-of-a-tool (x=registered-secret-of-a-tool)",
        );

        assert_eq!(out, "HTTP 500: bad signature [redacted] (x=[redacted])");
    }

    #[test]
    fn key_shaped_strings_and_labelled_credentials_are_scrubbed() {
        let text = "Incorrect API key provided: sk-proj-abcdefghijklmnopqrstuv. \
                    Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.abc and api_key=0123456789abcdef, \
                    an aws id AKIAABCDEFGHIJKLMNOP";

        let out = scrub(text);

        assert!(!out.contains("sk-proj-abcdefghijklmnopqrstuv"), "{out}");
        assert!(!out.contains("eyJhbGciOiJIUzI1NiJ9"), "{out}");
        assert!(!out.contains("0123456789abcdef"), "{out}");
        assert!(!out.contains("AKIAABCDEFGHIJKLMNOP"), "{out}");
        assert!(
            out.starts_with("Incorrect API key provided: [redacted]."),
            "{out}"
        );
    }

    #[test]
    fn ordinary_error_text_is_left_as_it_is() {
        let text =
            "HTTP 429: rate limit reached for gpt-4.1-mini; retry in 20s (run_0a1b task-key)";

        let out = scrub(text);

        assert!(matches!(out, Cow::Borrowed(_)));
        assert_eq!(out, text);
    }

    #[test]
    fn short_values_are_not_registered() {
        register("abc");

        assert_eq!(scrub("abc def"), "abc def");
    }
}
