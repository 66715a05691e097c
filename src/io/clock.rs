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
