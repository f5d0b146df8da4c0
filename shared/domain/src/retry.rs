//! The one retry policy: how long to wait before trying again, and how often. Every loop that
//! retries — model calls, webhook deliveries, web search, agent restarts, step messages — asks
//! a `Backoff` for its waits, so the shapes cannot drift apart. Pure: the caller sleeps, and
//! supplies the randomness for jitter.

/// Doubling waits from `first_ms` up to `max_ms`, for at most `max_retries` retries (`None`:
/// no limit, the caller stops on something else, such as a time budget), each wait spread by
/// ±`jitter` of itself so many clients failing together do not retry together.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Backoff {
    pub first_ms: u64,
    pub max_ms: u64,
    pub max_retries: Option<u32>,
    /// A fraction of the wait, 0 to 1.
    pub jitter: f64,
}

impl Backoff {
    /// Model providers: 1 s, 2 s, 4 s (±20 %), three retries; a `Retry-After` longer than that
    /// wins, up to 30 s.
    pub const PROVIDER: Backoff = Backoff {
        first_ms: 1_000,
        max_ms: 30_000,
        max_retries: Some(3),
        jitter: 0.2,
    };

    /// Scripted models simulate failures; waiting seconds would only slow tests and demos.
    pub const SIMULATED: Backoff = Backoff {
        first_ms: 5,
        max_ms: 50,
        max_retries: Some(3),
        jitter: 0.2,
    };

    /// Webhook deliveries: 1 s doubling to 5 min, 12 attempts in all (11 retries), about 18
    /// minutes of waiting: enough for a receiver restart or a short outage, short enough that
    /// the log says "given up" the same hour.
    pub const WEBHOOK: Backoff = Backoff {
        first_ms: 1_000,
        max_ms: 300_000,
        max_retries: Some(11),
        jitter: 0.0,
    };

    /// The web search provider: 0.5 s doubling to 8 s, bounded by the search's time budget.
    pub const SEARCH: Backoff = Backoff {
        first_ms: 500,
        max_ms: 8_000,
        max_retries: None,
        jitter: 0.0,
    };

    /// A step the engine could not finish for a passing reason (a store or queue busy, a
    /// model's transient error) comes back after 1 s instead of the whole visibility timeout;
    /// the queue's receive count bounds how often.
    pub const STEP: Backoff = Backoff {
        first_ms: 1_000,
        max_ms: 1_000,
        max_retries: None,
        jitter: 0.0,
    };

    /// Doubling from `first_ms` to at most `max_ms`, without limit or jitter.
    pub const fn doubling(first_ms: u64, max_ms: u64) -> Backoff {
        Backoff {
            first_ms,
            max_ms,
            max_retries: None,
            jitter: 0.0,
        }
    }

    /// Whether retry number `retry` (0 = the first retry) may still be made.
    pub fn allows(&self, retry: u32) -> bool {
        self.max_retries.is_none_or(|max| retry < max)
    }

    /// The wait before retry number `retry` (0 = the first), without jitter.
    pub fn delay_ms(&self, retry: u32) -> u64 {
        self.first_ms
            .saturating_mul(1_u64 << retry.min(40))
            .min(self.max_ms.max(self.first_ms))
    }

    /// `delay_ms`, spread by the jitter: `unit` is a random number in [-1, 1].
    pub fn jittered_ms(&self, retry: u32, unit: f64) -> u64 {
        let d = self.delay_ms(retry) as f64;
        let spread = d * self.jitter * unit.clamp(-1.0, 1.0);
        (d + spread).max(0.0) as u64
    }

    /// The wait before retry `retry` when the other side asked for `retry_after_ms`: the
    /// longer of the two, still at most `max_ms`.
    pub fn honouring(&self, retry: u32, unit: f64, retry_after_ms: Option<u64>) -> u64 {
        self.jittered_ms(retry, unit)
            .max(retry_after_ms.unwrap_or(0))
            .min(self.max_ms.max(self.first_ms))
    }

    /// The waits, one per retry allowed, without jitter (restate's `RetryIter`): a loop
    /// retries while it yields.
    pub fn iter(&self) -> RetryIter {
        RetryIter {
            policy: *self,
            retry: 0,
        }
    }
}

/// The waits of a `Backoff`, in order; ends when no retry is left.
#[derive(Clone, Debug)]
pub struct RetryIter {
    policy: Backoff,
    retry: u32,
}

impl RetryIter {
    /// How many retries were handed out so far.
    pub fn retries(&self) -> u32 {
        self.retry
    }
}

impl Iterator for RetryIter {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        if !self.policy.allows(self.retry) {
            return None;
        }
        let d = self.policy.delay_ms(self.retry);
        self.retry = self.retry.saturating_add(1);
        Some(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_waits_double_from_one_second_with_bounded_jitter() {
        let p = Backoff::PROVIDER;
        for (retry, base) in [(0, 1000u64), (1, 2000), (2, 4000)] {
            assert_eq!(p.delay_ms(retry), base);
            assert_eq!(p.jittered_ms(retry, -1.0), base * 8 / 10);
            assert_eq!(p.jittered_ms(retry, 1.0), base * 12 / 10);
        }
    }

    #[test]
    fn a_longer_retry_after_wins_up_to_the_cap() {
        let p = Backoff::PROVIDER;
        assert_eq!(p.honouring(0, 0.0, Some(7_000)), 7_000);
        assert_eq!(p.honouring(0, 0.0, Some(999_000)), 30_000);
        assert_eq!(p.honouring(1, 0.0, Some(10)), 2_000);
    }

    #[test]
    fn the_iterator_yields_one_wait_per_retry_and_then_ends() {
        let waits: Vec<u64> = Backoff::PROVIDER.iter().collect();
        assert_eq!(waits, vec![1_000, 2_000, 4_000]);
        let webhook: Vec<u64> = Backoff::WEBHOOK.iter().collect();
        assert_eq!(webhook.len(), 11);
        assert_eq!(webhook.last(), Some(&300_000));
        // About 18 minutes of waiting in all, plus the attempts' own time.
        assert_eq!(webhook.iter().sum::<u64>() / 60_000, 18);
    }

    #[test]
    fn an_unlimited_backoff_stays_at_its_cap() {
        let mut it = Backoff::SEARCH.iter();
        let waits: Vec<u64> = it.by_ref().take(7).collect();
        assert_eq!(waits, vec![500, 1_000, 2_000, 4_000, 8_000, 8_000, 8_000]);
        assert_eq!(it.retries(), 7);
        assert_eq!(Backoff::SEARCH.delay_ms(u32::MAX), 8_000);
    }

    #[test]
    fn a_cap_below_the_first_wait_keeps_the_first_wait() {
        assert_eq!(Backoff::doubling(90_000, 60_000).delay_ms(3), 90_000);
    }
}
