//! A token bucket on tokio's clock, so tests can pause and advance time.

use crate::units::Rate;
use std::time::Duration;
use tokio::time::Instant;

/// Float slack when comparing token counts: refill is computed from
/// elapsed time in `f64`, and 0.2 s × 5/s must count as one whole token.
const EPSILON: f64 = 1e-9;

/// Holds up to `burst` tokens, refilled continuously at `rate`. Starts full.
#[derive(Debug)]
pub(super) struct Bucket {
    per_second: f64,
    burst: f64,
    /// May go below zero in wait mode: each waiting request has reserved
    /// the token it will use, so the next one waits behind it.
    tokens: f64,
    /// When `tokens` was last brought up to date; `None` until first use,
    /// so a bucket built before the runtime starts reads the right clock.
    updated: Option<Instant>,
}

impl Bucket {
    pub(super) fn new(rate: Rate, burst: u32) -> Self {
        Self {
            per_second: rate.per_second(),
            burst: f64::from(burst),
            tokens: f64::from(burst),
            updated: None,
        }
    }

    /// A bucket earning `per_second` tokens (a shared bucket's, in tests).
    #[cfg(test)]
    pub(super) fn earning(per_second: f64, burst: u32) -> Self {
        Self {
            per_second,
            burst: f64::from(burst),
            tokens: f64::from(burst),
            updated: None,
        }
    }

    fn refill(&mut self, now: Instant) {
        if let Some(then) = self.updated {
            let earned = now.saturating_duration_since(then).as_secs_f64() * self.per_second;
            self.tokens = (self.tokens + earned).min(self.burst);
        }
        self.updated = Some(now);
    }

    /// How long until one whole token is there.
    fn shortfall(&self) -> Duration {
        let missing = (1.0 - self.tokens).max(0.0);
        Duration::from_secs_f64(missing / self.per_second)
    }

    /// Takes a token now, or says how long until one is there.
    pub(super) fn take(&mut self, now: Instant) -> Result<(), Duration> {
        self.refill(now);
        if self.tokens + EPSILON >= 1.0 {
            self.tokens -= 1.0;
            Ok(())
        } else {
            Err(self.shortfall())
        }
    }

    /// Reserves the next token if it will be there within `max_wait`, and
    /// says how long to wait for it (zero when it is there now). Otherwise
    /// takes nothing and says how long until a token is free.
    pub(super) fn reserve(
        &mut self,
        now: Instant,
        max_wait: Duration,
    ) -> Result<Duration, Duration> {
        self.refill(now);
        if self.tokens + EPSILON >= 1.0 {
            self.tokens -= 1.0;
            return Ok(Duration::ZERO);
        }
        let wait = self.shortfall();
        if wait <= max_wait {
            self.tokens -= 1.0;
            Ok(wait)
        } else {
            Err(wait)
        }
    }

    /// Gives back a reserved token that was never used (its request was
    /// cancelled while waiting).
    pub(super) fn refund(&mut self, now: Instant) {
        self.refill(now);
        self.tokens = (self.tokens + 1.0).min(self.burst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bucket(rate: &str, burst: u32) -> Bucket {
        Bucket::new(Rate::parse(rate).expect("valid rate"), burst)
    }

    #[test]
    fn burst_then_refill_at_the_rate() {
        let t0 = Instant::now();
        let mut b = bucket("5/s", 5);
        for _ in 0..5 {
            assert_eq!(b.take(t0), Ok(()));
        }
        assert_eq!(b.take(t0), Err(Duration::from_millis(200)));
        assert_eq!(b.take(t0 + Duration::from_millis(200)), Ok(()));
        // A long idle refills up to the burst, not beyond.
        let later = t0 + Duration::from_secs(60);
        for _ in 0..5 {
            assert_eq!(b.take(later), Ok(()));
        }
        assert!(b.take(later).is_err());
    }

    #[test]
    fn reservations_queue_up_to_max_wait() {
        let t0 = Instant::now();
        let mut b = bucket("2/s", 1);
        let max = Duration::from_secs(1);
        assert_eq!(b.reserve(t0, max), Ok(Duration::ZERO));
        assert_eq!(b.reserve(t0, max), Ok(Duration::from_millis(500)));
        assert_eq!(b.reserve(t0, max), Ok(Duration::from_millis(1000)));
        assert_eq!(b.reserve(t0, max), Err(Duration::from_millis(1500)));
        b.refund(t0);
        assert_eq!(b.reserve(t0, max), Ok(Duration::from_millis(1000)));
    }
}
