//! Redacting one JSONL line or one text: the prefiltered scan, string by string, with nested
//! (stringified, escaped) text, PEM blocks split over lines, and the splice of the results.

use super::*;

impl Redactor {
    /// Redact one JSONL line (prefiltered).
    pub fn redact_line(&self, line: &[u8]) -> LineResult {
        self.line(line, false)
    }

    /// Redact one line with every rule over every string: no prefilter. The property tests
    /// check that [`Redactor::redact_line`] gives the same result.
    pub fn redact_line_unfiltered(&self, line: &[u8]) -> LineResult {
        self.line(line, true)
    }

    pub(super) fn line(&self, line: &[u8], full: bool) -> LineResult {
        let mut raw_hits = Vec::new();
        let mut esc_pos = Vec::new();
        let mut escaped = false;
        if !full {
            self.engine.hits(line, true, &mut raw_hits);
            // HTML entities by number and `%25` are found apart from the prefilter.
            scan::encoded_forms(line, &mut esc_pos);
            if raw_hits.is_empty() && esc_pos.is_empty() {
                return LineResult::default();
            }
            // An escape that could hide a keyword: strings holding one are decoded and searched.
            escaped = !esc_pos.is_empty() || raw_hits.iter().any(|h| h.rule == scan::ESCAPE);
            st_escapes(&raw_hits, &mut esc_pos);
            raw_hits.retain(|h| h.rule != scan::ESCAPE);
            raw_hits.sort_unstable_by_key(|h| (h.pos, h.rule));
        }
        // Where a secret may be split between strings: the prefilter's keywords, which the
        // full scan (no prefilter) finds the same way so that both give the same result.
        let mut split_esc = Vec::new();
        let split_hits: std::borrow::Cow<'_, [Hit]> = if full {
            let mut h = Vec::new();
            self.engine.hits(line, true, &mut h);
            st_escapes(&h, &mut split_esc);
            h.retain(|h| h.rule != scan::ESCAPE);
            h.sort_unstable_by_key(|h| (h.pos, h.rule));
            std::borrow::Cow::Owned(h)
        } else {
            std::borrow::Cow::Borrowed(&raw_hits)
        };
        let split_esc: &[usize] = if full { &split_esc } else { &esc_pos };
        // A key block may go on in later strings of its array (one patch line each): walk on.
        let block = raw_hits
            .iter()
            .any(|h| self.engine.rules[h.rule as usize].trim);
        // Strings starting after the last occurrence hold none (unless an escape hides one),
        // save the rest of a secret split off at the end of the one before (a few bytes on).
        let stop = if full || escaped || block {
            usize::MAX
        } else {
            raw_hits.last().map_or(0, |h| h.pos + 2 * SPLIT_WINDOW)
        };
        let mut st = LineState {
            memo_budget: line.len(),
            ..LineState::default()
        };
        st.visible = esc_pos
            .iter()
            .copied()
            .filter(|&p| scan::visible_trigger(line, p))
            .collect();
        let walked = json::walk_until(line, stop, |tok, frames| {
            if !st.ok {
                return;
            }
            if !tok.is_key && self.pem_line(line, tok, frames, &mut st) {
                return;
            }
            if !tok.is_key {
                split_pair(line, tok, frames, &split_hits, split_esc, &mut st);
            }
            self.string(line, tok, frames, &raw_hits, &esc_pos, full, &mut st);
        });
        if st.ok && !st.split_pairs.is_empty() {
            self.split_secrets(line, full, &mut st);
        }
        if walked.is_err() || !st.ok {
            let (new, found) = self.text(line, full);
            return LineResult {
                line: new,
                findings: found,
                blocks: Vec::new(),
                secrets: Vec::new(),
            };
        }
        if st.edits.is_empty() {
            return LineResult {
                line: None,
                findings: st.findings,
                blocks: st.blocks,
                secrets: st.secrets,
            };
        }
        // Sized to the new line and its terminator: grown past its capacity (placeholders
        // longer than their secrets), a 200 MB line's vector doubled, copying it.
        let size = st.edits.iter().fold(line.len(), |n, (s, e, enc)| {
            (n + enc.len()).saturating_sub(e - s)
        });
        let mut out = Vec::with_capacity(size + 2);
        let mut at = 0;
        for (s, e, enc) in &st.edits {
            out.extend_from_slice(&line[at..*s]);
            out.extend_from_slice(enc);
            at = *e;
        }
        out.extend_from_slice(&line[at..]);
        st.blocks.sort();
        st.blocks.dedup();
        LineResult {
            line: Some(out),
            findings: st.findings,
            blocks: st.blocks,
            secrets: st.secrets,
        }
    }

    /// Whether the rules find more secrets in `visible` (a string's reader form) than in `cur`
    /// (the string): a reader form without a keyword shows none, and costs no second search.
    fn shows_more(&self, visible: &[u8], cur: &[u8], full: bool) -> bool {
        if !full {
            let mut hits = Vec::new();
            self.engine.hits(visible, false, &mut hits);
            if hits.is_empty() {
                return false;
            }
        }
        self.found_count(visible, full) > self.found_count(cur, full)
    }

    /// How many secrets the rules find in `text` (no field rules, no rounds).
    fn found_count(&self, text: &[u8], full: bool) -> usize {
        let mut found = Vec::new();
        if full {
            self.engine.find_all(text, false, &mut found);
        } else {
            let mut hits = Vec::new();
            self.engine.hits(text, false, &mut hits);
            self.engine.find(text, &mut hits, &mut found);
        }
        self.finish(text, &mut found);
        found.len()
    }

    /// Secrets split between two consecutive strings of a record (issue #25: a token cut
    /// between two text blocks, or between a message and the next field): the end of the first
    /// and the start of the second are searched together, and a secret that spans them is
    /// replaced in both (the first keeps the placeholder, the second loses its part). Only for
    /// pairs whose first string has a keyword within [`SPLIT_WINDOW`] bytes of its end; not
    /// when the second was changed by its own search, nor the first unless that change
    /// replaced its end (the part it holds).
    fn split_secrets(&self, line: &[u8], full: bool, st: &mut LineState) {
        let pairs = std::mem::take(&mut st.split_pairs);
        let mut added = false;
        for (a, b) in pairs {
            let within = |t: &SplitPart, (es, ee): (usize, usize)| t.start <= es && ee <= t.end;
            // The second string as its own search left it must be as it was.
            if st.edits.iter().any(|(es, ee, _)| within(&b, (*es, *ee))) {
                continue;
            }
            let (Some(ta), Some(tb)) = (
                decoded(&line[a.start..a.end], a.flags),
                decoded(&line[b.start..b.end], b.flags),
            ) else {
                continue;
            };
            // A line continuation ending the first (`+echo ghp_abc\`, then `+def…`) joins
            // what is on both sides of it.
            let cont = usize::from(ta.ends_with(b"\\"));
            let tail_from = (ta.len() - cont).saturating_sub(2 * SPLIT_WINDOW);
            let tail = &ta[tail_from..ta.len() - cont];
            // Two lines of a patch both start with their diff marker (`+`, `-`, a space): the
            // second line's text starts after it.
            let marker = usize::from(
                matches!(tb.first(), Some(b'+' | b'-' | b' ')) && ta.first() == tb.first(),
            );
            let tb_text = &tb[marker..];
            let head = &tb_text[..tb_text.len().min(2 * SPLIT_WINDOW)];
            let joined = [tail, head].concat();
            let mut found = Vec::new();
            if full {
                self.engine.find_all(&joined, false, &mut found);
            } else {
                let mut hits = Vec::new();
                self.engine.hits(&joined, false, &mut hits);
                self.engine.find(&joined, &mut hits, &mut found);
            }
            self.finish(&joined, &mut found);
            let cut = tail.len();
            let a_path = json::path_of(line, &a.frames);
            // Only a token of a fixed shape (a prefix, then its body) is taken as cut in two
            // (a context rule or a URL would run on into whatever the next string says), with
            // at least SPLIT_PART bytes on each side (a token one string holds but for its
            // last few characters is not made whole by the next string's first word), and
            // not one the first string holds whole already (its own search found it).
            let Some(f) = found.iter().find(|f| {
                let id = self.engine.rules[f.rule as usize].id.as_str();
                f.start + SPLIT_PART <= cut
                    && f.end >= cut + SPLIT_PART
                    && SPLIT_RULES.contains(&id)
                    && !st.findings.iter().any(|g| {
                        g.rule == f.rule as usize && g.path.as_deref() == Some(&a_path[..])
                    })
            }) else {
                continue;
            };
            let secret = &joined[f.start..f.end];
            let a_part = &tail[f.start..];
            // The first string as its own search left it: its part of the token goes, unless
            // that search replaced it already (a value that ran to its end).
            let mut cur_a = line[a.start..a.end].to_vec();
            let mut own: Vec<&(usize, usize, Vec<u8>)> = st
                .edits
                .iter()
                .filter(|(es, ee, _)| within(&a, (*es, *ee)))
                .collect();
            own.sort_by_key(|e| std::cmp::Reverse(e.0));
            for (es, ee, enc) in own {
                cur_a.splice(es - a.start..ee - a.start, enc.iter().copied());
            }
            let Some(cur_a) = decoded(&cur_a, esc::U).map(|c| c.into_owned()) else {
                continue;
            };
            let mut new_a = cur_a.clone();
            let a_end = [a_part, &b"\\"[..cont]].concat();
            if cur_a.ends_with(&a_end) {
                new_a.truncate(cur_a.len() - a_end.len());
                self.put_placeholder(&joined, f, &mut new_a);
            }
            // Each part becomes the placeholder: the text reads as redacted on both sides.
            let mut new_b = Vec::with_capacity(tb.len());
            new_b.extend_from_slice(&tb[..marker]);
            self.put_placeholder(&joined, f, &mut new_b);
            new_b.extend_from_slice(&tb_text[f.end - cut..]);
            st.findings.push(LineFinding {
                rule: f.rule as usize,
                path: Some(a_path.clone()),
                offset: tail_from + f.start,
                len: secret.len(),
                fingerprint: self.fingerprint(secret),
                secret: SecretBytes::new(secret),
            });
            json::content_blocks(&a_path, &mut st.blocks);
            json::content_blocks(&json::path_of(line, &b.frames), &mut st.blocks);
            st.edits.retain(|(es, ee, _)| !within(&a, (*es, *ee)));
            for (t, new) in [(&a, &new_a[..]), (&b, &new_b[..])] {
                let mut enc = Vec::with_capacity(new.len() + 2);
                json::encode(new, &mut enc);
                st.edits.push((t.start, t.end, enc));
            }
            added = true;
        }
        if added {
            st.edits.sort_by_key(|e| e.0);
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn string(
        &self,
        line: &[u8],
        tok: &Tok,
        frames: &[Frame],
        raw_hits: &[Hit],
        esc_pos: &[usize],
        full: bool,
        st: &mut LineState,
    ) {
        let (s, e) = (tok.start, tok.end);
        let in_range = |a: usize, b: usize| {
            let lo = raw_hits.partition_point(|h| h.pos < a);
            let hi = raw_hits.partition_point(|h| h.pos < b);
            &raw_hits[lo..hi]
        };
        let val_hits = in_range(s, e);
        let key = match frames.last() {
            Some(Frame::Obj(Some(k))) if self.has_field_rules && !tok.is_key => Some(*k),
            _ => None,
        };
        let key_hits: Vec<Hit> = match key {
            Some((ks, ke, _)) if !full => in_range(ks, ke)
                .iter()
                .filter(|h| self.engine.rules[h.rule as usize].field)
                .copied()
                .collect(),
            _ => Vec::new(),
        };
        // `\u00` / `:\/` inside the string, possibly itself escaped (`\\u0041` in
        // stringified JSON): decode it and search what it hides.
        let nested_escape = {
            let lo = esc_pos.partition_point(|&p| p < s);
            esc_pos.get(lo).is_some_and(|&p| p < e)
        };
        let hidden = tok.flags & (esc::U | esc::SLASH) != 0 || nested_escape;
        let key_hidden = key.is_some_and(|(_, _, kf)| kf & (esc::U | esc::SLASH) != 0);
        if !full && val_hits.is_empty() && key_hits.is_empty() && !hidden && !key_hidden {
            return;
        }
        // A string equal to one searched before in this line, with the same occurrences
        // (tool output is kept twice: in the message and in `toolUseResult`), gives the same
        // replacement and findings: they are copied, not searched for again. Only where the
        // result cannot depend on where the string sits: a value whose member's key takes no
        // part, and no allowlisted paths.
        let memo = !full
            && !tok.is_key
            && key_hits.is_empty()
            && !key_hidden
            && self.allow_paths.is_empty()
            && e - s >= MEMO_MIN_LEN;
        let rel: Vec<(u32, usize)> = if memo {
            val_hits.iter().map(|h| (h.rule, h.pos - s)).collect()
        } else {
            Vec::new()
        };
        if memo {
            // Byte comparisons are bounded by the line's length (`memo_budget`), so that many
            // long strings that differ only at their ends cannot make a line quadratic.
            let budget = &mut st.memo_budget;
            let same = st.memo.iter().position(|m| {
                if m.e - m.s != e - s
                    || m.flags != tok.flags
                    || m.nested != nested_escape
                    || m.hits != rel
                    || *budget < e - s
                {
                    return false;
                }
                *budget -= e - s;
                line[m.s..m.e] == line[s..e]
            });
            if let Some(i) = same {
                let p = json::path_renamed(line, frames, |at| st.keys.get(&at).cloned());
                let m = &st.memo[i];
                for (rule, offset, len, fp, secret) in &m.findings {
                    st.findings.push(LineFinding {
                        rule: *rule,
                        path: Some(p.clone()),
                        offset: *offset,
                        len: *len,
                        fingerprint: fp.clone(),
                        secret: secret.clone(),
                    });
                }
                if !m.edits.is_empty() {
                    json::content_blocks(&p, &mut st.blocks);
                }
                // The same edits, moved to this copy.
                for k in m.edits.clone() {
                    let (a, b, enc) = &st.edits[k];
                    let moved = (a - m.s + s, b - m.s + s, enc.clone());
                    st.edits.push(moved);
                }
                return;
            }
        }
        let (f0, e0) = (st.findings.len(), st.edits.len());
        self.string_search(
            line, tok, frames, val_hits, &key_hits, key, hidden, key_hidden, full, st,
        );
        if memo && st.ok && st.memo.len() < MEMO_MAX {
            let findings = st.findings[f0..]
                .iter()
                .map(|f| {
                    (
                        f.rule,
                        f.offset,
                        f.len,
                        f.fingerprint.clone(),
                        f.secret.clone(),
                    )
                })
                .collect();
            let edits = e0..st.edits.len();
            st.memo.push(Memo {
                s,
                e,
                flags: tok.flags,
                nested: nested_escape,
                hits: rel,
                findings,
                edits,
            });
        }
    }

    /// The search of one string (see [`Redactor::string`]).
    #[allow(clippy::too_many_arguments)]
    fn string_search(
        &self,
        line: &[u8],
        tok: &Tok,
        frames: &[Frame],
        val_hits: &[Hit],
        key_hits: &[Hit],
        key: Option<(usize, usize, u8)>,
        hidden: bool,
        key_hidden: bool,
        full: bool,
        st: &mut LineState,
    ) {
        let (s, e) = (tok.start, tok.end);
        // The occurrences the raw line showed, in the decoded string: where no escape can hide
        // a keyword (no `\u`, no `\/`), the decoded string holds no others (the checks after a
        // keyword read simple escapes as what they stand for), so it is not scanned again.
        let mut mapped = (!full && !hidden).then(|| {
            val_hits
                .iter()
                .map(|h| Hit {
                    rule: h.rule,
                    pos: h.pos - s,
                })
                .collect::<Vec<Hit>>()
        });
        let text = if tok.flags == 0 {
            std::borrow::Cow::Borrowed(&line[s..e])
        } else {
            let mut at: Vec<usize> = mapped.iter().flatten().map(|h| h.pos).collect();
            let mut buf = Vec::new();
            if !json::decode_mapped(&line[s..e], &mut buf, &mut at) {
                st.ok = false;
                return;
            }
            for (h, p) in mapped.iter_mut().flatten().zip(at) {
                h.pos = p;
            }
            std::borrow::Cow::Owned(buf)
        };
        let ktext = match key {
            Some((ks, ke, kf)) if full || !key_hits.is_empty() || key_hidden => {
                match decoded(&line[ks..ke], kf) {
                    Some(k) => Some((k, kf, ks)),
                    None => {
                        st.ok = false;
                        return;
                    }
                }
            }
            _ => None,
        };
        // Replacing one secret can uncover a match another hid (a greedy token class that ate
        // the next key's BEGIN line): search again until nothing is found, so that a second
        // run finds nothing.
        // The replacements so far in the string's own coordinates (start, end, placeholder),
        // sorted, while the string is only changed by them: the edit is then those few bytes,
        // not the whole string re-encoded (a 100 MB string with one key needs no second and
        // third copy). None once something else changed it.
        let mut reps: Option<Vec<(usize, usize, Vec<u8>)>> = Some(Vec::new());
        let mut cur = text;
        let mut path: Option<Vec<Seg>> = None;
        let path_of = |st: &LineState| {
            let mut p = json::path_renamed(line, frames, |at| st.keys.get(&at).cloned());
            if tok.is_key {
                // A key's own path: its object, then the key as it now reads.
                p.push(Seg::Key(String::new()));
            }
            p
        };
        // A token broken by invisible characters, written with HTML entities, percent-encoded
        // or cut into pieces that code joins is searched as it reads ([`scan::reading`]);
        // each secret found there is replaced at its span in the string as written (its
        // pieces and what joins them), and nothing else of the string changes. Each of those
        // forms leaves an anchor in the raw line ([`scan::visible_trigger`]), so other
        // strings skip this. Only when the reading shows more secrets than the string as
        // written: a string whose only secret is an ordinary token is searched as it is.
        let reads_otherwise = {
            let i = st.visible.partition_point(|&p| p < s);
            st.visible.get(i).is_some_and(|&p| p < e)
        } || ((hidden || !val_hits.is_empty()) && scan::may_hide(&cur))
            || (tok.flags & esc::U != 0 && scan::holds_token_start(&cur));
        if let Some(r) = (full || reads_otherwise)
            .then(|| scan::reading(&cur))
            .flatten()
            .filter(|r| self.shows_more(&r.text, &cur, full))
        {
            let p = path.get_or_insert_with(|| path_of(st));
            if self.allow_paths.iter().any(|g| g.allows(p)) {
                return;
            }
            let (spans, found) = self.read_secrets(&r, full);
            for mut f in found {
                f.path = Some(p.clone());
                st.findings.push(f);
            }
            cur = std::borrow::Cow::Owned(spliced(&cur, &spans));
            reps = Some(spans);
            mapped = None;
        }
        // Only where an escape may hide a keyword (`\u0041`, `:\/`) or the string is
        // stringified JSON: searching a string twice costs throughput.
        let has = |n: &[u8]| memchr::memmem::find(&cur, n).is_some();
        if memchr::memchr(b'\\', &cur).is_some()
            && (has(b"\\u00")
                || has(b":\\/")
                || matches!(cur.trim_ascii_start().first(), Some(b'{' | b'[')))
        {
            let (new, found) = self.nested(&cur, full);
            if let Some(new) = new {
                let p = path.get_or_insert_with(|| path_of(st));
                if self.allow_paths.iter().any(|g| g.allows(p)) {
                    return;
                }
                for mut f in found {
                    f.path = Some(p.clone());
                    st.findings.push(f);
                }
                cur = std::borrow::Cow::Owned(new);
                reps = None;
                mapped = None;
            }
        }
        for round in 0..MAX_ROUNDS {
            let mut found = Vec::new();
            if full {
                self.engine.find_all(&cur, false, &mut found);
            } else if round > 0 || !val_hits.is_empty() || hidden {
                let mut hits: Vec<Hit> = match mapped.take() {
                    Some(m) if round == 0 => m,
                    _ => {
                        let mut v = Vec::new();
                        self.engine.hits(&cur, false, &mut v);
                        v
                    }
                };
                self.engine.find(&cur, &mut hits, &mut found);
            }
            if let Some((k, kf, ks)) = &ktext {
                self.field(k, &cur, *kf, key_hits, *ks, full, &mut found);
            }
            self.finish(&cur, &mut found);
            if found.is_empty() {
                break;
            }
            let p = path.get_or_insert_with(|| path_of(st));
            if round == 0 && self.allow_paths.iter().any(|g| g.allows(p)) {
                return;
            }
            for f in &found {
                st.findings.push(LineFinding {
                    rule: f.rule as usize,
                    path: Some(p.clone()),
                    offset: f.start,
                    len: f.end - f.start,
                    fingerprint: self.fingerprint(&cur[f.start..f.end]),
                    secret: SecretBytes::new(&cur[f.start..f.end]),
                });
            }
            if let Some(r) = &mut reps {
                if !track(r, &found, |f| self.placeholder(&cur, f)) {
                    reps = None;
                }
            }
            cur = std::borrow::Cow::Owned(match cur {
                std::borrow::Cow::Owned(v) => self.replace_owned(v, &found),
                std::borrow::Cow::Borrowed(b) => self.replace(b, &found),
            });
        }
        let Some(mut path) = path else { return };
        // An id that held a secret becomes an id of its kind derived from it: one placeholder
        // for every such id would make records their own parents.
        if !tok.is_key {
            if let super::super::fields::Field::Id { uuid } = super::super::fields::field(&path) {
                if let Some(old) = decoded(&line[s..e], tok.flags) {
                    cur = std::borrow::Cow::Owned(
                        crate::transcript::ids::pseudonym_id(&old, uuid).into_bytes(),
                    );
                    reps = None;
                }
            }
        }
        if tok.is_key {
            reps = None;
            // Two secret keys of one object must not become the same key (a parser would keep
            // only the last member): later ones get `#2`, `#3`, ….
            let mut parent = path.clone();
            parent.pop();
            let base = String::from_utf8_lossy(&cur).into_owned();
            let n = st.key_names.entry((parent, base.clone())).or_insert(0);
            *n += 1;
            if *n > 1 {
                cur = std::borrow::Cow::Owned(format!("{base}#{n}").into_bytes());
            }
            // Later paths through this object name the key as redacted.
            let k = String::from_utf8_lossy(&cur).into_owned();
            st.keys.insert(s, k.clone());
            if let Some(Seg::Key(last)) = path.last_mut() {
                *last = k.clone();
            }
            let n = st.findings.len();
            for f in st.findings[..n].iter_mut().rev() {
                match &mut f.path {
                    Some(fp) if fp.last() == Some(&Seg::Key(String::new())) => {
                        *fp.last_mut().expect("non-empty") = Seg::Key(k.clone())
                    }
                    _ => break,
                }
            }
        }
        json::content_blocks(&path, &mut st.blocks);
        // The raw string is the text as it is (no escapes) and reads the same re-encoded: the
        // re-encoded new string is the raw one with each placeholder (encoded) in its place.
        // So it is too when its only escapes are those the encoder writes for the characters
        // they stand for (`\n`, `\"`, …: one byte each), at the raw offsets of the decoded ones.
        if let Some(mut reps) = reps {
            let raw = &line[s..e];
            if (tok.flags == 0 && plain(raw))
                || (tok.flags & (esc::U | esc::SLASH) == 0
                    && memchr::memchr(0xED, raw).is_none()
                    && raw_offsets(raw, &mut reps))
            {
                drop(cur);
                for (a, b, ph) in reps {
                    let mut enc = Vec::with_capacity(ph.len());
                    json::encode(&ph, &mut enc);
                    st.edits.push((s + a, s + b, enc));
                }
                return;
            }
        }
        let mut enc = Vec::with_capacity(cur.len() + 16);
        json::encode(&cur, &mut enc);
        drop(cur);
        st.edits.push((s, e, enc));
    }

    /// A JSON member `"key": "value"` searched as `key": "value` by the field rules; matches
    /// that start in the key and whose secret lies in the value are added (value offsets).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn field(
        &self,
        key: &[u8],
        value: &[u8],
        kflags: u8,
        key_hits: &[Hit],
        ks: usize,
        full: bool,
        found: &mut Vec<Found>,
    ) {
        let mut synth = Vec::with_capacity(key.len() + value.len() + 5);
        synth.extend_from_slice(key);
        synth.extend_from_slice(b"\": \"");
        let off = synth.len();
        synth.extend_from_slice(value);
        synth.push(b'"');
        let mut got = Vec::new();
        if full {
            self.engine.find_all(&synth, true, &mut got);
        } else {
            let mut hits: Vec<Hit> = if kflags == 0 {
                key_hits
                    .iter()
                    .map(|h| Hit {
                        rule: h.rule,
                        pos: h.pos - ks,
                    })
                    .collect()
            } else {
                let mut v = Vec::new();
                self.engine.hits(&synth, false, &mut v);
                v.retain(|h| h.pos < key.len() && self.engine.rules[h.rule as usize].field);
                v
            };
            self.engine.find(&synth, &mut hits, &mut got);
        }
        for f in got {
            if self.engine.rules[f.rule as usize].field
                && f.mstart < key.len()
                && f.start >= off
                && f.end <= off + value.len()
            {
                found.push(Found {
                    rule: f.rule,
                    start: f.start - off,
                    end: f.end - off,
                    mstart: 0,
                    mend: f.mend.saturating_sub(off).min(value.len()),
                });
            }
        }
    }

    /// A decoded string that still holds escapes (`\u0041`, `\/`): stringified JSON is redacted
    /// as a JSON line of its own (its other bytes kept); other text is unescaped once and
    /// redacted as text. The new string and the findings, when something was found.
    pub(super) fn nested(&self, text: &[u8], full: bool) -> (Option<Vec<u8>>, Vec<LineFinding>) {
        let t = text.trim_ascii_start();
        if matches!(t.first(), Some(b'{' | b'[')) && json::walk(text, |_, _| {}).is_ok() {
            // Its strings are decoded and searched one by one: nothing else to unescape.
            let res = self.line(text, full);
            return match res.line {
                Some(l) => (Some(l), res.findings),
                None => (None, Vec::new()),
            };
        }
        // Other text: read its escapes once more (`\n`, `\"`, `\u0041`, `\/`), search that,
        // and replace the secrets found at the same places in the text as it is.
        let mut un = Vec::with_capacity(text.len());
        let mut map = Vec::with_capacity(text.len() + 1);
        let mut i = 0;
        while i < text.len() {
            let c = text[i];
            if c == b'\\' {
                let hex = text.get(i + 2..i + 6).and_then(|h| {
                    std::str::from_utf8(h)
                        .ok()
                        .filter(|h| h.starts_with("00"))
                        .and_then(|h| u8::from_str_radix(h, 16).ok())
                });
                let (b, n) = match (text.get(i + 1), hex) {
                    (Some(b'u'), Some(b)) if b.is_ascii_graphic() => (b, 6),
                    (Some(b'/'), _) => (b'/', 2),
                    (Some(b'"'), _) => (b'"', 2),
                    (Some(b'\\'), _) => (b'\\', 2),
                    (Some(b'n'), _) => (b'\n', 2),
                    (Some(b'r'), _) => (b'\r', 2),
                    (Some(b't'), _) => (b'\t', 2),
                    _ => (c, 1),
                };
                un.push(b);
                map.push(i);
                i += n;
                continue;
            }
            un.push(c);
            map.push(i);
            i += 1;
        }
        map.push(text.len());
        if un.len() == text.len() {
            return (None, Vec::new());
        }
        let mut found = Vec::new();
        if full {
            self.engine.find_all(&un, false, &mut found);
        } else {
            let mut hits = Vec::new();
            self.engine.hits(&un, false, &mut hits);
            self.engine.find(&un, &mut hits, &mut found);
        }
        self.finish(&un, &mut found);
        if found.is_empty() {
            return (None, Vec::new());
        }
        let findings = found
            .iter()
            .map(|f| LineFinding {
                rule: f.rule as usize,
                path: None,
                offset: map[f.start],
                len: map[f.end] - map[f.start],
                fingerprint: self.fingerprint(&un[f.start..f.end]),
                secret: SecretBytes::new(&un[f.start..f.end]),
            })
            .collect();
        let mapped: Vec<Found> = found
            .iter()
            .map(|f| Found {
                rule: f.rule,
                start: map[f.start],
                end: map[f.end],
                mstart: map[f.mstart],
                mend: map[f.mend],
            })
            .collect();
        (Some(self.replace(text, &mapped)), findings)
    }
}

