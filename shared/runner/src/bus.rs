//! The task message bus: typed, ordered messages stored in SQLite in the task folder and
//! mirrored to `TASK-MESSAGE-BUS.md`. Several processes (the loop, agents, `longrun bus`) post at
//! once; SQLite's write lock orders them, and the mirror is appended inside the same transaction
//! so the file shows the same order.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

use crate::RunnerError;

pub const BUS_DB: &str = ".longrun-bus.sqlite3";
pub const BUS_MIRROR: &str = "TASK-MESSAGE-BUS.md";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum MessageType {
    Info,
    Observation,
    Question,
    Answer,
    Fact,
    Warning,
    ChildDone,
    Start,
    Stop,
    Crash,
    SupervisorRestart,
    User,
}

impl MessageType {
    pub const ALL: [MessageType; 12] = [
        Self::Info,
        Self::Observation,
        Self::Question,
        Self::Answer,
        Self::Fact,
        Self::Warning,
        Self::ChildDone,
        Self::Start,
        Self::Stop,
        Self::Crash,
        Self::SupervisorRestart,
        Self::User,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Info => "INFO",
            Self::Observation => "OBSERVATION",
            Self::Question => "QUESTION",
            Self::Answer => "ANSWER",
            Self::Fact => "FACT",
            Self::Warning => "WARNING",
            Self::ChildDone => "CHILD_DONE",
            Self::Start => "START",
            Self::Stop => "STOP",
            Self::Crash => "CRASH",
            Self::SupervisorRestart => "SUPERVISOR_RESTART",
            Self::User => "USER",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        let up = s.to_ascii_uppercase();
        Self::ALL.into_iter().find(|t| t.as_str() == up)
    }
}

/// A bus message: the domain's record, as the API shows it too.
pub type Message = longrun_domain::BusMessage;

/// One task's bus.
pub struct Bus {
    conn: Connection,
    mirror: PathBuf,
}

impl Bus {
    pub fn open(task_dir: &Path) -> Result<Self, RunnerError> {
        let conn = Connection::open(task_dir.join(BUS_DB))?;
        conn.busy_timeout(Duration::from_secs(10))?;
        conn.execute_batch(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;
             CREATE TABLE IF NOT EXISTS messages (
                 seq INTEGER PRIMARY KEY AUTOINCREMENT,
                 at TEXT NOT NULL, type TEXT NOT NULL, run_id TEXT NOT NULL, body TEXT NOT NULL);",
        )?;
        Ok(Bus {
            conn,
            mirror: task_dir.join(BUS_MIRROR),
        })
    }

    /// Appends a message; returns its sequence number.
    pub fn post(
        &mut self, kind: MessageType, run_id: &str, body: &str,
    ) -> Result<i64, RunnerError> {
        let at = crate::now_rfc3339();
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        tx.execute(
            "INSERT INTO messages (at, type, run_id, body) VALUES (?1, ?2, ?3, ?4)",
            params![at, kind.as_str(), run_id, body],
        )?;
        let seq = tx.last_insert_rowid();
        let who = if run_id.is_empty() { "-" } else { run_id };
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.mirror)?;
        writeln!(
            f,
            "- **#{seq} {}** {at} `{who}`: {}",
            kind.as_str(),
            body.replace('\n', "\n  ")
        )?;
        tx.commit()?;
        Ok(seq)
    }

    /// The sequence number of the last message (0 on an empty bus).
    pub fn last_seq(&self) -> Result<i64, RunnerError> {
        Ok(self
            .conn
            .query_row("SELECT COALESCE(MAX(seq), 0) FROM messages", [], |r| {
                r.get(0)
            })?)
    }

    /// Messages after `after`, oldest first.
    pub fn poll(&self, after: i64) -> Result<Vec<Message>, RunnerError> {
        let mut st = self.conn.prepare(
            "SELECT seq, at, type, run_id, body FROM messages WHERE seq > ?1 ORDER BY seq",
        )?;
        let rows = st.query_map([after], message_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// At most `limit` messages after `after`, oldest first.
    pub fn poll_page(&self, after: i64, limit: u32) -> Result<Vec<Message>, RunnerError> {
        let mut st = self.conn.prepare(
            "SELECT seq, at, type, run_id, body FROM messages WHERE seq > ?1 ORDER BY seq LIMIT ?2",
        )?;
        let rows = st.query_map(rusqlite::params![after, limit], message_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The last message of the conversation, if any: lifecycle events (START, STOP, CRASH,
    /// CHILD_DONE, SUPERVISOR_RESTART) and the loop's own notes (INFO/WARNING with no run id) are
    /// skipped. A QUESTION there means the task waits on the user.
    pub fn last_said(&self) -> Option<Message> {
        self.conn
            .query_row(
                "SELECT seq, at, type, run_id, body FROM messages
                 WHERE type NOT IN ('START', 'STOP', 'CRASH', 'CHILD_DONE', 'SUPERVISOR_RESTART')
                   AND NOT (run_id = '' AND type IN ('INFO', 'WARNING'))
                 ORDER BY seq DESC LIMIT 1",
                [],
                message_row,
            )
            .optional()
            .ok()
            .flatten()
    }
}

/// Posts without failing the caller: the bus is an audit trail, and a run must not die because
/// it could not be written (the error goes to stderr).
pub fn post_best_effort(task_dir: &Path, kind: MessageType, run_id: &str, body: &str) {
    if let Err(e) = post_cached(task_dir, kind, run_id, body) {
        #[allow(clippy::print_stderr)]
        {
            eprintln!("longrun: cannot post {} to the bus: {e}", kind.as_str());
        }
    }
}

/// The loop posts several messages per restart: one connection per task folder is kept open,
/// since closing the last one checkpoints the WAL (two fsyncs) every time.
fn post_cached(
    task_dir: &Path, kind: MessageType, run_id: &str, body: &str,
) -> Result<i64, RunnerError> {
    static OPEN: std::sync::Mutex<Vec<(PathBuf, Bus)>> = std::sync::Mutex::new(Vec::new());
    let mut open = OPEN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !open.iter().any(|(d, _)| d == task_dir) {
        // A loop touches one task and its runs: a handful of folders at most.
        if open.len() >= 8 {
            open.remove(0);
        }
        open.push((task_dir.to_path_buf(), Bus::open(task_dir)?));
    }
    let bus = open
        .iter_mut()
        .find(|(d, _)| d == task_dir)
        .map(|(_, b)| b)
        .ok_or_else(|| RunnerError::Invalid("bus cache".into()))?;
    bus.post(kind, run_id, body)
}

/// A message from a `SELECT seq, at, type, run_id, body` row.
fn message_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Message> {
    Ok(Message {
        seq: r.get(0)?,
        at: r.get(1)?,
        kind: r.get(2)?,
        run_id: r.get(3)?,
        body: r.get(4)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_come_back_in_order_and_are_mirrored() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut bus = Bus::open(dir.path()).expect("open");

        bus.post(MessageType::Info, "r1", "hello").expect("post");
        bus.post(MessageType::Question, "r1", "why?").expect("post");

        let all = bus.poll(0).expect("poll");
        assert_eq!(
            all.iter().map(|m| m.kind.as_str()).collect::<Vec<_>>(),
            ["INFO", "QUESTION"]
        );
        assert_eq!(bus.poll(all[0].seq).expect("poll").len(), 1);
        let md = std::fs::read_to_string(dir.path().join(BUS_MIRROR)).expect("mirror");
        assert!(md.contains("QUESTION") && md.contains("why?"));
    }
}
