//! Per-model capacity shared by every run of a deployment: concurrent calls, requests per
//! minute and tokens per minute, lowered for a while when the provider answers 429 (halved,
//! then raised again step by step: AIMD). The core (`Limiter::try_acquire`) is pure over a
//! time in ms so tests drive it with a manual clock; `Limiter::acquire` waits on it.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;

use longrun_ports::Clock;
use tokio::sync::Notify;

const WINDOW_MS: i64 = 60_000;
/// The lowest share of its configured rate a throttled model is cut to.
const MIN_FACTOR: f64 = 0.1;
/// Share of the configured rate given back per successful call after a cut.
const RECOVERY_STEP: f64 = 0.02;

/// One model's limits; `None` is unlimited.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ModelLimit {
    pub concurrency: Option<u32>,
    pub rpm: Option<u32>,
    pub tpm: Option<u64>,
}

/// Limits by `provider:model`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModelLimits(pub BTreeMap<String, ModelLimit>);

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("model limit `{spec}`: {reason} (expected MODEL=concurrency:50,rpm:500,tpm:200000)")]
pub struct LimitParseError {
    spec: String,
    reason: String,
}

impl ModelLimits {
    /// `MODEL=concurrency:50,rpm:500,tpm:200000`, several joined by `;` (the env form) or given
    /// one by one (the flag form).
    pub fn parse<'a>(specs: impl IntoIterator<Item = &'a str>) -> Result<Self, LimitParseError> {
        let mut out = BTreeMap::new();
        for spec in specs
            .into_iter()
            .flat_map(|s| s.split(';'))
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            let err = |reason: &str| LimitParseError {
                spec: spec.to_string(),
                reason: reason.to_string(),
            };
            let (model, terms) = spec.rsplit_once('=').ok_or_else(|| err("no `=`"))?;
            if !model.contains(':') {
                return Err(err("the model must be provider:model"));
            }
            let mut limit = ModelLimit::default();
            for term in terms.split(',').map(str::trim) {
                let (key, value) = term
                    .split_once(':')
                    .ok_or_else(|| err("a term needs key:value"))?;
                let n: u64 = value
                    .trim()
                    .parse()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| err("values must be whole numbers above 0"))?;
                match key.trim() {
                    "concurrency" => limit.concurrency = Some(n.min(u32::MAX as u64) as u32),
                    "rpm" => limit.rpm = Some(n.min(u32::MAX as u64) as u32),
                    "tpm" => limit.tpm = Some(n),
                    _ => return Err(err("keys are concurrency, rpm and tpm")),
                }
            }
            out.insert(model.trim().to_string(), limit);
        }
        Ok(ModelLimits(out))
    }
}

/// A call admitted by the limiter; give it back with [`Limiter::release`].
#[derive(Debug)]
pub struct Permit {
    at: i64,
    estimate: u64,
}

#[derive(Debug)]
struct State {
    in_flight: u32,
    /// Start times of the calls of the last minute.
    requests: VecDeque<i64>,
    /// (time, tokens) of the calls of the last minute: the estimate, corrected on release.
    tokens: VecDeque<(i64, u64)>,
    /// Share of the configured limits currently allowed (1.0 unless throttled).
    factor: f64,
    /// No call starts before this (a provider's Retry-After).
    paused_until: i64,
}

/// One model's limiter.
#[derive(Debug)]
pub struct Limiter {
    limit: ModelLimit,
    state: Mutex<State>,
    freed: Notify,
}

