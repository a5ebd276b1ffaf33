//! Where a text may hold a base64-encoded segment (`normal::decoded`
//! decodes them): runs of 16 to [`MAX_ENCODED`] base64 characters, either
//! alphabet, padding included, mixing cases as encodings do (a plain word
//! seldom does). This is read over every text a server returns, a listing
//! of a thousand tools or a 10 MiB result, so most of a text is passed
//! over 64 bytes at a time, with vector compares: a segment lies in a
//! stretch of at least 16 bytes that are base64 characters or padding,
//! and such a stretch always holds 8 of them starting at a multiple of 8.
//! Only those stretches are read a byte at a time.

use super::normal::MAX_ENCODED;
use std::ops::Range;

/// The encoded segments of `text`, in order.
pub(super) fn segments(text: &str) -> Vec<Range<usize>> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(stretch) = next_stretch(bytes, from) {
        // A segment mixes cases: a stretch all of one (a hex hash, an id,
        // words joined by dashes) holds none and is not walked.
        if mixes_cases(&bytes[stretch.clone()]) {
            // What follows the stretch cannot be part of a segment in it:
            // the runs are read as if the text ended there.
            runs(&bytes[..stretch.end], stretch.start, &mut found);
        }
        from = stretch.end;
    }
    found
}

/// Whether `bytes` hold an upper-case and a lower-case ASCII letter, as
/// arithmetic the compiler turns into vector compares.
fn mixes_cases(bytes: &[u8]) -> bool {
    let cases = bytes.iter().fold(0u8, |seen, &b| {
        seen | u8::from(b.wrapping_sub(b'A') < 26) | (u8::from(b.wrapping_sub(b'a') < 26) << 1)
    });
    cases == 3
}

/// Whether `b` is a base64 character (either alphabet) or padding, as
/// arithmetic the compiler turns into vector compares.
fn in_stretch(b: u8) -> bool {
    base64(b) | (b == b'=')
}

fn base64(b: u8) -> bool {
    ((b | 0x20).wrapping_sub(b'a') < 26)
        | (b.wrapping_sub(b'0') < 10)
        | (b == b'+')
        | (b == b'/')
        | (b == b'_')
        | (b == b'-')
}

/// The next stretch, from `from` on, of 16 or more bytes each a base64
/// character or padding, whole (`from` is 0 or just past a stretch).
fn next_stretch(bytes: &[u8], mut from: usize) -> Option<Range<usize>> {
    let mut block = from.next_multiple_of(8);
    while block < bytes.len() {
        let chunk = &bytes[block..bytes.len().min(block + 64)];
        let mut ok = [0u8; 64];
        for (o, &b) in ok.iter_mut().zip(chunk) {
            *o = u8::from(in_stretch(b));
        }
        let Some(k) = first_candidate(&ok) else {
            block += 64;
            continue;
        };
        let hit = block + 8 * k;
        let mut start = hit;
        while start > from && in_stretch(bytes[start - 1]) {
            start -= 1;
        }
        let end = end_of(bytes, hit + 8, in_stretch);
        if end - start >= 16 {
            return Some(start..end);
        }
        from = end;
        block = end.next_multiple_of(8);
    }
    None
}

/// The first of the 8-byte blocks of `ok` (a flag a byte: base64 or
/// padding) that are all flagged and may lie in a stretch of 16: with the
/// flagged bytes just before and after it in the chunk, 16 or more (a
/// block at either end of the chunk may go on past it, so it counts).
/// Words of 8 to 15 letters, the most common such blocks, are passed
/// over without a walk through them.
fn first_candidate(ok: &[u8; 64]) -> Option<usize> {
    const FLAGS: u64 = 0x0101_0101_0101_0101;
    let word = |k: usize| u64::from_le_bytes(ok[8 * k..8 * k + 8].try_into().expect("8 bytes"));
    // Flagged bytes at the end of block `k` (before the next) and at the
    // start of it (after the one before).
    let at_end = |k: usize| ((!word(k) & FLAGS).leading_zeros() / 8) as usize;
    let at_start = |k: usize| ((!word(k) & FLAGS).trailing_zeros() / 8) as usize;
    (0..8).find(|&k| {
        if word(k) != FLAGS {
            return false;
        }
        let before = if k == 0 { 8 } else { at_end(k - 1) };
        let after = if k == 7 { 8 } else { at_start(k + 1) };
        before + 8 + after >= 16
    })
}

