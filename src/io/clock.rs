//! Timestamps in the form Claude Code writes (`2026-04-01T10:00:03.120Z`), without a date crate.

use std::time::{SystemTime, UNIX_EPOCH};

/// `t` as RFC 3339 UTC with milliseconds.
///
/// ```
/// let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(1_775_037_603_120);
/// assert_eq!(cchist::io::clock::rfc3339(t), "2026-04-01T10:00:03.120Z");
/// ```
pub fn rfc3339(t: SystemTime) -> String {
    let ms = t
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    let (secs, milli) = (ms.div_euclid(1000), ms.rem_euclid(1000));
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{milli:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Now, as [`rfc3339`].
pub fn now() -> String {
    rfc3339(SystemTime::now())
}

/// A compact UTC stamp for file names that sorts in time order: `20260401T100003120Z`.
pub fn file_stamp(t: SystemTime) -> String {
    let s = rfc3339(t);
    let digits: String = s
        .chars()
        .filter(|c| c.is_ascii_digit() || *c == 'T')
        .collect();
    format!("{digits}Z")
}

/// Days from 1970-01-01 to the civil date `y-m-d` (Howard Hinnant's algorithm, the inverse of
/// the one in [`rfc3339`]).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Parse a date, or a date and time, into a point in time: `2026-12-01` (midnight),
/// `2026-12-01 10:30`, `2026-12-01 10:30:15` (the form `undo --list` prints), `T` in place of
/// the space, fractions of a second, and a zone `Z` or `+01:00` (RFC 3339); without a zone the
/// time is UTC, as every time cchist prints is. Times before 1970 become 1970-01-01.
///
/// The error says what is wrong (`month 13 is not 1-12`), not how to write a time: the caller
/// knows which forms it also takes.
///
/// ```
/// use cchist::io::clock::{parse, rfc3339};
/// assert_eq!(rfc3339(parse("2026-04-01 10:00").unwrap()), "2026-04-01T10:00:00.000Z");
/// assert_eq!(rfc3339(parse("2026-04-01T12:00:03.12+02:00").unwrap()), "2026-04-01T10:00:03.120Z");
/// assert!(parse("2026-02-30").is_err());
/// ```
pub fn parse(s: &str) -> Result<SystemTime, String> {
    fn num(s: &str, what: &str) -> Result<i64, String> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("the {what} `{s}` is not a number"));
        }
        s.parse()
            .map_err(|_| format!("the {what} `{s}` is too large"))
    }
    let b = s.as_bytes();
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' || !s.is_char_boundary(10) {
        return Err("a date is written YYYY-MM-DD".into());
    }
    let (y, m, d) = (
        num(&s[..4], "year")?,
        num(&s[5..7], "month")?,
        num(&s[8..10], "day")?,
    );
    if !(1..=12).contains(&m) {
        return Err(format!("month {m} is not 1-12"));
    }
    if d < 1 || d > days_in_month(y, m) {
        return Err(format!("{y:04}-{m:02} has no day {d}"));
    }
    let mut secs = days_from_civil(y, m, d) * 86_400;
    let mut millis = 0;
    let rest = &s[10..];
    if !rest.is_empty() {
        let Some(time) = rest.strip_prefix([' ', 'T', 't']).filter(|t| !t.is_empty()) else {
            return Err("the time goes after the date, as `YYYY-MM-DD HH:MM`".into());
        };
        // The zone: `Z`, or `+HH:MM` / `-HH:MM` after the time.
        let (clock, offset) = if let Some(c) = time.strip_suffix(['Z', 'z']) {
            (c, 0)
        } else if let Some(i) = time.rfind(['+', '-']) {
            let (c, z) = time.split_at(i);
            let sign = if z.starts_with('-') { -1 } else { 1 };
            let Some((zh, zm)) = z[1..].split_once(':') else {
                return Err(format!("the zone `{z}` is written +HH:MM or -HH:MM"));
            };
            let (zh, zm) = (num(zh, "zone hour")?, num(zm, "zone minute")?);
            if zh > 23 || zm > 59 {
                return Err(format!("the zone `{z}` is out of range"));
            }
            (c, sign * (zh * 3600 + zm * 60))
        } else {
            (time, 0)
        };
        let (hms, frac) = match clock.split_once('.') {
            Some((hms, f)) => (hms, Some(f)),
            None => (clock, None),
        };
        let parts: Vec<&str> = hms.split(':').collect();
        if !(2..=3).contains(&parts.len()) {
            return Err("a time is written HH:MM or HH:MM:SS".into());
        }
        let h = num(parts[0], "hour")?;
        let mi = num(parts[1], "minute")?;
        let sec = parts.get(2).map_or(Ok(0), |p| num(p, "second"))?;
        if h > 23 || mi > 59 || sec > 60 {
            return Err(format!("{hms} is not a time of day"));
        }
        if let Some(f) = frac {
            if f.is_empty() || f.len() > 9 || !f.bytes().all(|b| b.is_ascii_digit()) {
                return Err(format!("the fraction of a second `.{f}` is not 1-9 digits"));
            }
            millis = format!("{f:0<3}")[..3].parse::<i64>().unwrap_or(0);
        }
        // A leap second counts as the last moment of its minute.
        let sec = if sec == 60 {
            millis = 999;
            59
        } else {
            sec
        };
        secs += h * 3600 + mi * 60 + sec - offset;
    }
    let ms = (secs * 1000 + millis).max(0) as u64;
    Ok(UNIX_EPOCH + std::time::Duration::from_millis(ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_is_the_inverse_of_rfc3339() {
        for ms in [0u64, 951_782_400_000, 1_775_037_603_120, 4_102_444_799_999] {
            let t = UNIX_EPOCH + std::time::Duration::from_millis(ms);
            assert_eq!(parse(&rfc3339(t)).unwrap(), t, "{}", rfc3339(t));
        }
        assert_eq!(
            rfc3339(parse("2024-02-29").unwrap()),
            "2024-02-29T00:00:00.000Z"
        );
        assert_eq!(
            rfc3339(parse("2026-01-01 00:30-01:00").unwrap()),
            "2026-01-01T01:30:00.000Z"
        );
        assert_eq!(
            rfc3339(parse("1969-12-31").unwrap()),
            "1970-01-01T00:00:00.000Z"
        );
        for bad in [
            "2026-13-01",
            "2026-00-10",
            "2025-02-29",
            "2026-04-31",
            "2026-01-01 24:00",
            "2026-01-01 10:60",
            "2026-01-01 10",
            "2026-01-01 10:00:00:00",
            "2026-01-01 10:00+5",
            "2026-01-01 10:00+24:00",
            "2026-01-01 10:00.",
            "2026-01-01x",
            "2026-01-01 ",
            "26-01-01",
            "2026-1-1",
            "2026-01-01 é",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