impl Limiter {
    pub fn new(limit: ModelLimit) -> Self {
        Limiter {
            limit,
            state: Mutex::new(State {
                in_flight: 0,
                requests: VecDeque::new(),
                tokens: VecDeque::new(),
                factor: 1.0,
                paused_until: 0,
            }),
            freed: Notify::new(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Admits a call of about `estimate` tokens at `now`, or says how long to wait before
    /// asking again (0: until a call in flight ends).
    pub fn try_acquire(&self, now: i64, estimate: u64) -> Result<Permit, u64> {
        let mut s = self.state();
        while s.requests.front().is_some_and(|t| *t <= now - WINDOW_MS) {
            s.requests.pop_front();
        }
        while s.tokens.front().is_some_and(|(t, _)| *t <= now - WINDOW_MS) {
            s.tokens.pop_front();
        }
        if s.paused_until > now {
            return Err((s.paused_until - now) as u64);
        }
        let scaled = |n: u64| ((n as f64 * s.factor).floor() as u64).max(1);
        if let Some(c) = self.limit.concurrency
            && u64::from(s.in_flight) >= scaled(c.into())
        {
            return Err(0);
        }
        if let Some(rpm) = self.limit.rpm
            && s.requests.len() as u64 >= scaled(rpm.into())
        {
            let oldest = s.requests.front().copied().unwrap_or(now);
            return Err((oldest + WINDOW_MS - now).max(1) as u64);
        }
        if let Some(tpm) = self.limit.tpm {
            let cap = scaled(tpm);
            let used: u64 = s.tokens.iter().map(|(_, n)| n).sum();
            // A call larger than the whole budget still goes, alone, rather than never.
            if used > 0 && used + estimate.min(cap) > cap {
                let mut left = used;
                let mut wait = 1;
                for (t, n) in &s.tokens {
                    left -= n;
                    wait = (t + WINDOW_MS - now).max(1);
                    if left + estimate.min(cap) <= cap {
                        break;
                    }
                }
                return Err(wait as u64);
            }
        }
        s.in_flight += 1;
        s.requests.push_back(now);
        s.tokens.push_back((now, estimate));
        Ok(Permit { at: now, estimate })
    }

    /// Ends a call at `now`: its slot is free again, its tokens are counted as really used,
    /// and it counts against the minute from its end, not its start — a provider counts a
    /// request when it arrives, which may be later than when it was admitted.
    pub fn release(&self, permit: Permit, now: i64, used_tokens: Option<u64>, ok: bool) {
        {
            let mut s = self.state();
            s.in_flight = s.in_flight.saturating_sub(1);
            if let Some(i) = s.requests.iter().position(|t| *t == permit.at) {
                s.requests.remove(i);
                s.requests.push_back(now.max(permit.at));
            }
            if let Some(i) = s
                .tokens
                .iter()
                .position(|(t, n)| *t == permit.at && *n == permit.estimate)
            {
                s.tokens.remove(i);
                let used = used_tokens.unwrap_or(permit.estimate);
                s.tokens.push_back((now.max(permit.at), used));
            }
            if ok {
                s.factor = (s.factor + RECOVERY_STEP).min(1.0);
            }
        }
        self.freed.notify_waiters();
    }

    /// The provider said 429: no call for `retry_after_ms`, and the model's rate is halved,
    /// to be won back call by call.
    pub fn throttled(&self, now: i64, retry_after_ms: Option<u64>) {
        let mut s = self.state();
        s.factor = (s.factor / 2.0).max(MIN_FACTOR);
        let until = now + retry_after_ms.unwrap_or(1_000) as i64;
        s.paused_until = s.paused_until.max(until);
    }

    /// Share of the configured limits allowed now (1.0 when not throttled).
    pub fn factor(&self) -> f64 {
        self.state().factor
    }

    /// Waits for capacity; `Err(wait_ms)` when it would not come before `deadline_ms`.
    pub async fn acquire(
        &self, clock: &dyn Clock, estimate: u64, deadline_ms: Option<i64>,
    ) -> Result<Permit, u64> {
        loop {
            let freed = self.freed.notified();
            let now = clock.now_ms();
            let wait = match self.try_acquire(now, estimate) {
                Ok(p) => return Ok(p),
                Err(wait) => wait,
            };
            if let Some(deadline) = deadline_ms
                && now + wait as i64 > deadline
            {
                return Err(wait.max(1_000));
            }
            // Woken by a freed slot, or after the window moves; polled at least every second
            // so a deadline is noticed.
            let nap = if wait == 0 { 1_000 } else { wait.min(1_000) };
            tokio::select! {
                _ = freed => {}
                _ = tokio::time::sleep(std::time::Duration::from_millis(nap)) => {}
            }
        }
    }
}

/// A call's size before it is made: about 4 characters a token, plus the answer's cap.
pub fn estimate_tokens(chars: usize, max_output: Option<u32>) -> u64 {
    (chars / 4) as u64 + u64::from(max_output.unwrap_or(1_024))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(concurrency: Option<u32>, rpm: Option<u32>, tpm: Option<u64>) -> Limiter {
        Limiter::new(ModelLimit {
            concurrency,
            rpm,
            tpm,
        })
    }

    #[test]
    fn limits_parse_from_the_flag_and_env_forms_and_bad_ones_are_named() {
        let l = ModelLimits::parse([
            "openai:gpt-4.1=concurrency:50,rpm:500,tpm:200000;script:a.json=rpm:10",
        ])
        .unwrap();
        assert_eq!(
            l.0["openai:gpt-4.1"],
            ModelLimit {
                concurrency: Some(50),
                rpm: Some(500),
                tpm: Some(200_000)
            }
        );
        assert_eq!(l.0["script:a.json"].rpm, Some(10));
        let err = ModelLimits::parse(["openai:x=rpm:0"]).unwrap_err();
        assert!(err.to_string().contains("openai:x=rpm:0"), "{err}");
        assert!(ModelLimits::parse(["openai:x=burst:3"]).is_err());
        assert!(ModelLimits::parse(["gpt=rpm:3"]).is_err());
    }

    #[test]
    fn concurrent_callers_never_exceed_the_concurrency_limit() {
        // Arrange
        let l = limit(Some(3), None, None);

        // Act: ten callers at once, then one call ends.
        let admitted: Vec<Permit> = (0..10).filter_map(|_| l.try_acquire(0, 1).ok()).collect();
        let refused = l.try_acquire(0, 1);
        let mut admitted = admitted.into_iter();
        l.release(admitted.next().unwrap(), 0, Some(1), true);

        // Assert
        assert_eq!(admitted.len() + 1, 3);
        assert_eq!(refused.unwrap_err(), 0, "waits for a slot, not for time");
        assert!(l.try_acquire(0, 1).is_ok(), "a freed slot is taken again");
        assert!(l.try_acquire(0, 1).is_err());
    }

    #[test]
    fn requests_per_minute_hold_over_any_sixty_seconds() {
        // Arrange: 10 rpm, callers arriving every 100 ms for three minutes.
        let l = limit(None, Some(10), None);
        let mut starts = vec![];

        // Act
        for now in (0..180_000).step_by(100) {
            if let Ok(p) = l.try_acquire(now, 1) {
                starts.push(now);
                l.release(p, now, Some(1), true);
            }
        }

        // Assert: never more than 10 in a window, and the limit is used.
        for (i, t) in starts.iter().enumerate() {
            let in_window = starts[i..]
                .iter()
                .take_while(|s| **s < t + WINDOW_MS)
                .count();
            assert!(in_window <= 10, "{in_window} calls in the minute from {t}");
        }
        assert_eq!(starts.len(), 30);
    }

    #[test]
    fn tokens_per_minute_count_the_real_usage_once_a_call_ends() {
        // Arrange: 1,000 tokens a minute; a call estimated at 800 used only 100.
        let l = limit(None, None, Some(1_000));
        let p = l.try_acquire(0, 800).unwrap();
        assert!(
            l.try_acquire(0, 800).is_err(),
            "the estimate holds the budget"
        );

        // Act
        l.release(p, 0, Some(100), true);

        // Assert
        assert!(l.try_acquire(1, 800).is_ok(), "the correction frees it");
        let wait = l.try_acquire(2, 800).unwrap_err();
        assert_eq!(
            wait, 59_999,
            "until the 800 of the call at 1 ms leave the window"
        );
    }

    #[test]
    fn a_request_counts_against_the_minute_from_when_it_ended() {
        // Arrange: 2 rpm; two calls admitted at 0 that took 5 s.
        let l = limit(None, Some(2), None);
        let a = l.try_acquire(0, 1).unwrap();
        let b = l.try_acquire(0, 1).unwrap();

        // Act
        l.release(a, 5_000, Some(1), true);
        l.release(b, 5_000, Some(1), true);

        // Assert: not at 60 s after admission, but 60 s after they ended.
        assert!(l.try_acquire(60_000, 1).is_err());
        assert!(l.try_acquire(65_000, 1).is_ok());
    }

    #[test]
    fn a_429_with_retry_after_pauses_the_model_and_halves_its_rate() {
        // Arrange
        let l = limit(Some(8), Some(100), None);

        // Act
        l.throttled(1_000, Some(5_000));

        // Assert
        assert_eq!(l.try_acquire(2_000, 1).unwrap_err(), 4_000);
        assert_eq!(l.factor(), 0.5);
        let admitted = (0..8).filter_map(|_| l.try_acquire(6_000, 1).ok()).count();
        assert_eq!(admitted, 4, "half the concurrency while throttled");
    }

    #[test]
    fn a_throttled_rate_is_won_back_call_by_call() {
        let l = limit(Some(8), None, None);
        l.throttled(0, Some(0));
        for i in 0..100 {
            let p = l.try_acquire(i, 1).unwrap();
            l.release(p, i, Some(1), true);
        }
        assert_eq!(l.factor(), 1.0);
    }
}
