//! Structural checks of token formats: base64, JWT, HTTP Basic, bech32 checksums.

/// Standard base64 of the whole 3-byte groups of `data` (no padding, no partial tail): the
/// prefix every base64 encoding of a string that starts with `data` shares.
pub fn b64_whole_groups(data: &[u8]) -> Vec<u8> {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::with_capacity(data.len() / 3 * 4);
    for g in data.chunks_exact(3) {
        let n = (u32::from(g[0]) << 16) | (u32::from(g[1]) << 8) | u32::from(g[2]);
        for k in (0..4).rev() {
            out.push(ABC[(n >> (6 * k)) as usize & 63]);
        }
    }
    out
}

pub(super) fn b64_decode(s: &[u8], url: bool) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for &c in s {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' if !url => 62,
            b'/' if !url => 63,
            b'-' if url => 62,
            b'_' if url => 63,
            b'=' => break,
            _ => return None,
        };
        acc = (acc << 6) | v as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

pub(super) fn jwt(s: &[u8]) -> bool {
    let mut parts = s.split(|&c| c == b'.');
    let (Some(h), Some(p)) = (parts.next(), parts.next()) else {
        return false;
    };
    let header: Option<serde_json::Value> =
        b64_decode(h, true).and_then(|d| serde_json::from_slice(&d).ok());
    let payload: Option<serde_json::Value> =
        b64_decode(p, true).and_then(|d| serde_json::from_slice(&d).ok());
    match header {
        Some(header) => match header.get("alg") {
            Some(alg) if alg != "none" => {}
            _ => return false,
        },
        // A damaged header (a typo in a copy, a bad paste) before a payload of claims is
        // still a signed token's body and signature.
        None => {
            const CLAIMS: [&str; 6] = ["sub", "iss", "exp", "iat", "aud", "name"];
            let claims = payload
                .as_ref()
                .is_some_and(|v| CLAIMS.iter().any(|c| v.get(c).is_some()));
            if !claims {
                return false;
            }
        }
    }
    !payload.is_some_and(|v| v.get("role").is_some_and(|r| r == "anon"))
}

pub(super) fn basic_auth(s: &[u8]) -> bool {
    b64_decode(s, false).is_some_and(|d| {
        let colon = d.iter().position(|&c| c == b':');
        colon.is_some_and(|i| i > 0 && i + 1 < d.len())
            && d.iter().all(|c| (0x20..0x7f).contains(c))
    })
}

pub(super) fn bech32(s: &[u8]) -> bool {
    const CHARSET: &[u8] = b"qpzry9x8gf2tvdw0s3jn54khce6mua7l";
    let s = s.to_ascii_lowercase();
    let Some(sep) = s.iter().rposition(|&c| c == b'1') else {
        return false;
    };
    let (hrp, data) = (&s[..sep], &s[sep + 1..]);
    if hrp.is_empty() || data.len() < 6 {
        return false;
    }
    let mut values = Vec::with_capacity(hrp.len() * 2 + 1 + data.len());
    values.extend(hrp.iter().map(|c| c >> 5));
    values.push(0);
    values.extend(hrp.iter().map(|c| c & 31));
    for c in data {
        match CHARSET.iter().position(|x| x == c) {
            Some(v) => values.push(v as u8),
            None => return false,
        }
    }
    const GEN: [u32; 5] = [0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3];
    let mut chk: u32 = 1;
    for v in values {
        let b = chk >> 25;
        chk = ((chk & 0x1ffffff) << 5) ^ v as u32;
        for (i, g) in GEN.iter().enumerate() {
            if (b >> i) & 1 == 1 {
                chk ^= g;
            }
        }
    }
    chk == 1
}