impl Redactor {
    /// The secrets the rules find in `r`, a reading of a text: (start, end, placeholder) of
    /// each at its span in the text as written (sorted, disjoint: a span that overlaps the
    /// one before is merged into it), and the findings (offsets in the text as written, the
    /// secret as it reads).
    pub(super) fn read_secrets(&self, r: &scan::Reading, full: bool) -> (Spans, Vec<LineFinding>) {
        let (_, mut found) = self.text_visible(&r.text, full);
        found.sort_by_key(|f| f.offset);
        let mut spans: Spans = Vec::with_capacity(found.len());
        for f in &mut found {
            let (a, b) = (r.start(f.offset), r.end(f.offset + f.len));
            match spans.last_mut() {
                Some(last) if a < last.1 => last.1 = last.1.max(b),
                _ => spans.push((a, b, self.placeholder_of(f.rule, &f.secret.0))),
            }
            f.offset = a;
            f.len = b - a;
        }
        (spans, found)
    }
}

/// Spans of a text and what replaces each: (start, end, bytes), sorted, disjoint.
pub(super) type Spans = Vec<(usize, usize, Vec<u8>)>;

/// `text` with each of `spans` replaced by its bytes.
pub(super) fn spliced(text: &[u8], spans: &[(usize, usize, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut at = 0;
    for (a, b, bytes) in spans {
        out.extend_from_slice(&text[at..*a]);
        out.extend_from_slice(bytes);
        at = *b;
    }
    out.extend_from_slice(&text[at..]);
    out
}

/// Add this round's replacements `found` (sorted, disjoint, in the coordinates of the string
/// as the earlier replacements left it) to `reps` (in the original string's coordinates).
/// False when one touches an earlier placeholder: the string is then edited whole.
fn track(
    reps: &mut Vec<(usize, usize, Vec<u8>)>,
    found: &[Found],
    placeholder: impl Fn(&Found) -> Vec<u8>,
) -> bool {
    let mut new = Vec::with_capacity(reps.len() + found.len());
    let mut old = std::mem::take(reps).into_iter().peekable();
    // Current position minus original position, over the replacements passed so far.
    let mut delta: isize = 0;
    for f in found {
        while let Some((a, b, ph)) = old.peek() {
            let (na, nb) = (
                (*a as isize + delta) as usize,
                (*a as isize + delta) as usize + ph.len(),
            );
            if nb <= f.start {
                delta += ph.len() as isize - (*b - *a) as isize;
                new.push(old.next().expect("peeked"));
            } else if na >= f.end {
                break;
            } else {
                return false;
            }
        }
        let a = (f.start as isize - delta) as usize;
        let b = (f.end as isize - delta) as usize;
        new.push((a, b, placeholder(f)));
    }
    new.extend(old);
    *reps = new;
    true
}

/// The raw bytes of a string read the same when its text is encoded again: no byte that
/// [`json::encode`] escapes (controls; `"` and `\\` cannot occur unescaped) and no 0xED (which
/// may start an encoded surrogate).
/// Map the spans `reps` (sorted, disjoint; offsets in the decoded string) to offsets in
/// `raw`, a string whose escapes each stand for one byte and are what the encoder writes for
/// it (no `\u`, no `\/`). False when that is not so (a raw control character).
fn raw_offsets(raw: &[u8], reps: &mut [(usize, usize, Vec<u8>)]) -> bool {
    if raw.iter().any(|&c| c < 0x20) {
        return false;
    }
    // `raw[..r]` decodes to `d` bytes.
    let (mut r, mut d) = (0usize, 0usize);
    let mut to_raw = |want: usize| -> Option<usize> {
        while d < want {
            let next = memchr::memchr(b'\\', &raw[r..]).map_or(raw.len(), |p| r + p);
            let plain_len = next - r;
            if d + plain_len >= want {
                r += want - d;
                d = want;
                break;
            }
            if next == raw.len() {
                return None;
            }
            d += plain_len + 1;
            r = next + 2;
            // Only the escapes the encoder writes.
            if !matches!(
                raw.get(next + 1),
                Some(b'"' | b'\\' | b'n' | b'r' | b't' | b'b' | b'f')
            ) {
                return None;
            }
        }
        (d == want && r <= raw.len()).then_some(r)
    };
    for (a, b, _) in reps.iter_mut() {
        let (Some(ra), Some(rb)) = (to_raw(*a), to_raw(*b)) else {
            return false;
        };
        (*a, *b) = (ra, rb);
    }
    true
}

fn plain(raw: &[u8]) -> bool {
    !raw.iter()
        .any(|&c| c < 0x20 || c == b'"' || c == b'\\' || c == 0xED)
}

/// Strings shorter than this are searched again rather than looked up.
const MEMO_MIN_LEN: usize = 64;
/// Searched strings remembered per line (a lookup compares lengths first).
const MEMO_MAX: usize = 64;

/// A string searched in this line, and what came of it.
pub(super) struct Memo {
    s: usize,
    e: usize,
    flags: u8,
    nested: bool,
    /// Occurrences (rule, offset in the string).
    hits: Vec<(u32, usize)>,
    /// Findings (rule, offset, length, fingerprint, secret).
    findings: Vec<(usize, usize, usize, String, SecretBytes)>,
    /// Its edits in `LineState::edits`.
    edits: std::ops::Range<usize>,
}

/// How near the end of a string a keyword must be for the string's end and the next string's
/// start to be searched together ([`Redactor::split_secrets`]); twice this of each is searched.
pub(super) const SPLIT_WINDOW: usize = 128;

/// The fewest bytes of a split token each string must hold ([`Redactor::split_secrets`]).
const SPLIT_PART: usize = 6;

/// The rules whose secrets are found cut between two strings ([`Redactor::split_secrets`]):
/// tokens of a fixed shape, a prefix and a body.
const SPLIT_RULES: &[&str] = &[
    "aws-access-key-id",
    "github-pat",
    "github-fine-grained-pat",
    "github-app-token",
    "github-oauth-token",
    "github-refresh-token",
    "gitlab-pat",
    "anthropic-api-key",
    "anthropic-admin-key",
    "anthropic-oauth-token",
    "openai-api-key",
    "openai-project-key",
    "openai-service-key",
    "openai-admin-key",
    "openrouter-api-key",
    "groq-api-key",
    "xai-api-key",
    "perplexity-api-key",
    "huggingface-token",
    "replicate-api-token",
    "slack-bot-token",
    "slack-user-token",
    "slack-app-token",
    "stripe-secret-key",
    "google-api-key",
    "npm-access-token",
    "pypi-upload-token",
    "sendgrid-api-key",
    "digitalocean-token",
    "databricks-token",
    "shopify-token",
    "linear-api-key",
    "dockerhub-pat",
    "flyio-access-token",
];

/// A value string that may hold part of a split secret.
pub(super) struct SplitPart {
    start: usize,
    end: usize,
    flags: u8,
    /// Where it is (its path is rendered only for a pair that holds a secret).
    frames: Vec<Frame>,
    /// Strings seen since this one.
    after: usize,
}

/// Note the pair (an earlier string, `tok`) when the earlier one has a keyword near its end
/// and `tok` is the same field of the next element ([`siblings`]): the next text block comes
/// after the block's other fields (`"type": "text"`), so a few strings are looked past.
/// A string that holds an escape may start a pair too (the prefilter cannot see through it).
fn split_pair(
    line: &[u8],
    tok: &Tok,
    frames: &[Frame],
    raw_hits: &[Hit],
    esc_pos: &[usize],
    st: &mut LineState,
) {
    let lo = raw_hits.partition_point(|h| h.pos + SPLIT_WINDOW < tok.end);
    // A string an escape may hide a keyword in counts as one with a keyword (the prefilter
    // could not see it); so does one holding the start of a token cut short (an escape anchor
    // too: the rule's own keyword wants the whole body).
    let hidden = tok.flags & (esc::U | esc::SLASH) != 0 || {
        let i = esc_pos.partition_point(|&p| p < tok.start);
        esc_pos.get(i).is_some_and(|&p| p < tok.end)
    };
    // A token cut in two has a token's characters on both sides of the cut.
    let tokenish =
        |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'+' | b'/' | b'=');
    // A line continuation at its end (`…ghp_abc\`, JSON `\\`) cuts it as well.
    let raw = &line[tok.start..tok.end];
    let ends_tokenish = raw.last().is_some_and(|&c| tokenish(c))
        || (raw.ends_with(b"\\\\") && raw.len() > 2 && tokenish(raw[raw.len() - 3]));
    let starts_tokenish =
        tok.end > tok.start && (tokenish(line[tok.start]) || line[tok.start] == b'\\');
    let near_end = ends_tokenish
        && (hidden
            || raw_hits
                .get(lo)
                .is_some_and(|h| h.pos < tok.end && h.pos >= tok.start));
    let part = |tok: &Tok| SplitPart {
        start: tok.start,
        end: tok.end,
        flags: tok.flags,
        frames: frames.to_vec(),
        after: 0,
    };
    if let Some(mut a) = st.split_prev.take() {
        if starts_tokenish && siblings(line, &a.frames, frames) {
            st.split_pairs.push((a, part(tok)));
        } else if a.after < SPLIT_LOOK_PAST {
            a.after += 1;
            st.split_prev = Some(a);
        }
    }
    if near_end {
        st.split_prev = Some(part(tok));
    }
}

/// How many strings after one with a keyword near its end are looked at for its sibling.
const SPLIT_LOOK_PAST: usize = 4;

/// Whether two paths are the same field of consecutive elements of one array
/// (`content[0].text` and `content[1].text`, `lines[4]` and `lines[5]`): one text cut in two.
/// Never two fields of one object: a message's end and the record's `uuid` that follows it
/// are no secret together.
fn siblings(line: &[u8], a: &[Frame], b: &[Frame]) -> bool {
    let key = |k: &Option<(usize, usize, u8)>| k.map(|(s, e, _)| &line[s..e]);
    let same = |x: &Frame, y: &Frame| match (x, y) {
        (Frame::Obj(k), Frame::Obj(l)) => key(k) == key(l),
        (Frame::Arr(i), Frame::Arr(j)) => i == j,
        _ => false,
    };
    a.len() == b.len()
        && a.iter().zip(b).filter(|(x, y)| !same(x, y)).count() == 1
        && a.iter()
            .zip(b)
            .any(|(x, y)| matches!((x, y), (Frame::Arr(i), Frame::Arr(j)) if i + 1 == *j))
}

/// Offsets of the escape hits among `hits`, sorted.
pub(super) fn st_escapes(hits: &[Hit], out: &mut Vec<usize>) {
    out.extend(
        hits.iter()
            .filter(|h| h.rule == scan::ESCAPE)
            .map(|h| h.pos),
    );
    out.sort_unstable();
    // Escapes found by one anchor and checked for several forms are reported once per form.
    out.dedup();
}

/// Rounds of search-and-replace on one string before giving up on a fixpoint.
pub(super) const MAX_ROUNDS: usize = 8;

/// The decoded content of a JSON string (borrowed when it has no escapes).
pub(super) fn decoded(raw: &[u8], flags: u8) -> Option<std::borrow::Cow<'_, [u8]>> {
    if flags == 0 {
        return Some(std::borrow::Cow::Borrowed(raw));
    }
    let mut buf = Vec::new();
    json::decode(raw, &mut buf).then_some(std::borrow::Cow::Owned(buf))
}

