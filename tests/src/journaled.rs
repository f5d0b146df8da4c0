//! The journaled durable loop the zero-latency benchmark is measured against: the shape of a
//! durable-execution agent loop (a Restate or Temporal workflow) with nothing of longrun in it.
//! Each run is one task holding its state in memory. Every iteration it calls the same scripted
//! model, carries out the doc write the answer asks for, journals the answer and the tool's
//! result, and waits for them to be durable before it goes on. The journal is SQLite in WAL
//! mode, `synchronous=FULL`, written by one thread that commits whatever is waiting as one
//! group (one fsync for many runs), or, with `grouped` false, each iteration as its own
//! transaction (the shape of a checkpointer that saves every step on its own). No queue, no
//! claim, no lease, no budget check, no re-enqueue: about the least a loop can do and still
//! survive a crash.
#![allow(clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc;

use longrun_ports::{ChatMessage, ChatRequest, LlmClient, LlmRole};
use rusqlite::Connection;
use serde_json::Value;
use tokio::sync::oneshot;

/// What one iteration makes durable at once.
struct Entries {
    run: usize,
    iteration: u32,
    answer: String,
    doc: Option<(String, String)>,
    result: String,
}

type Batch = (Entries, oneshot::Sender<()>);

/// The one journal writer: it commits every batch waiting as one transaction and answers
/// each once the transaction is durable.
fn writer(path: &Path, rx: mpsc::Receiver<Batch>, grouped: bool) -> rusqlite::Result<()> {
    let mut conn = Connection::open(path)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.execute_batch(
        "CREATE TABLE journal (run INTEGER, iteration INTEGER, entry INTEGER, payload TEXT,
                               PRIMARY KEY (run, iteration, entry));
         CREATE TABLE docs (run INTEGER, path TEXT, content TEXT, PRIMARY KEY (run, path));",
    )?;
    while let Ok(first) = rx.recv() {
        let mut group = vec![first];
        if grouped {
            group.extend(rx.try_iter());
        }
        let tx = conn.transaction()?;
        {
            let mut journal = tx.prepare_cached("INSERT INTO journal VALUES (?1, ?2, ?3, ?4)")?;
            let mut docs = tx.prepare_cached("INSERT OR REPLACE INTO docs VALUES (?1, ?2, ?3)")?;
            for (e, _) in &group {
                journal.execute((e.run, e.iteration, 0, &e.answer))?;
                if let Some((path, content)) = &e.doc {
                    docs.execute((e.run, path, content))?;
                }
                journal.execute((e.run, e.iteration, 1, &e.result))?;
            }
        }
        tx.commit()?;
        for (_, done) in group {
            let _ = done.send(());
        }
    }
    Ok(())
}

/// Runs `runs` loops of `iterations` each against `llm` with the journal in `dir`; the
/// seconds from the first iteration to the last one made durable.
pub async fn run(
    runs: usize, iterations: u32, grouped: bool, dir: &Path, llm: Arc<dyn LlmClient>, model: &str,
) -> f64 {
    let (tx, rx) = mpsc::channel::<Batch>();
    let path = dir.join("journal.db");
    let thread = std::thread::spawn(move || writer(&path, rx, grouped));
    let t0 = std::time::Instant::now();
    let loops = (0..runs).map(|run| {
        let (tx, llm, model) = (tx.clone(), llm.clone(), model.to_string());
        tokio::spawn(async move {
            let mut notes: Vec<String> = vec![];
            for iteration in 1..=iterations {
                let state = serde_json::json!({"objective": "benchmark", "iteration": iteration,
                                               "last_notes": notes});
                let req = ChatRequest {
                    run_id: format!("r{run}"),
                    iteration,
                    role: LlmRole::Planner,
                    model: model.clone(),
                    messages: vec![
                        ChatMessage::system("Plan the next step.").cached(),
                        ChatMessage::user(state.to_string()),
                    ],
                    json_schema: None,
                    max_output_tokens: Some(4_096),
                    idempotency_key: format!("r{run}#{iteration}#1"),
                    role_call: 1,
                    attempt: 0,
                    rotation: vec![],
                    deadline_ms: None,
                };
                let answer = llm.chat(&req).await.expect("the scripted model answers");
                let plan: Value = serde_json::from_str(&answer.content).unwrap_or_default();
                let doc = plan["tool_calls"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|c| c["name"] == "doc_write")
                    .map(|c| {
                        let s = |k: &str| c["args"][k].as_str().unwrap_or_default().to_string();
                        (s("path"), s("content"))
                    });
                let result = serde_json::json!({"ok": doc.is_some()}).to_string();
                let summary = plan["status"]["progress_summary"]
                    .as_str()
                    .unwrap_or_default();
                notes.push(summary.to_string());
                if notes.len() > 3 {
                    notes.remove(0);
                }
                let (done, durable) = oneshot::channel();
                let entries = Entries {
                    run,
                    iteration,
                    answer: answer.content,
                    doc,
                    result,
                };
                tx.send((entries, done)).expect("the journal writer is up");
                durable.await.expect("the journal writer commits");
            }
        })
    });
    let loops: Vec<_> = loops.collect();
    drop(tx);
    for l in loops {
        l.await.expect("a loop ends");
    }
    let secs = t0.elapsed().as_secs_f64();
    thread
        .join()
        .expect("the writer ends")
        .expect("the journal is written");
    secs
}
