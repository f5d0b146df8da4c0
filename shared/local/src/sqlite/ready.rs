//! The in-memory index of the SQLite queue's group heads, by which a receive picks fairly in
//! O(batch) instead of ranking every ready run. It owns no state of its own: the `queue` table
//! is the truth, the index is rebuilt from it whenever it may differ (start-up, a rolled-back
//! group), and it is only read or changed under the connection's lock, in step with the rows.

use std::collections::{BTreeSet, HashMap};

/// The first live (not dead-lettered) message of a run: the only one a receive may deliver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Head {
    pub seq: i64,
    pub group: String,
    /// Fair-share key: the run's owner (or the run itself when it is not stored here).
    pub key: String,
    pub visible_at: i64,
    pub receive_count: u32,
}

/// Where a head is: waiting for its `visible_at` (delayed or in flight), or ready to deliver.
#[derive(Default)]
pub(crate) struct ReadyIndex {
    /// The database generation the index was built at; `None` once it may have drifted.
    built_at: Option<u64>,
    heads: HashMap<String, Head>,
    groups: HashMap<i64, String>,
    /// Heads not yet promoted, by (visible_at, seq). A receive promotes the due ones first, so a
    /// head whose time has come is judged (ready or dead-lettered) at the receive, as before.
    waiting: BTreeSet<(i64, i64)>,
    /// Ready heads per fair-share key, oldest first.
    ready: HashMap<String, BTreeSet<i64>>,
    /// When each key was last served (the `fair` table); a key never served counts as 0.
    served: HashMap<String, i64>,
    /// Keys with a ready head, by (last served, oldest ready seq): the first turn's order.
    turns: BTreeSet<(i64, i64, String)>,
    /// The dedup ids sent within the window.
    pub dedup: super::dedup::DedupIndex,
}

impl ReadyIndex {
    pub fn is_current(&self, generation: u64) -> bool {
        self.built_at == Some(generation)
    }

    /// Forgets everything; the next use rebuilds from the table.
    pub fn invalidate(&mut self) {
        self.built_at = None;
    }

    /// Starts over from the table's heads and the `fair` table.
    pub fn reset(
        &mut self, generation: u64, heads: impl IntoIterator<Item = Head>,
        served: impl IntoIterator<Item = (String, i64)>,
    ) {
        *self = ReadyIndex {
            built_at: Some(generation),
            served: served.into_iter().collect(),
            ..ReadyIndex::default()
        };
        for head in heads {
            self.insert(head);
        }
    }

    pub fn has_head(&self, group: &str) -> bool {
        self.heads.contains_key(group)
    }

    /// A new head: the group had no live message (a send to an empty group, or the next message
    /// once the head was acknowledged or dead-lettered).
    pub fn insert(&mut self, head: Head) {
        self.waiting.insert((head.visible_at, head.seq));
        self.groups.insert(head.seq, head.group.clone());
        self.heads.insert(head.group.clone(), head);
    }

    /// Drops the head with this seq (acknowledged or dead-lettered); returns it.
    pub fn remove(&mut self, seq: i64) -> Option<Head> {
        let group = self.groups.remove(&seq)?;
        let head = self.heads.remove(&group)?;
        self.detach(&head);
        Some(head)
    }

    /// A head's visibility moved (extend): it waits for its new time.
    pub fn set_visible_at(&mut self, seq: i64, at: i64) {
        let Some(head) = self.head_of(seq) else {
            return;
        };
        self.detach(&head);
        self.waiting.insert((at, seq));
        if let Some(h) = self.heads.get_mut(&head.group) {
            h.visible_at = at;
        }
    }

    /// Whether message `seq`, received `receive_count` times, heads its run still.
    pub fn in_flight(&self, seq: i64, receive_count: u32) -> bool {
        self.groups
            .get(&seq)
            .and_then(|g| self.heads.get(g))
            .is_some_and(|h| h.receive_count == receive_count)
    }

    /// Whether a receive at `now` would find something to do (deliver or dead-letter).
    pub fn any_due(&self, now: i64) -> bool {
        !self.turns.is_empty() || self.waiting.first().is_some_and(|(at, _)| *at <= now)
    }

    /// Promotes the heads due at `now`: those received `max_receives` times already leave the
    /// index and are returned, to be dead-lettered (their group's next message is then inserted
    /// by the caller and promoted by the next call); the others become ready.
    pub fn promote(&mut self, now: i64, max_receives: u32) -> Vec<Head> {
        let mut dead = vec![];
        while let Some(&(at, seq)) = self.waiting.first() {
            if at > now {
                break;
            }
            self.waiting.pop_first();
            let Some(head) = self.head_of(seq) else {
                continue;
            };
            if head.receive_count >= max_receives {
                self.remove(seq);
                dead.push(head);
            } else {
                let key = head.key.clone();
                self.unlist(&key);
                self.ready.entry(key.clone()).or_default().insert(seq);
                self.relist(&key);
            }
        }
        dead
    }

    /// Takes up to `max` ready heads in fair order and marks them delivered at `now` (in flight
    /// until `visible_at`, received once more, their keys served now). Returns them as they
    /// are after delivery.
    pub fn take(&mut self, max: usize, now: i64, visible_at: i64) -> Vec<Head> {
        let picked = self.pick(max);
        let mut out = Vec::with_capacity(picked.len());
        for seq in picked {
            let Some(group) = self.groups.get(&seq).cloned() else {
                continue;
            };
            let Some(head) = self.heads.get(&group).cloned() else {
                continue;
            };
            self.detach(&head);
            self.unlist(&head.key);
            self.served.insert(head.key.clone(), now);
            self.relist(&head.key);
            self.waiting.insert((visible_at, seq));
            if let Some(h) = self.heads.get_mut(&group) {
                h.visible_at = visible_at;
                h.receive_count += 1;
                out.push(h.clone());
            }
        }
        out
    }

