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

/// A file run in parts (the pool's threads) gives what the same file run in one piece gives:
/// output bytes, findings in order (and which are listed), counters, known secrets. The
/// secrets sit on both sides of every cut, with echoes before and after the line that reveals
/// them, an invalid line and an unended last line.
#[test]
fn a_file_run_in_parts_is_the_file_run_whole() {
    let tok = format!("ghp_{}", "Zq8xLm3kvR7pW2xY9kT1aB4cD6eF8gH0iJ2k");
    let pass = format!("Tulip{}harbor", 4471);
    let mut data = String::new();
    for n in 0..400 {
        let text = match n % 7 {
            0 => format!("token is {tok} ok"),
            1 => format!("curl -u admin:{pass} https://example.com"),
            2 => format!("echo {pass} >> log"),
            3 => "plain words only".to_string(),
            4 => format!("the value {tok} again"),
            _ => format!("line {n}"),
        };
        let rec = serde_json::json!({"type":"user","uuid":format!("u{n}"),"message":{"role":"user","content":text}});
        data.push_str(&rec.to_string());
        data.push('\n');
        if n == 123 {
            data.push_str("not json at all\n");
        }
    }
    data.push_str(r#"{"type":"user","uuid":"last","message":{"content":"end"}}"#);
    let data = data.into_bytes();
    let load = |split_min: usize| {
        let mut p = crate::engine::config::parse(
            "version = 1\n[[stage]]\ntype = \"redact\"\n",
            &Origin::stdin(),
        )
        .expect("pipeline")
        .pipeline;
        p.split_min = split_min;
        p
    };
    let run = |p: &Pipeline| {
        let mut out = Vec::new();
        let mut sink = crate::io::output::SpanWriter::new(&mut out);
        let (report, _, known) = p
            .run_buffer_moving(
                &data,
                &Origin::stdin(),
                &mut sink,
                false,
                &Known::default(),
                None,
            )
            .expect("run");
        drop(sink);
        (out, serde_json::to_string(&report).unwrap(), known)
    };
    let whole = run(&load(0));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(4)
        .build()
        .unwrap();
    for split_min in [512, 4096, 20_000] {
        let p = load(split_min);
        assert!(
            p.parts(&data, 4).is_some_and(|v| v.len() > 1),
            "{split_min}: not split"
        );
        let parts = pool.install(|| run(&p));
        assert_eq!(
            String::from_utf8_lossy(&parts.0),
            String::from_utf8_lossy(&whole.0),
            "{split_min}"
        );
        assert_eq!(parts.1, whole.1, "{split_min}: report");
        assert_eq!(parts.2, whole.2, "{split_min}: known");
    }
    assert!(memchr::memmem::find(&whole.0, tok.as_bytes()).is_none());
    assert!(memchr::memmem::find(&whole.0, pass.as_bytes()).is_none());
}

/// Parts are line-aligned, cover the buffer once, and carry their first line's number.
#[test]
fn parts_are_whole_lines_numbered() {
    let data = b"aaaa\nbbbbbbbb\ncc\n\ndddddddddddd\ne".repeat(50);
    let mut p = Pipeline::identity();
    p.split_min = 64;
    let parts = p.parts(&data, 3).expect("parts");
    assert!(parts.len() >= 2);
    let mut at = 0;
    let mut line = 1;
    for (s, first) in &parts {
        assert_eq!(s.as_ptr() as usize - data.as_ptr() as usize, at);
        assert_eq!(*first, line);
        if at + s.len() < data.len() {
            assert_eq!(s.last(), Some(&b'\n'));
        }
        line += memchr::memchr_iter(b'\n', s).count();
        at += s.len();
    }
    assert_eq!(at, data.len());
}

/// The echo search over parts of a piece finds the lines the search of the whole piece finds,
/// at the same offsets.
#[test]
fn echo_lines_in_parts_are_those_of_the_whole_piece() {
    use crate::stages::redact::known::KnownSecret;
    let value = format!("Zq8xLm3kvR7pW2xY{}", "9kT1aB4cD6");
    let mut known = Known::default();
    known.add(
        value.as_bytes(),
        KnownSecret {
            rule: "test".into(),
            placeholder: b"[REDACTED:test]".to_vec(),
            fingerprint: String::new(),
        },
    );
    let echoes = known.echoes().expect("a matcher");
    let mut piece = String::new();
    for n in 0..300 {
        let text = match n % 5 {
            0 => format!("saw {value} here"),
            1 => "caf\\u00e9 and a\\/b".to_string(),
            _ => format!("line {n}"),
        };
        piece.push_str(&serde_json::json!({ "n": n, "text": text }).to_string());
        piece.push_str(if n % 3 == 0 { "\r\n" } else { "\n" });
    }
    piece.push_str(&format!("{{\"last\":\"{value}\"}}"));
    let piece = piece.as_bytes();
    let key = |v: Vec<super::Flagged>| -> Vec<(usize, Option<usize>, usize, Vec<u8>)> {
        v.into_iter()
            .map(|f| (f.start, f.nl, f.at, f.line.line))
            .collect()
    };
    let whole = key(super::flagged_lines(&echoes, piece));
    assert_eq!(whole.len(), 61);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .build()
        .unwrap();
    for chunk in [1, 100, 1000, 5000] {
        let parts =
            pool.install(|| key(super::split::flagged_lines_in_parts(&echoes, piece, chunk)));
        assert_eq!(parts, whole, "chunk {chunk}");
    }
}

#[test]
fn stored_zip_pieces_are_names_and_stored_data_and_a_cut_header_is_no_piece() {
    let mut z = b"PK\x03\x04\x14\x00\x00\x00\x00\x00\x00\x00\x00\x00\0\0\0\0".to_vec();
    z.extend_from_slice(&3u32.to_le_bytes());
    z.extend_from_slice(&3u32.to_le_bytes());
    z.extend_from_slice(&[1, 0, 0, 0]);
    z.extend_from_slice(b"xabc");
    z.extend_from_slice(b"PK\x05\x06");
    let pieces = whole::stored_zip_pieces(&z);
    assert_eq!(pieces, vec![(30, &b"x"[..]), (31, &b"abc"[..])]);
    // A size running past the end, or a header cut short: nothing, and no panic.
    for n in 0..z.len() - 4 {
        let cut = &z[..n];
        assert!(whole::stored_zip_pieces(cut).is_empty(), "{n}");
    }
}
