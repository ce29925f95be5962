//! Serde support for `Duration` fields written as `"5s"`, `"250ms"`, `"1h"`.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serializer};

/// Parses `"5s"`-style durations.
pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    let raw = String::deserialize(deserializer)?;
    parse_duration(&raw).map_err(serde::de::Error::custom)
}

/// Writes durations as whole milliseconds, `"250ms"`.
pub fn serialize<S: Serializer>(value: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&format!("{}ms", value.as_millis()))
}

/// Why a duration was not understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidDuration {
    /// It does not start with a number.
    #[error("invalid duration {0:?}: expected e.g. 5s, 250ms, 1h")]
    NotANumber(String),
    /// Its unit is none of `ms`, `s`, `m`, `h`, `d`.
    #[error("invalid duration unit {unit:?} in {raw:?}: use ms, s, m, h or d")]
    UnknownUnit {
        /// The unit given.
        unit: String,
        /// The whole duration.
        raw: String,
    },
    /// It does not fit in 64-bit milliseconds.
    #[error("duration {0:?} is too large")]
    TooLarge(String),
}

/// Parses `<number><unit>` with unit `ms`, `s`, `m`, `h` or `d`.
pub fn parse_duration(raw: &str) -> Result<Duration, InvalidDuration> {
    let raw = raw.trim();
    let split = raw.find(|c: char| !c.is_ascii_digit()).unwrap_or(raw.len());
    let (number, unit) = raw.split_at(split);
    let number: u64 = number.parse().map_err(|_| InvalidDuration::NotANumber(raw.to_owned()))?;
    let millis = match unit.trim() {
        "ms" => Some(number),
        "s" | "" => number.checked_mul(1_000),
        "m" => number.checked_mul(60_000),
        "h" => number.checked_mul(3_600_000),
        "d" => number.checked_mul(86_400_000),
        other => return Err(InvalidDuration::UnknownUnit { unit: other.to_owned(), raw: raw.to_owned() }),
    };
    millis.map(Duration::from_millis).ok_or_else(|| InvalidDuration::TooLarge(raw.to_owned()))
}

/// Serde support for tables of durations by name (`{ "shard-7" = "1s" }`), into any map of
/// `String` to `Duration`; written sorted by name, each as whole milliseconds.
pub mod map {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    /// Reads a table of `"5s"`-style durations.
    pub fn deserialize<'de, D, M>(deserializer: D) -> Result<M, D::Error>
    where
        D: Deserializer<'de>,
        M: FromIterator<(String, Duration)>,
    {
        let raw = std::collections::BTreeMap::<String, String>::deserialize(deserializer)?;
        raw.into_iter()
            .map(|(name, value)| super::parse_duration(&value).map(|d| (name, d)).map_err(serde::de::Error::custom))
            .collect()
    }

    /// Writes the table sorted by name, each duration as `"250ms"`.
    pub fn serialize<'a, S, M>(map: &'a M, serializer: S) -> Result<S::Ok, S::Error>
    where
        S: Serializer,
        &'a M: IntoIterator<Item = (&'a String, &'a Duration)>,
    {
        let mut sorted: Vec<(&String, &Duration)> = map.into_iter().collect();
        sorted.sort();
        serializer.collect_map(sorted.into_iter().map(|(name, d)| (name, format!("{}ms", d.as_millis()))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("5s").unwrap(), Duration::from_secs(5));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1h").unwrap(), Duration::from_secs(3600));
        assert_eq!(parse_duration("7").unwrap(), Duration::from_secs(7));
        assert!(parse_duration("h").is_err());
        assert!(parse_duration("5 weeks").is_err());
    }
}
