//! Maintenance windows: weekly UTC time ranges during which binding changes roll at once.

use std::fmt;

use crate::clock::UtcTime;

pub const DAY_NAMES: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
const MINUTES_PER_DAY: u16 = 24 * 60;

/// `days` (Monday = 0), `start` inclusive, `end` exclusive, in minutes since midnight UTC.
/// An end at or before the start crosses midnight and belongs to the day it starts on, so
/// `start == end` is a whole day from `start`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    days: [bool; 7],
    start: u16,
    end: u16,
}

impl Window {
    pub fn new(days: &[usize], start: u16, end: u16) -> Self {
        let mut set = [false; 7];
        for &d in days {
            if let Some(slot) = set.get_mut(d) {
                *slot = true;
            }
        }
        Window {
            days: set,
            start: start % MINUTES_PER_DAY,
            end: end % MINUTES_PER_DAY,
        }
    }

    pub fn contains(&self, now: UtcTime) -> bool {
        let (day, minute) = (now.weekday(), now.minute_of_day());
        let today = self.days[day];
        if self.start < self.end {
            return today && (self.start..self.end).contains(&minute);
        }
        let yesterday = self.days[(day + 6) % 7];
        (today && minute >= self.start) || (yesterday && minute < self.end)
    }
}

impl fmt::Display for Window {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let days: Vec<&str> = DAY_NAMES
            .iter()
            .zip(self.days)
            .filter_map(|(name, on)| on.then_some(*name))
            .collect();
        let hm = |m: u16| format!("{:02}:{:02}", m / 60, m % 60);
        write!(
            f,
            "{} {}-{} UTC",
            days.join(","),
            hm(self.start),
            hm(self.end)
        )
    }
}

/// `Mon` … `Sun` → 0 … 6.
pub fn parse_day(name: &str) -> Option<usize> {
    DAY_NAMES.iter().position(|d| *d == name)
}

/// `HH:MM`, 00:00 … 23:59 → minutes since midnight.
pub fn parse_time(text: &str) -> Option<u16> {
    let (h, m) = text.split_once(':')?;
    let two_digits = |s: &str| s.len() == 2 && s.bytes().all(|b| b.is_ascii_digit());
    if !two_digits(h) || !two_digits(m) {
        return None;
    }
    let (h, m) = (h.parse::<u16>().ok()?, m.parse::<u16>().ok()?);
    (h < 24 && m < 60).then_some(h * 60 + m)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Wednesday 2026-12-02 at `hh:mm` UTC, shifted by `day_offset` days.
    fn at(day_offset: i64, hh: i64, mm: i64) -> UtcTime {
        UtcTime(1_796_169_600 + day_offset * 86_400 + hh * 3600 + mm * 60)
    }

    const MON: i64 = -2;
    const WED: i64 = 0;
    const THU: i64 = 1;
    const SAT: i64 = 3;
    const SUN: i64 = 4;

    #[test]
    fn window_contains_start_but_not_end() {
        let w = Window::new(
            &[2],
            parse_time("02:00").unwrap(),
            parse_time("04:00").unwrap(),
        );
        let cases = [
            (at(WED, 1, 59), false),
            (at(WED, 2, 0), true),
            (at(WED, 3, 59), true),
            (at(WED, 4, 0), false),
            (at(THU, 2, 30), false),
        ];
        for (t, want) in cases {
            assert_eq!(w.contains(t), want, "{}", t.rfc3339());
        }
    }

    #[test]
    fn window_crossing_midnight_belongs_to_its_start_day() {
        let w = Window::new(
            &[5],
            parse_time("22:00").unwrap(),
            parse_time("02:00").unwrap(),
        );
        let cases = [
            (at(SAT, 21, 59), false),
            (at(SAT, 22, 0), true),
            (at(SUN, 1, 59), true),
            (at(SUN, 2, 0), false),
            (at(SUN, 22, 30), false),
            (at(SAT, 1, 0), false),
        ];
        for (t, want) in cases {
            assert_eq!(w.contains(t), want, "{}", t.rfc3339());
        }
    }

    #[test]
    fn end_at_midnight_runs_to_the_end_of_the_day() {
        let w = Window::new(
            &[0],
            parse_time("20:00").unwrap(),
            parse_time("00:00").unwrap(),
        );
        assert!(w.contains(at(MON, 23, 59)));
        assert!(!w.contains(at(MON + 1, 0, 0)), "Tuesday 00:00 is outside");
        assert!(!w.contains(at(MON, 19, 59)));
    }

    #[test]
    fn equal_start_and_end_is_a_whole_day() {
        let w = Window::new(&[6], 0, 0);
        assert!(w.contains(at(SUN, 0, 0)));
        assert!(w.contains(at(SUN, 23, 59)));
        assert!(!w.contains(at(SAT, 23, 59)));
        assert!(!w.contains(at(SUN + 1, 0, 0)));
    }

    #[test]
    fn parses_only_well_formed_times_and_days() {
        let cases = [
            ("00:00", Some(0)),
            ("23:59", Some(1439)),
            ("02:30", Some(150)),
            ("24:00", None),
            ("25:00", None),
            ("12:60", None),
            ("2:30", None),
            ("02:3", None),
            ("0230", None),
            ("+2:30", None),
            ("", None),
        ];
        for (text, want) in cases {
            assert_eq!(parse_time(text), want, "{text}");
        }
        assert_eq!(parse_day("Sun"), Some(6));
        assert_eq!(parse_day("sun"), None);
        assert_eq!(parse_day("Sunday"), None);
    }

    #[test]
    fn displays_days_and_times() {
        let w = Window::new(&[5, 6], 120, 240);
        assert_eq!(w.to_string(), "Sat,Sun 02:00-04:00 UTC");
    }
}
