//! Durations and rates as users write them in the TOML: `"250ms"`, `"2s"`,
//! `"5m"`, `"1.5h"`; `"5/s"`, `"100/min"`, `"10/30s"`.
//!
//! Parsed once at load time into [`Duration`] and [`Rate`], so the layers
//! that use them (`timeout`, `rate_limit`) never see a string on the hot path.
//! Errors ([`BadUnit`]) say what was wrong and what is expected; the caller
//! puts them at their key (`rules[1].rate: ...`).

use std::fmt;
use std::time::Duration;

/// The units a duration may carry, longest suffix first so `ms` is not read
/// as `m` followed by junk.
const DURATION_UNITS: &[(&str, f64)] = &[
    ("ms", 0.001),
    ("min", 60.0),
    ("s", 1.0),
    ("m", 60.0),
    ("h", 3600.0),
];

/// What a duration error says is expected.
const DURATION_HELP: &str =
    "expected a number and a unit (ms, s, m or h), like \"250ms\" or \"2s\"";

/// What a rate error says is expected.
const RATE_HELP: &str = "expected a count per unit, like \"5/s\", \"100/min\" or \"10/30s\"";

/// The longest duration accepted: a century, far past any sane deadline,
/// and small enough that adding it to an `Instant` cannot overflow.
const MAX_DURATION_SECS: f64 = 100.0 * 365.0 * 86_400.0;

/// Why a duration or a rate cannot be read: each variant holds the text as
/// written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadUnit {
    #[error("bad duration {0:?}: {DURATION_HELP}")]
    Duration(String),
    #[error("bad duration {0:?}: longer than a century")]
    DurationTooLong(String),
    #[error("bad rate {0:?}: {RATE_HELP}")]
    Rate(String),
    #[error("bad rate {0:?}: count too large")]
    CountTooLarge(String),
    #[error("bad rate {0:?}: must be more than zero")]
    RateZero(String),
}