/// The segments among the runs in `bytes` from `at` on, as a loop over
/// the bytes: a run of base64 characters, the padding after it.
fn runs(bytes: &[u8], mut at: usize, found: &mut Vec<Range<usize>>) {
    let class = |at: usize| CLASS[usize::from(bytes[at])];
    while at < bytes.len() {
        if class(at) & BASE64 == 0 {
            at += 1;
            continue;
        }
        let start = at;
        let mut seen = 0;
        while at < bytes.len() && class(at) & BASE64 != 0 {
            seen |= class(at);
            at += 1;
            if at - start > MAX_ENCODED {
                // Too long to be one: only its end is wanted.
                at = end_of(bytes, at, base64);
                break;
            }
        }
        let (upper, lower) = (seen & UPPER != 0, seen & LOWER != 0);
        while at < bytes.len() && bytes[at] == b'=' && at - start < MAX_ENCODED {
            at += 1;
        }
        let len = at - start;
        if (16..=MAX_ENCODED).contains(&len) && upper && lower {
            found.push(start..at);
        }
    }
}

/// Where the bytes `is` holds for, going on at `at`, end: 64 bytes at a
/// time while every byte of a block is one (compares the compiler turns
/// into vector instructions), then 8 at a time, then a byte at a time.
pub(super) fn end_of(bytes: &[u8], mut at: usize, is: fn(u8) -> bool) -> usize {
    for block in [64, 8] {
        while let Some(part) = bytes.get(at..at + block) {
            if !part.iter().fold(true, |all, &b| all & is(b)) {
                break;
            }
            at += block;
        }
    }
    while at < bytes.len() && is(bytes[at]) {
        at += 1;
    }
    at
}

/// A byte's class for the loop over a stretch: one table look-up a byte
/// instead of a chain of tests.
const BASE64: u8 = 1;
const UPPER: u8 = 2;
const LOWER: u8 = 4;
const CLASS: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = match c {
            b'A'..=b'Z' => BASE64 | UPPER,
            b'a'..=b'z' => BASE64 | LOWER,
            b'0'..=b'9' | b'+' | b'/' | b'_' | b'-' => BASE64,
            _ => 0,
        };
        b += 1;
    }
    table
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_byte_tests_agree_with_what_they_stand_for() {
        for b in 0..=255u8 {
            let is_b64 = b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'_' | b'-');
            assert_eq!(CLASS[usize::from(b)] & BASE64 != 0, is_b64, "byte {b}");
            assert_eq!(base64(b), is_b64, "byte {b}");
            assert_eq!(in_stretch(b), is_b64 || b == b'=', "byte {b}");
            assert_eq!(CLASS[usize::from(b)] & UPPER != 0, b.is_ascii_uppercase());
            assert_eq!(CLASS[usize::from(b)] & LOWER != 0, b.is_ascii_lowercase());
            for place in [3, 70, 130] {
                let mut run = vec![b'a'; 200];
                run[place] = b;
                let end = if is_b64 { 200 } else { place };
                assert_eq!(end_of(&run, 0, base64), end, "byte {b} at {place}");
            }
        }
    }

    /// The segments as a loop over every byte finds them.
    fn every_byte(text: &str) -> Vec<Range<usize>> {
        let mut found = Vec::new();
        runs(text.as_bytes(), 0, &mut found);
        found
    }

    #[test]
    fn stretches_passed_over_hide_no_segment_a_loop_over_every_byte_finds() {
        // Texts of the bytes that matter (both cases, digits, padding,
        // a space, a non-ASCII letter), lengths around the block sizes and
        // the limits, from a fixed-seed generator.
        let pieces = ["a", "B", "7", "=", " ", "+", "é", "aB3xY9", "=="];
        let mut next = crate::testing::numbers(0x9E37_79B9_7F4A_7C15);
        let mut with_segments = 0;
        for round in 0..3000 {
            let len = [5, 17, 63, 64, 65, 130, 700, 5000][round % 8];
            let mut text = String::new();
            while text.len() < len {
                // Long stretches as often as short words.
                let repeat = if next(4) == 0 { next(40) + 1 } else { 1 };
                let piece = pieces[next(pieces.len())];
                text.push_str(&piece.repeat(repeat));
            }
            let found = segments(&text);
            assert_eq!(found, every_byte(&text), "{text:?}");
            with_segments += usize::from(!found.is_empty());
        }
        assert!(with_segments > 300, "{with_segments} texts with a segment");
        // A run too long to be one, then a segment after it.
        let long = format!("{} x aGVsbG8gd29ybGQgaGk=", "Ab1".repeat(2000));
        assert_eq!(segments(&long), every_byte(&long));
        assert_eq!(segments(&long).len(), 1);
    }
}
