//! Timestamps in API bodies: RFC 3339 in UTC; days as `YYYY-MM-DD` (UTC).

use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::{Date, OffsetDateTime};

/// The Julian day number of 1970-01-01.
const UNIX_EPOCH_JULIAN_DAY: i64 = 2_440_588;

/// Formats milliseconds since the Unix epoch as RFC 3339 (UTC).
pub fn rfc3339(ms: i64) -> String {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_default()
}

/// The day (days since 1970-01-01) a `YYYY-MM-DD` date names; `None` if it names none.
pub fn day_of_date(text: &str) -> Option<i64> {
    let date = Date::parse(text, format_description!("[year]-[month]-[day]")).ok()?;
    Some(i64::from(date.to_julian_day()) - UNIX_EPOCH_JULIAN_DAY)
}

/// The `YYYY-MM-DD` date of `day` (days since 1970-01-01).
pub fn date_of_day(day: i64) -> String {
    i32::try_from(day + UNIX_EPOCH_JULIAN_DAY)
        .ok()
        .and_then(|julian| Date::from_julian_day(julian).ok())
        .and_then(|date| date.format(format_description!("[year]-[month]-[day]")).ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_are_dates_in_utc_and_back() {
        assert_eq!(day_of_date("1970-01-01"), Some(0));
        assert_eq!(day_of_date("2026-11-29"), Some(20_786));
        assert_eq!(date_of_day(20_786), "2026-11-29");
        assert_eq!(date_of_day(-1), "1969-12-31");
        for bad in ["2026-02-30", "2026-13-01", "26-11-29", "2026-11-29T00:00:00Z", "", "yesterday"] {
            assert_eq!(day_of_date(bad), None, "{bad}");
        }
    }

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
    }
}