/// Parses `"250ms"`, `"2s"`, `"1.5m"`, `"1h"`. Zero is allowed; callers that
/// need a positive duration check it themselves.
pub fn parse_duration(text: &str) -> Result<Duration, BadUnit> {
    let trimmed = text.trim();
    let bad = || BadUnit::Duration(text.to_owned());
    let (number, scale) = DURATION_UNITS
        .iter()
        .find_map(|(unit, scale)| trimmed.strip_suffix(unit).map(|n| (n.trim_end(), *scale)))
        .ok_or_else(bad)?;
    let value = parse_number(number).ok_or_else(bad)?;
    let secs = value * scale;
    if secs > MAX_DURATION_SECS {
        return Err(BadUnit::DurationTooLong(text.to_owned()));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// A non-negative decimal without sign or exponent: `5`, `0.25`, `1.5`.
fn parse_number(text: &str) -> Option<f64> {
    let ok = !text.is_empty()
        && text.chars().all(|c| c.is_ascii_digit() || c == '.')
        && text.chars().filter(|&c| c == '.').count() <= 1
        && text.chars().any(|c| c.is_ascii_digit());
    if ok {
        text.parse().ok()
    } else {
        None
    }
}

/// `count` events per `per`: `"5/s"` is 5 per second, `"10/30s"` is 10 per
/// 30 seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    count: u32,
    per: Duration,
}

// === impl Rate ===

impl Rate {
    /// A rate of `count` per `per`; `None` when either is zero.
    pub fn new(count: u32, per: Duration) -> Option<Self> {
        (count > 0 && !per.is_zero()).then_some(Self { count, per })
    }

    /// Parses `"5/s"`, `"100/min"`, `"1000/h"`, `"10/30s"`.
    pub fn parse(text: &str) -> Result<Self, BadUnit> {
        let bad = || BadUnit::Rate(text.to_owned());
        let (count, per) = text.split_once('/').ok_or_else(bad)?;
        let count: u32 = match count.trim() {
            c if !c.is_empty() && c.chars().all(|ch| ch.is_ascii_digit()) => c
                .parse()
                .map_err(|_| BadUnit::CountTooLarge(text.to_owned()))?,
            _ => return Err(bad()),
        };
        let per = match per.trim() {
            "s" | "sec" | "second" => Duration::from_secs(1),
            "m" | "min" | "minute" => Duration::from_secs(60),
            "h" | "hour" => Duration::from_secs(3600),
            other => parse_duration(other).map_err(|_| bad())?,
        };
        Self::new(count, per).ok_or_else(|| BadUnit::RateZero(text.to_owned()))
    }

    /// How many events the rate allows per period.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// The period the count is over.
    pub fn per(&self) -> Duration {
        self.per
    }

    /// Events per second.
    pub fn per_second(&self) -> f64 {
        f64::from(self.count) / self.per.as_secs_f64()
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.per.as_secs() {
            1 | 60 | 3600 if self.per.subsec_nanos() == 0 => {
                let unit = match self.per.as_secs() {
                    1 => "s",
                    60 => "min",
                    _ => "h",
                };
                write!(f, "{}/{unit}", self.count)
            }
            _ => write!(f, "{}/{}", self.count, DisplayDuration(self.per)),
        }
    }
}

/// Writes a duration the way a user would: `250ms`, `2s`, `5m`, `1.5s`.
#[derive(Debug, Clone, Copy)]
pub struct DisplayDuration(pub Duration);

impl fmt::Display for DisplayDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.0;
        let ms = d.as_millis();
        if !d.subsec_nanos().is_multiple_of(1_000_000) {
            write!(f, "{}us", d.as_micros())
        } else if !ms.is_multiple_of(1000) {
            write!(f, "{ms}ms")
        } else if ms.is_multiple_of(3_600_000) && ms > 0 {
            write!(f, "{}h", ms / 3_600_000)
        } else if ms.is_multiple_of(60_000) && ms > 0 {
            write!(f, "{}m", ms / 60_000)
        } else {
            write!(f, "{}s", ms / 1000)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_in_every_unit() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("5min"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration(" 10 s "), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
    }

    #[test]
    fn bad_durations_say_what_is_expected() {
        for bad in [
            "",
            "2",
            "s",
            "-1s",
            "2 seconds",
            "1e3ms",
            "1..2s",
            "2sec",
            "ms5",
        ] {
            let err = parse_duration(bad).expect_err(bad);
            assert_eq!(err, BadUnit::Duration(bad.to_owned()));
            assert!(err.to_string().contains("expected a number and a unit"));
        }
        assert_eq!(
            parse_duration("99999999999h").expect_err("huge"),
            BadUnit::DurationTooLong("99999999999h".into())
        );
    }

    #[test]
    fn rates_per_unit_and_per_duration() {
        let r = Rate::parse("5/s").expect("valid");
        assert_eq!((r.count(), r.per()), (5, Duration::from_secs(1)));
        assert_eq!(
            Rate::parse("100/min").expect("valid").per(),
            Duration::from_secs(60)
        );
        assert_eq!(
            Rate::parse("1000/hour").expect("valid").per(),
            Duration::from_secs(3600)
        );
        assert_eq!(
            Rate::parse("10/30s").expect("valid").per(),
            Duration::from_secs(30)
        );
        assert!((Rate::parse("100/min").expect("valid").per_second() - 100.0 / 60.0).abs() < 1e-9);
    }

    #[test]
    fn bad_rates_are_refused() {
        for bad in ["5", "/s", "5/", "x/s", "-5/s", "5/parsec", "1.5/s"] {
            assert_eq!(Rate::parse(bad), Err(BadUnit::Rate(bad.to_owned())));
        }
        for zero in ["0/s", "5/0s"] {
            assert_eq!(Rate::parse(zero), Err(BadUnit::RateZero(zero.to_owned())));
        }
        assert_eq!(
            Rate::parse("99999999999/s"),
            Err(BadUnit::CountTooLarge("99999999999/s".into()))
        );
    }

    #[test]
    fn durations_display_as_written() {
        let show = |d| DisplayDuration(d).to_string();
        assert_eq!(show(Duration::from_millis(250)), "250ms");
        assert_eq!(show(Duration::from_secs(2)), "2s");
        assert_eq!(show(Duration::from_secs(300)), "5m");
        assert_eq!(show(Duration::from_secs(7200)), "2h");
        assert_eq!(
            Rate::parse("100/min").expect("valid").to_string(),
            "100/min"
        );
        assert_eq!(Rate::parse("10/30s").expect("valid").to_string(), "10/30s");
    }
}
