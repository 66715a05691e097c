use super::*;

#[test]
fn binary_is_a_nul_or_invalid_utf8_in_the_first_8_kib() {
    assert!(!is_binary(b""));
    assert!(!is_binary("plain text, caf\u{e9}\n".as_bytes()));
    assert!(is_binary(b"PK\x03\x04\x00\x00"));
    assert!(is_binary(b"caf\xe9"));
    // A character cut by the 8 KiB window is text; one cut by the end of the file is not.
    let mut cut = vec![b'a'; SNIFF_BYTES - 1];
    cut.extend_from_slice("\u{e9}".as_bytes());
    assert!(!is_binary(&cut));
    assert!(is_binary(&cut[..SNIFF_BYTES]));
    // Past the window, nothing is looked at.
    let mut late = vec![b'a'; SNIFF_BYTES];
    late.push(0);
    assert!(!is_binary(&late));
}

#[test]
fn edits_before_finds_records_in_any_order() {
    let text = b"{}\n{}\n{}\n";
    let mut recs: Vec<Record<'_>> = framing::lines(text, 1).map(Record::from_line).collect();
    recs[1].set_raw(b"{ }".to_vec());
    let ids: Vec<u64> = recs.iter().map(Record::id).collect();
    recs.swap(0, 2);
    let before = EditsBefore::new(&recs);
    assert_eq!(before.len(), 3);
    let mut cursor = 0;
    // In id order (the merge walk), out of order (a search), and an id never seen.
    assert_eq!(before.get(ids[0], &mut cursor), Some(0));
    assert_eq!(before.get(ids[1], &mut cursor), Some(1));
    assert_eq!(before.get(ids[0], &mut cursor), Some(0));
    assert_eq!(before.get(ids[2], &mut cursor), Some(0));
    assert_eq!(before.get(ids[2] + 1_000_000, &mut cursor), None);
}

#[test]
fn short_lines_are_counted_exactly() {
    let tiny = b"{}\n".repeat(100_000);
    assert_eq!(line_count_estimate(&tiny).0, 100_001);
    // Blank lines are no records: none is reserved for them.
    assert_eq!(line_count_estimate(&b"\n".repeat(100_000)), (1, 100_001));
    let long = [vec![b'x'; 4000], b"\n".to_vec()].concat().repeat(100);
    let n = line_count_estimate(&long).0;
    assert!((100..=200).contains(&n), "{n}");
}