    /// Fair share, as the ranking over the whole queue had it: users take turns (each one's
    /// oldest ready run, then each one's second, …); within a turn, the user served longest ago
    /// first, then the older message. The first turn comes straight off `turns`; a second turn
    /// is only reached when fewer than `max` users have anything ready, so the later turns sort
    /// fewer than `max` entries each.
    fn pick(&self, max: usize) -> Vec<i64> {
        let mut out: Vec<i64> = self.turns.iter().take(max).map(|t| t.1).collect();
        let mut rest: Vec<(i64, std::collections::btree_set::Iter<'_, i64>)> = vec![];
        if out.len() < max {
            for (served, _, key) in &self.turns {
                if let Some(ready) = self.ready.get(key) {
                    let mut it = ready.iter();
                    it.next();
                    rest.push((*served, it));
                }
            }
        }
        while out.len() < max && !rest.is_empty() {
            let mut turn: Vec<(i64, i64)> = Vec::with_capacity(rest.len());
            rest.retain_mut(|(served, it)| match it.next() {
                Some(seq) => {
                    turn.push((*served, *seq));
                    true
                }
                None => false,
            });
            turn.sort_unstable();
            let room = max - out.len();
            out.extend(turn.into_iter().take(room).map(|(_, seq)| seq));
        }
        out
    }

    /// Takes a head out of `waiting` or `ready`, wherever it is.
    /// The head whose message is `seq`, if that message heads its group.
    fn head_of(&self, seq: i64) -> Option<Head> {
        self.groups
            .get(&seq)
            .and_then(|g| self.heads.get(g))
            .cloned()
    }

    fn detach(&mut self, head: &Head) {
        if self.waiting.remove(&(head.visible_at, head.seq)) {
            return;
        }
        let listed = self
            .ready
            .get(&head.key)
            .is_some_and(|r| r.contains(&head.seq));
        if listed {
            self.unlist(&head.key);
            if let Some(r) = self.ready.get_mut(&head.key) {
                r.remove(&head.seq);
                if r.is_empty() {
                    self.ready.remove(&head.key);
                }
            }
            self.relist(&head.key);
        }
    }

    fn turn_of(&self, key: &str) -> Option<(i64, i64, String)> {
        let first = *self.ready.get(key)?.first()?;
        let served = self.served.get(key).copied().unwrap_or(0);
        Some((served, first, key.to_string()))
    }

    /// Call before changing a key's ready set or served time, and `relist` after.
    fn unlist(&mut self, key: &str) {
        if let Some(t) = self.turn_of(key) {
            self.turns.remove(&t);
        }
    }

    fn relist(&mut self, key: &str) {
        if let Some(t) = self.turn_of(key) {
            self.turns.insert(t);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn head(seq: i64, group: &str, key: &str) -> Head {
        Head {
            seq,
            group: group.into(),
            key: key.into(),
            visible_at: 0,
            receive_count: 0,
        }
    }

    fn groups(heads: &[Head]) -> Vec<&str> {
        heads.iter().map(|h| h.group.as_str()).collect()
    }

    #[test]
    fn later_turns_order_users_by_when_they_were_served_then_by_age() {
        // Arrange: a served at 5, b at 3, c never; a's runs are the oldest.
        let mut idx = ReadyIndex::default();
        idx.reset(
            0,
            [
                head(1, "a1", "a"),
                head(2, "a2", "a"),
                head(3, "b1", "b"),
                head(4, "b2", "b"),
                head(5, "c1", "c"),
                head(6, "a3", "a"),
            ],
            [("a".to_string(), 5), ("b".to_string(), 3)],
        );
        assert!(idx.promote(10, 10).is_empty());

        // Act
        let got = idx.take(10, 10, 100);

        // Assert: turn 1 c (never), b, a; turn 2 b, a; turn 3 a.
        assert_eq!(groups(&got), ["c1", "b1", "a1", "b2", "a2", "a3"]);
        assert!(
            got.iter()
                .all(|h| h.receive_count == 1 && h.visible_at == 100)
        );
        assert!(!idx.any_due(99));
        assert!(idx.any_due(100));
    }

    #[test]
    fn a_head_received_too_often_leaves_the_index_when_it_comes_due() {
        // Arrange
        let mut idx = ReadyIndex::default();
        let mut worn = head(1, "r1", "a");
        worn.receive_count = 3;
        worn.visible_at = 50;
        idx.reset(0, [worn.clone()], []);

        // Act
        let early = idx.promote(49, 3);
        let due = idx.promote(50, 3);

        // Assert
        assert!(early.is_empty());
        assert_eq!(due, [worn]);
        assert!(!idx.has_head("r1"));
        assert!(!idx.any_due(1_000));
    }

    #[test]
    fn an_extended_ready_head_waits_again() {
        // Arrange
        let mut idx = ReadyIndex::default();
        idx.reset(0, [head(1, "r1", "a"), head(2, "r2", "a")], []);
        idx.promote(0, 10);

        // Act
        idx.set_visible_at(1, 500);

        // Assert
        assert_eq!(groups(&idx.take(10, 0, 1_000)), ["r2"]);
        assert!(idx.take(10, 499, 1_000).is_empty());
        idx.promote(500, 10);
        assert_eq!(groups(&idx.take(10, 500, 600)), ["r1"]);
    }
}