pub(super) struct LineState {
    pub(super) edits: Vec<(usize, usize, Vec<u8>)>,
    /// Where the raw line holds an anchor of a string that reads otherwise than it is written
    /// ([`scan::visible_trigger`]), sorted.
    pub(super) visible: Vec<usize>,
    /// The last value string seen, when a keyword sits within [`SPLIT_WINDOW`] of its end.
    pub(super) split_prev: Option<SplitPart>,
    /// Consecutive value strings whose boundary may split a secret ([`split_pair`]).
    pub(super) split_pairs: Vec<(SplitPart, SplitPart)>,
    /// Object keys that were redacted: start offset → the key as it now reads.
    pub(super) keys: std::collections::HashMap<usize, String>,
    /// Redacted keys per object (path of the object, key): how many so far.
    pub(super) key_names: std::collections::BTreeMap<(Vec<Seg>, String), usize>,
    /// The array whose strings carry an open private-key block, one line each: its depth and
    /// the frame that holds it (the member key or the index in its parent), so that a sibling
    /// array at the same depth does not continue the block.
    pub(super) pem: Option<(usize, Option<Frame>)>,
    /// The open block has been reported.
    pub(super) pem_reported: bool,
    pub(super) findings: Vec<LineFinding>,
    pub(super) blocks: Vec<Vec<Seg>>,
    /// Secrets replaced that no finding carries (see [`LineResult::secrets`]).
    pub(super) secrets: Vec<(usize, SecretBytes)>,
    /// Strings searched so far (see [`Redactor::string`]).
    pub(super) memo: Vec<Memo>,
    /// Bytes the memo lookups may still compare in this line.
    pub(super) memo_budget: usize,
    /// False once a string could not be decoded: the line is then redacted as text.
    pub(super) ok: bool,
}

impl Default for LineState {
    fn default() -> Self {
        LineState {
            edits: Vec::new(),
            visible: Vec::new(),
            split_prev: None,
            split_pairs: Vec::new(),
            keys: Default::default(),
            key_names: Default::default(),
            pem: None,
            pem_reported: false,
            findings: Vec::new(),
            blocks: Vec::new(),
            secrets: Vec::new(),
            memo: Vec::new(),
            memo_budget: 0,
            ok: true,
        }
    }
}
