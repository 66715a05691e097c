//! Byte counts as people read them: the one size format of everything cchist says, the
//! reports on the terminal and the markers it writes into a transcript alike (a marker said
//! `183 kB` where the report said `178.7 KiB` of the same bytes).

/// `512 B`, `1.5 KiB`, `12.0 MiB`, `1.2 GiB` (powers of 1024).
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if b < 1024 {
        return format!("{b} B");
    }
    let mut v = b as f64 / 1024.0;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", UNITS[u])
}

#[cfg(test)]
mod tests {
    use super::human_bytes as h;

    #[test]
    fn powers_of_1024_with_one_decimal() {
        assert_eq!(h(0), "0 B");
        assert_eq!(h(1023), "1023 B");
        assert_eq!(h(1536), "1.5 KiB");
        assert_eq!(h(5 << 20), "5.0 MiB");
        assert_eq!(h(3 << 30), "3.0 GiB");
    }
}
