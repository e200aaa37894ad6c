//! Maintenance windows: weekly UTC time ranges during which binding changes roll at once, each
//! object from its own slot when the window spreads its releases.

use std::fmt;
use std::hash::Hasher;

use crate::clock::UtcTime;

pub const DAY_NAMES: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
const MINUTES_PER_DAY: u16 = 24 * 60;

/// `days` (Monday = 0), `start` inclusive, `end` exclusive, in minutes since midnight UTC.
/// An end at or before the start crosses midnight and belongs to the day it starts on, so
/// `start == end` is a whole day from `start`. `spread`: the window opens for each object at
/// its own minute among the first `spread` (1: all at the start).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    days: [bool; 7],
    start: u16,
    end: u16,
    spread: u16,
}

/// Where a moment falls in a window, for one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opening {
    /// The window is not open.
    Closed,
    /// The window is open, and so is the object's slot.
    Open,
    /// The window is open, and the object's slot opens at this minute.
    Later(UtcTime),
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
            spread: 1,
        }
    }

    /// The same window, releasing over its first `minutes` (at least 1).
    pub fn spread_over(self, minutes: u16) -> Self {
        Window {
            spread: minutes.max(1),
            ..self
        }
    }

    /// Minutes from `start` to `end`: 1 … 1440.
    pub fn length(&self) -> u16 {
        match (self.end + MINUTES_PER_DAY - self.start) % MINUTES_PER_DAY {
            0 => MINUTES_PER_DAY,
            minutes => minutes,
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

    /// Whether the window is open at `now` for the object with this `uid`: closed, open, or
    /// open with the object's slot still to come. The slot counts from the start of the
    /// occurrence that contains `now`, which may be the day before (a window crossing
    /// midnight, or Sunday's on a Monday morning).
    pub fn opening(&self, now: UtcTime, uid: Option<&str>) -> Opening {
        if !self.contains(now) {
            return Opening::Closed;
        }
        let elapsed = (now.minute_of_day() + MINUTES_PER_DAY - self.start) % MINUTES_PER_DAY;
        let slot = slot(uid, self.spread);
        if elapsed >= slot {
            return Opening::Open;
        }
        let this_minute = now.0 - now.0.rem_euclid(60);
        Opening::Later(UtcTime(this_minute + i64::from(slot - elapsed) * 60))
    }
}

/// An object's minute in a window spread over `spread` minutes: the 64-bit FNV-1a hash of its
/// `metadata.uid` (as UTF-8 bytes) modulo `spread`; an object without a uid has slot 0. FNV-1a,
/// not std's hasher: a slot must not move between releases or Rust versions, and an operator
/// can compute it with any FNV implementation.
pub fn slot(uid: Option<&str>, spread: u16) -> u16 {
    let Some(uid) = uid else { return 0 };
    let mut hasher = fnv::FnvHasher::default();
    hasher.write(uid.as_bytes());
    let hash = hasher.finish();
    // the remainder is below `spread`, a u16
    (hash % u64::from(spread.max(1))) as u16
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

    /// A uid whose slot in the spread of [`slot_of_uid`] is past the start, so the minute
    /// before it is inside the window.
    const UID: &str = "0c9d8e7f-6a5b-4c3d-9e2f-1a0b9c8d7e6f";

    fn slot_of_uid() -> i64 {
        let slot = i64::from(slot(Some(UID), 30));
        assert!(
            slot > 0,
            "the test needs a uid whose slot is past the start"
        );
        slot
    }

    #[test]
    fn the_slot_is_fnv_1a_of_the_uid_modulo_the_spread() {
        // the published FNV-1a 64 test vectors, reduced modulo 2^16 - 1 and 30
        for (text, hash) in [
            ("", 0xcbf2_9ce4_8422_2325_u64),
            ("a", 0xaf63_dc4c_8601_ec8c),
            ("foobar", 0x8594_4171_f739_67e8),
        ] {
            for spread in [u16::MAX, 30] {
                assert_eq!(
                    u64::from(slot(Some(text), spread)),
                    hash % u64::from(spread),
                    "{text:?} over {spread}"
                );
            }
        }
        assert_eq!(slot(None, 30), 0, "no uid: the window's start");
        assert_eq!(slot(Some(UID), 1), 0, "spread over one minute: the start");
    }

    #[test]
    fn an_object_waits_until_the_minute_of_its_slot() {
        let w = Window::new(&[2], 120, 240).spread_over(30);
        let s = slot_of_uid();
        let slot_at = at(WED, 2, s);
        let cases = [
            (at(WED, 1, 59), Opening::Closed),
            (at(WED, 2, 0), Opening::Later(slot_at)),
            (UtcTime(slot_at.0 - 1), Opening::Later(slot_at)),
            (slot_at, Opening::Open),
            (UtcTime(slot_at.0 + 59), Opening::Open),
            (at(WED, 3, 59), Opening::Open),
            (at(WED, 4, 0), Opening::Closed),
        ];
        for (t, want) in cases {
            assert_eq!(w.opening(t, Some(UID)), want, "{}", t.rfc3339());
        }
        assert_eq!(w.opening(at(WED, 2, 0), None), Opening::Open, "no uid");
        let unspread = Window::new(&[2], 120, 240);
        assert_eq!(unspread.opening(at(WED, 2, 0), Some(UID)), Opening::Open);
    }

    #[test]
    fn a_slot_after_midnight_counts_from_the_start_the_day_before() {
        // Saturday 23:58 to Sunday 01:00: the slot falls after midnight
        let w = Window::new(&[5], parse_time("23:58").unwrap(), 60).spread_over(30);
        let s = slot_of_uid();
        assert!(s > 2, "the test needs a slot after midnight");
        let slot_at = at(SUN, 0, s - 2);
        assert_eq!(
            w.opening(at(SAT, 23, 59), Some(UID)),
            Opening::Later(slot_at)
        );
        assert_eq!(
            w.opening(UtcTime(slot_at.0 - 1), Some(UID)),
            Opening::Later(slot_at)
        );
        assert_eq!(w.opening(slot_at, Some(UID)), Opening::Open);
        // the same minutes on a Sunday night belong to no window
        assert_eq!(w.opening(at(SUN + 1, 0, s - 2), Some(UID)), Opening::Closed);
    }

    #[test]
    fn a_slot_across_the_end_of_the_week_counts_from_sunday() {
        // Sunday 23:59 to Monday 00:45: the week's last day to its first
        let w = Window::new(&[6], parse_time("23:59").unwrap(), 45).spread_over(30);
        let s = slot_of_uid();
        let slot_at = at(MON + 7, 0, s - 1);
        assert_eq!(slot_at.weekday(), 0, "the slot is on Monday");
        assert_eq!(
            w.opening(at(SUN, 23, 59), Some(UID)),
            Opening::Later(slot_at)
        );
        assert_eq!(
            w.opening(UtcTime(slot_at.0 - 1), Some(UID)),
            Opening::Later(slot_at)
        );
        assert_eq!(w.opening(slot_at, Some(UID)), Opening::Open);
        assert_eq!(w.opening(at(MON + 7, 0, 44), Some(UID)), Opening::Open);
        assert_eq!(w.opening(at(MON + 7, 0, 45), Some(UID)), Opening::Closed);
        // Sunday 00:10 follows a Saturday, on which no window starts
        assert_eq!(w.opening(at(SUN, 0, 10), Some(UID)), Opening::Closed);
    }

    #[test]
    fn knows_its_length() {
        for (start, end, want) in [
            (120, 240, 120),
            (1320, 120, 240),
            (0, 0, 1440),
            (60, 59, 1439),
        ] {
            assert_eq!(
                Window::new(&[0], start, end).length(),
                want,
                "{start}-{end}"
            );
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            failure_persistence: None,
            ..proptest::prelude::ProptestConfig::default()
        })]
        #[test]
        fn every_uid_gets_a_slot_within_the_spread(uid in ".*", spread in 1_u16..=1440) {
            proptest::prop_assert!(slot(Some(&uid), spread) < spread);
        }

        #[test]
        fn an_object_is_released_within_the_spread_and_waits_for_no_other_moment(
            uid in "[0-9a-f-]{36}",
            spread in 1_u16..=120,
            minute in 0_i64..260,
        ) {
            let w = Window::new(&[2], 120, 240).spread_over(spread);
            let t = at(WED, 2, 0);
            let t = UtcTime(t.0 + minute * 30);
            let open = i64::from(slot(Some(&uid), spread));
            let want = match minute / 2 {
                m if m >= 120 => Opening::Closed,
                m if m >= open => Opening::Open,
                _ => Opening::Later(at(WED, 2, open)),
            };
            proptest::prop_assert_eq!(w.opening(t, Some(&uid)), want);
        }
    }

    #[test]
    fn displays_days_and_times() {
        let w = Window::new(&[5, 6], 120, 240);
        assert_eq!(w.to_string(), "Sat,Sun 02:00-04:00 UTC");
    }
}
