//! UTC time from the WASI clock. Everything else takes a `UtcTime` argument, so tests pass
//! a fixed instant instead of reading the clock.

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch, UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct UtcTime(pub i64);

const SECONDS_PER_DAY: i64 = 86_400;

/// The current time. kwctl and policy-server give waPC modules a WASI context, so
/// `SystemTime::now()` reads the host clock. A clock before 1970 reads as the epoch.
pub fn now() -> UtcTime {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    UtcTime(seconds)
}

impl UtcTime {
    /// Day of the week, Monday = 0 … Sunday = 6 (1970-01-01 was a Thursday).
    pub fn weekday(self) -> usize {
        // rem_euclid keeps the result in 0..7, so the cast cannot truncate
        (self.days() + 3).rem_euclid(7) as usize
    }

    /// Minutes since midnight, 0 … 1439.
    pub fn minute_of_day(self) -> u16 {
        (self.0.rem_euclid(SECONDS_PER_DAY) / 60) as u16
    }

    fn days(self) -> i64 {
        self.0.div_euclid(SECONDS_PER_DAY)
    }

    /// RFC 3339 in UTC, seconds precision: `2026-12-02T16:51:06Z`. Every hold writes one, so
    /// its digits are pushed, not formatted (docs/contributing.md, Performance).
    pub fn rfc3339(self) -> String {
        let (year, month, day) = civil_from_days(self.days());
        let secs = self.0.rem_euclid(SECONDS_PER_DAY);
        let (hour, minute, second) = (secs / 3600, secs % 3600 / 60, secs % 60);
        if !(0..=9999).contains(&year) {
            return format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}Z");
        }
        let fields = [
            (year, 4, '-'),
            (month, 2, '-'),
            (day, 2, 'T'),
            (hour, 2, ':'),
            (minute, 2, ':'),
            (second, 2, 'Z'),
        ];
        let mut text = String::with_capacity(20);
        for (value, digits, then) in fields {
            for place in (0..digits).rev() {
                let digit = value / 10_i64.pow(place) % 10;
                text.push(char::from(b'0' + digit as u8));
            }
            text.push(then);
        }
        text
    }
}

/// Proleptic Gregorian date of a day count since 1970-01-01 (H. Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_rfc3339_utc() {
        let cases = [
            (0, "1970-01-01T00:00:00Z"),
            (951_782_400, "2000-02-29T00:00:00Z"),
            (1_738_061_105, "2025-01-28T10:45:05Z"),
            (1_796_230_266, "2026-12-02T16:51:06Z"),
            (4_107_542_399, "2100-02-28T23:59:59Z"),
            (-62_135_596_800, "0001-01-01T00:00:00Z"),
            (253_402_300_799, "9999-12-31T23:59:59Z"),
            (253_402_300_800, "10000-01-01T00:00:00Z"),
            (-62_167_219_201, "-001-12-31T23:59:59Z"),
        ];
        for (secs, want) in cases {
            assert_eq!(UtcTime(secs).rfc3339(), want);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            failure_persistence: None,
            ..proptest::prelude::ProptestConfig::default()
        })]
        #[test]
        fn writes_every_time_as_format_would(secs in -1_000_000_000_000_i64..1_000_000_000_000) {
            let t = UtcTime(secs);
            let (year, month, day) = civil_from_days(t.days());
            let s = secs.rem_euclid(SECONDS_PER_DAY);
            let formatted = format!(
                "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
                s / 3600,
                s % 3600 / 60,
                s % 60
            );
            proptest::prop_assert_eq!(t.rfc3339(), formatted);
        }
    }

    #[test]
    fn knows_the_weekday_and_minute() {
        // 2026-12-02 is a Wednesday
        let t = UtcTime(1_796_230_266);
        assert_eq!(t.weekday(), 2);
        assert_eq!(t.minute_of_day(), 16 * 60 + 51);
        assert_eq!(UtcTime(0).weekday(), 3);
    }

    #[test]
    fn reads_a_plausible_clock() {
        // after 2024-01-01: the WASI clock (or the host's) is wired up
        assert!(now().0 > 1_704_067_200);
    }
}
