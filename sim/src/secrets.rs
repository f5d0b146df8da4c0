//! No secret in any stored or sent text: the simulated provider echoes its key in every error
//! and a failing webhook receiver quotes its secret, as a proxy or a careless server does; the
//! check reads every text the store keeps of a run (the run, its records, events, scratchpad,
//! documents, inbox entries and webhook deliveries, bodies included) for either.

use longrun_domain::run::Run;
use longrun_local::InMemoryRunStore;
use longrun_ports::prelude::*;

/// The simulated provider's key, registered as the wiring registers a configured key.
pub const PROVIDER_KEY: &str = "sk-sim-provider-key-0123456789abcdef";
/// Every simulated webhook's secret (`hooks::register`).
pub const HOOK_SECRET: &str = "sim-secret-0123456789";

/// Registers the provider's key, as `Secret::new` does for a configured one.
pub fn register() {
    longrun_ports::redact::register(PROVIDER_KEY);
}

pub async fn none_in_text(store: &InMemoryRunStore, run: &Run, out: &mut Vec<String>) {
    let mut texts: Vec<(&str, String)> =
        vec![("the run", serde_json::to_string(run).unwrap_or_default())];
    let id = &run.id;
    let iterations = store.iterations(id, 0, 100_000).await.unwrap_or_default();
    texts.push((
        "its iterations",
        serde_json::to_string(&iterations).unwrap_or_default(),
    ));
    let events = store.events(id, 0, 1_000_000).await.unwrap_or_default();
    texts.push((
        "its events",
        serde_json::to_string(&events).unwrap_or_default(),
    ));
    let pad = store.scratchpad(id, 100_000).await.unwrap_or_default();
    texts.push((
        "its scratchpad",
        serde_json::to_string(&pad).unwrap_or_default(),
    ));
    for meta in store.docs(id, "", 100_000).await.unwrap_or_default() {
        if let Ok(Some(doc)) = store.doc(id, &meta.path).await {
            texts.push((
                "a document",
                serde_json::to_string(&doc).unwrap_or_default(),
            ));
        }
    }
    let deliveries = store.deliveries(&run.user_id, id).await.unwrap_or_default();
    texts.push((
        "its webhook deliveries",
        serde_json::to_string(&deliveries).unwrap_or_default(),
    ));
    let inbox = store
        .notifications(&run.user_id, 100_000)
        .await
        .unwrap_or_default();
    let mine: Vec<_> = inbox.iter().filter(|n| &n.run_id == id).collect();
    texts.push((
        "its notifications",
        serde_json::to_string(&mine).unwrap_or_default(),
    ));
    for (what, text) in texts {
        for secret in [PROVIDER_KEY, HOOK_SECRET] {
            if text.contains(secret) {
                out.push(format!("secrets: {id}: {what} hold the secret {secret}"));
            }
        }
    }
}
