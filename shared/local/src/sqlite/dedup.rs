//! The queue's dedup window in memory. The `dedup_log` table is the truth and is only appended
//! to and trimmed from its oldest end, so a send writes to the table's last page and an expiry
//! to its first, instead of to a page of its own keyed by the id (a fifth of an iteration's
//! WAL pages). Rebuilt from the table with the rest of the queue's index.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, RandomState};

#[derive(Default)]
pub(crate) struct DedupIndex {
    hasher: RandomState,
    /// Hash of an id → (rowid, expires_at) of its newest row.
    live: HashMap<u64, (i64, i64)>,
    /// Every row of the table, oldest first: (rowid, expires_at, hash of its id).
    rows: VecDeque<(i64, i64, u64)>,
}

impl DedupIndex {
    /// The row that may hold `id` live at `now`. Ids are kept as hashes, so the caller confirms
    /// the id on that row: a collision must not drop a message.
    pub fn candidate(&self, id: &str, now: i64) -> Option<i64> {
        let (rowid, expires_at) = self.live.get(&self.hasher.hash_one(id))?;
        (*expires_at > now).then_some(*rowid)
    }

    /// A row appended to the table (rowids only grow while rows are trimmed from the front).
    pub fn insert(&mut self, id: &str, rowid: i64, expires_at: i64) {
        let hash = self.hasher.hash_one(id);
        self.live.insert(hash, (rowid, expires_at));
        self.rows.push_back((rowid, expires_at, hash));
    }

    /// Forgets the oldest rows expired at `now`; returns the newest rowid forgotten: the rows
    /// up to it may be deleted.
    pub fn expire(&mut self, now: i64) -> Option<i64> {
        let mut last = None;
        while let Some(&(rowid, expires_at, hash)) = self.rows.front() {
            if expires_at > now {
                break;
            }
            self.rows.pop_front();
            if self.live.get(&hash).is_some_and(|(r, _)| *r == rowid) {
                self.live.remove(&hash);
            }
            last = Some(rowid);
        }
        last
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_live_until_it_expires_and_then_its_rows_may_go() {
        // Arrange
        let mut d = DedupIndex::default();
        d.insert("run-1#1", 1, 100);
        d.insert("run-1#2", 2, 150);

        // Act
        let before = (d.candidate("run-1#1", 99), d.candidate("run-1#3", 99));
        let trimmed = d.expire(120);

        // Assert
        assert_eq!(before, (Some(1), None));
        assert_eq!(trimmed, Some(1));
        assert_eq!(d.candidate("run-1#1", 99), None, "forgotten once expired");
        assert_eq!(d.candidate("run-1#2", 120), Some(2));
        assert_eq!(d.expire(120), None, "nothing more is due");
    }

    #[test]
    fn an_id_sent_again_after_its_window_is_kept_by_its_newest_row() {
        // Arrange: the first row expired but is not trimmed yet when the id comes again.
        let mut d = DedupIndex::default();
        d.insert("a", 1, 100);
        d.insert("a", 2, 300);

        // Act
        let trimmed = d.expire(200);

        // Assert: trimming the old row keeps the new one live.
        assert_eq!(trimmed, Some(1));
        assert_eq!(d.candidate("a", 200), Some(2));
    }
}
