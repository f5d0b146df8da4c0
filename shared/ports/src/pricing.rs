//! USD per 1M tokens. Figures are list prices taken on 2026-11-01; override them from config.

use std::collections::HashMap;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

impl Price {
    const fn new(input: f64, output: f64, cache_read: f64, cache_write: f64) -> Self {
        Price {
            input,
            output,
            cache_read,
            cache_write,
        }
    }

    /// `usage.input_tokens` excludes cache reads and writes; each is priced on its own.
    pub fn cost(&self, u: &crate::Usage) -> f64 {
        (u.input_tokens as f64 * self.input
            + u.output_tokens as f64 * self.output
            + u.cache_read_tokens as f64 * self.cache_read
            + u.cache_write_tokens as f64 * self.cache_write)
            / 1_000_000.0
    }
}

const TABLE: &[(&str, Price)] = &[
    // The scripted model is a simulation; it gets a nominal price so budgets can be exercised.
    ("script:*", Price::new(0.50, 1.50, 0.05, 0.50)),
    ("openai:gpt-4.1", Price::new(2.00, 8.00, 0.50, 0.0)),
    ("openai:gpt-4.1-mini", Price::new(0.40, 1.60, 0.10, 0.0)),
    ("openai:gpt-4.1-nano", Price::new(0.10, 0.40, 0.025, 0.0)),
    ("openai:gpt-4o-mini", Price::new(0.15, 0.60, 0.075, 0.0)),
    ("openai:gpt-5", Price::new(1.25, 10.00, 0.125, 0.0)),
    ("openai:gpt-5-mini", Price::new(0.25, 2.00, 0.025, 0.0)),
    ("openai:gpt-5-nano", Price::new(0.05, 0.40, 0.005, 0.0)),
    (
        "anthropic:claude-opus-4-1",
        Price::new(15.00, 75.00, 1.50, 18.75),
    ),
    (
        "anthropic:claude-sonnet-4-5",
        Price::new(3.00, 15.00, 0.30, 3.75),
    ),
    (
        "anthropic:claude-sonnet-4",
        Price::new(3.00, 15.00, 0.30, 3.75),
    ),
    (
        "anthropic:claude-haiku-4-5",
        Price::new(1.00, 5.00, 0.10, 1.25),
    ),
    // Per-token prices only: Perplexity's per-request search fee is not a token price.
    ("perplexity:sonar", Price::new(1.00, 1.00, 0.0, 0.0)),
    ("perplexity:sonar-pro", Price::new(3.00, 15.00, 0.0, 0.0)),
    (
        "perplexity:sonar-reasoning-pro",
        Price::new(2.00, 8.00, 0.0, 0.0),
    ),
    ("gemini:gemini-2.5-pro", Price::new(1.25, 10.00, 0.31, 0.0)),
    (
        "gemini:gemini-2.5-flash",
        Price::new(0.30, 2.50, 0.075, 0.0),
    ),
    // Bedrock on-demand, us-east-1. Cross-Region inference profiles (`us.`, `eu.`, `apac.`,
    // `global.` before the model id) are looked up as the base model; override where yours differ.
    (
        "bedrock:anthropic.claude-sonnet-4-5-20250929-v1:0",
        Price::new(3.00, 15.00, 0.30, 3.75),
    ),
    (
        "bedrock:anthropic.claude-sonnet-4-20250514-v1:0",
        Price::new(3.00, 15.00, 0.30, 3.75),
    ),
    (
        "bedrock:anthropic.claude-haiku-4-5-20251001-v1:0",
        Price::new(1.00, 5.00, 0.10, 1.25),
    ),
    (
        "bedrock:anthropic.claude-opus-4-1-20250805-v1:0",
        Price::new(15.00, 75.00, 1.50, 18.75),
    ),
    (
        "bedrock:amazon.nova-pro-v1:0",
        Price::new(0.80, 3.20, 0.20, 0.0),
    ),
    (
        "bedrock:amazon.nova-lite-v1:0",
        Price::new(0.06, 0.24, 0.015, 0.0),
    ),
    (
        "bedrock:amazon.nova-micro-v1:0",
        Price::new(0.035, 0.14, 0.00875, 0.0),
    ),
    (
        "bedrock:meta.llama3-3-70b-instruct-v1:0",
        Price::new(0.72, 0.72, 0.0, 0.0),
    ),
    // Local models served by llama.cpp cost nothing per token.
    ("local:*", Price::new(0.0, 0.0, 0.0, 0.0)),
];

#[derive(Clone, Debug, Default)]
pub struct PriceTable {
    overrides: HashMap<String, Price>,
}

impl PriceTable {
    pub fn with_override(mut self, model: &str, price: Price) -> Self {
        self.overrides.insert(model.to_string(), price);
        self
    }

    /// `provider:model`; `None` means unknown, which is never treated as free.
    pub fn get(&self, provider: &str, model: &str) -> Option<Price> {
        let key = format!("{provider}:{model}");
        if let Some(p) = self.overrides.get(&key) {
            return Some(*p);
        }
        let wildcard = format!("{provider}:*");
        let base = (provider == "bedrock")
            .then(|| {
                ["us.", "eu.", "apac.", "global.", "jp.", "au.", "ca."]
                    .iter()
                    .find_map(|p| model.strip_prefix(p))
            })
            .flatten()
            .map(|m| format!("{provider}:{m}"));
        TABLE
            .iter()
            .find(|(k, _)| *k == key || *k == wildcard || Some(*k) == base.as_deref())
            .map(|(_, p)| *p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Usage;

    #[test]
    fn cached_tokens_are_priced_at_the_cache_rate() {
        let p = PriceTable::default().get("openai", "gpt-4.1").unwrap();
        let u = Usage {
            input_tokens: 1_000_000,
            output_tokens: 500_000,
            cache_read_tokens: 2_000_000,
            ..Default::default()
        };
        // 1M × $2 + 0.5M × $8 + 2M × $0.5 = 2 + 4 + 1
        assert!((p.cost(&u) - 7.0).abs() < 1e-9);
    }

    #[test]
    fn an_unknown_model_has_no_price() {
        assert_eq!(PriceTable::default().get("openai", "gpt-99"), None);
    }

    #[test]
    fn a_bedrock_inference_profile_is_priced_as_its_base_model() {
        let t = PriceTable::default();
        let base = t.get("bedrock", "anthropic.claude-haiku-4-5-20251001-v1:0");
        assert!(base.is_some());
        assert_eq!(
            t.get("bedrock", "global.anthropic.claude-haiku-4-5-20251001-v1:0"),
            base
        );
        assert_eq!(
            t.get("bedrock", "us.anthropic.claude-haiku-4-5-20251001-v1:0"),
            base
        );
        assert_eq!(t.get("bedrock", "us.unknown-model"), None);
    }

    #[test]
    fn overrides_win() {
        let t =
            PriceTable::default().with_override("openai:gpt-4.1", Price::new(1.0, 1.0, 0.0, 0.0));
        assert_eq!(t.get("openai", "gpt-4.1").unwrap().input, 1.0);
    }
}
