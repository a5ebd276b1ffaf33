//! Globs: `*`, `**`, `?`, `[..]` and `\` escapes, matched without a regex
//! engine.
//!
//! A glob is read once into [`Piece`]s. Matching runs them as an NFA over the
//! text's characters: the set of pieces reached so far, advanced one
//! character at a time. Time is O(text × pieces) whatever the glob (no
//! backtracking blow-up on `*a*a*a*b`), there is nothing to compile, and the
//! regex engine's code is never paged in for the common case, which keeps
//! start-up and memory small (a chain with a filter and a rate limit used to
//! add 1.5 MiB of RSS for it).

use super::Syntax;
use memchr::memmem::Finder;

/// One piece of a glob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Piece {
    /// This character.
    Char(char),
    /// Any one character (`?`); `/` only when `slash`.
    Any { slash: bool },
    /// Any run of characters, the empty one too (`*`, `**`); `/` only when
    /// `slash`.
    Run { slash: bool },
    /// One character in the ranges, or (`negated`) not in them and, when
    /// `slash` is false, not `/`.
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
        slash: bool,
    },
}

impl Piece {
    /// Whether this piece (other than a run) takes `c`.
    fn takes(&self, c: char) -> bool {
        match self {
            Self::Char(l) => c == *l,
            Self::Any { slash } | Self::Run { slash } => *slash || c != '/',
            Self::Class {
                negated,
                ranges,
                slash,
            } => {
                let inside = ranges.iter().any(|&(lo, hi)| (lo..=hi).contains(&c));
                if *negated {
                    !inside && (*slash || c != '/')
                } else {
                    inside
                }
            }
        }
    }
}

/// A glob, read.
#[derive(Debug, Clone)]
pub(super) struct Glob {
    pieces: Vec<Piece>,
    /// How it is matched.
    shape: Shape,
}

/// The common globs have shapes matched without running the NFA.
#[derive(Debug, Clone)]
enum Shape {
    /// No wildcard: compared as a string.
    Literal(String),
    /// Literal parts between runs that take any character (`*secret*`,
    /// `read_*`, `*`): a prefix, a suffix, and the parts between them
    /// found in order, each as early as it occurs.
    Parts {
        prefix: String,
        middle: Vec<Finder<'static>>,
        suffix: String,
    },
    /// Anything else: the NFA.
    Pieces,
}

/// Pieces tracked on the stack; a longer glob tracks them in a `Vec`.
const ON_STACK: usize = 64;

impl Glob {
    pub(super) fn parse(glob: &str, syntax: Syntax) -> Result<Self, GlobFault> {
        let uri = syntax == Syntax::Uri;
        let mut pieces = Vec::new();
        let mut chars = glob.chars().peekable();
        while let Some(c) = chars.next() {
            pieces.push(match c {
                '*' if chars.peek() == Some(&'*') => {
                    while chars.peek() == Some(&'*') {
                        chars.next();
                    }
                    Piece::Run { slash: true }
                }
                '*' => Piece::Run { slash: !uri },
                '?' => Piece::Any { slash: !uri },
                '[' => class(&mut chars, uri)?,
                '\\' => match chars.next() {
                    Some(lit) => Piece::Char(lit),
                    None => return Err(GlobFault::TrailingEscape),
                },
                lit => Piece::Char(lit),
            });
        }
        let shape = Shape::of(&pieces);
        Ok(Self { pieces, shape })
    }

    #[cfg(test)]
    pub(super) fn pieces(&self) -> &[Piece] {
        &self.pieces
    }

    /// Whether the whole of `text` matches.
    pub(super) fn is_match(&self, text: &str) -> bool {
        match &self.shape {
            Shape::Literal(literal) => return text == literal,
            Shape::Parts {
                prefix,
                middle,
                suffix,
            } => return parts_match(prefix, middle, suffix, text),
            Shape::Pieces => {}
        }
        let states = self.pieces.len() + 1;
        if states <= ON_STACK {
            let (mut a, mut b) = ([false; ON_STACK], [false; ON_STACK]);
            self.run(text, &mut a[..states], &mut b[..states])
        } else {
            self.run(text, &mut vec![false; states], &mut vec![false; states])
        }
    }

    /// Whether every text matches (`*` over names, `**`).
    pub(super) fn matches_all(&self) -> bool {
        matches!(&self.shape, Shape::Parts { prefix, middle, suffix }
            if prefix.is_empty() && middle.is_empty() && suffix.is_empty())
    }

    /// The NFA: `reached[i]` is "the first `i` pieces match what was read".
    fn run<'a>(&self, text: &str, mut reached: &'a mut [bool], mut next: &'a mut [bool]) -> bool {
        reached[0] = true;
        self.skip_empty_runs(reached);
        for c in text.chars() {
            next.fill(false);
            let mut alive = false;
            for (i, piece) in self.pieces.iter().enumerate() {
                if reached[i] && piece.takes(c) {
                    // A run takes the character and stays; the rest move on.
                    let to = if matches!(piece, Piece::Run { .. }) {
                        i
                    } else {
                        i + 1
                    };
                    next[to] = true;
                    alive = true;
                }
            }
            if !alive {
                return false;
            }
            self.skip_empty_runs(next);
            std::mem::swap(&mut reached, &mut next);
        }
        reached[self.pieces.len()]
    }

    /// A run may match nothing: reaching it is reaching what follows it.
    fn skip_empty_runs(&self, reached: &mut [bool]) {
        for (i, piece) in self.pieces.iter().enumerate() {
            if reached[i] && matches!(piece, Piece::Run { .. }) {
                reached[i + 1] = true;
            }
        }
    }
}

impl Shape {
    fn of(pieces: &[Piece]) -> Self {
        let mut parts = vec![String::new()];
        for piece in pieces {
            match piece {
                Piece::Char(c) => parts.last_mut().expect("never empty").push(*c),
                Piece::Run { slash: true } => parts.push(String::new()),
                _ => return Self::Pieces,
            }
        }
        if parts.len() == 1 {
            return Self::Literal(parts.swap_remove(0));
        }
        let suffix = parts.pop().expect("two or more");
        let prefix = parts.remove(0);
        let middle = parts
            .iter()
            .filter(|part| !part.is_empty())
            .map(|part| Finder::new(part.as_bytes()).into_owned())
            .collect();
        Self::Parts {
            prefix,
            middle,
            suffix,
        }
    }
}

/// `prefix`, then each of `middle` in order, then `suffix`, with anything
/// around them.
fn parts_match(prefix: &str, middle: &[Finder<'_>], suffix: &str, text: &str) -> bool {
    let text = text.as_bytes();
    // Empty ends are skipped, not compared: an empty `String` points
    // nowhere, and glibc's AVX-512 `memcmp` takes ~40 ns on such a pointer
    // even for zero bytes (a masked load of an unmapped page), four times
    // per listed tool with `allow = ["*"]`.
    if text.len() < prefix.len() + suffix.len()
        || !(prefix.is_empty() || text.starts_with(prefix.as_bytes()))
        || !(suffix.is_empty() || text.ends_with(suffix.as_bytes()))
    {
        return false;
    }
    let mut rest = &text[prefix.len()..text.len() - suffix.len()];
    for part in middle {
        let found = if rest.len() <= SHORT {
            find_short(part.needle(), rest)
        } else {
            part.find(rest)
        };
        match found {
            Some(at) => rest = &rest[at + part.needle().len()..],
            None => return false,
        }
    }
    true
}

/// What is wrong with a glob.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GlobFault {
    #[error("unclosed [")]
    Unclosed,
    #[error("a trailing \\ escapes nothing")]
    TrailingEscape,
    #[error("range {0}-{1} is backwards")]
    Backwards(char, char),
}

/// Reads a `[...]` class (the `[` already taken).
fn class(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    uri: bool,
) -> Result<Piece, GlobFault> {
    let negated = matches!(chars.peek(), Some('!' | '^'));
    if negated {
        chars.next();
    }
    let mut ranges = Vec::new();
    let mut first = true;
    loop {
        let c = match chars.next() {
            None => return Err(GlobFault::Unclosed),
            // `]` first in the class is a member, as in POSIX: `[]]`.
            Some(']') if !first => break,
            Some('\\') => chars.next().ok_or(GlobFault::TrailingEscape)?,
            Some(c) => c,
        };
        first = false;
        let mut ahead = chars.clone();
        if ahead.next() == Some('-') && !matches!(ahead.peek(), Some(']') | None) {
            chars.next();
            let hi = match chars.next() {
                Some('\\') => chars.next().ok_or(GlobFault::TrailingEscape)?,
                Some(hi) => hi,
                None => return Err(GlobFault::Unclosed),
            };
            if hi < c {
                return Err(GlobFault::Backwards(c, hi));
            }
            ranges.push((c, hi));
        } else {
            ranges.push((c, c));
        }
    }
    // A negated class stops at `/` in a URI, as `?` does; a positive class
    // that names `/` may match it, because the user wrote it.
    Ok(Piece::Class {
        negated,
        ranges,
        slash: !uri,
    })
}

/// Up to this many bytes, a text is searched byte by byte: a tool's name is
/// too short for `memmem`'s set-up to pay (see docs/benchmarks.md).
const SHORT: usize = 64;

/// Where `needle` (not empty) first occurs in `haystack`, byte by byte:
/// for a haystack of up to [`SHORT`] bytes.
fn find_short(needle: &[u8], haystack: &[u8]) -> Option<usize> {
    let (&first, tail) = needle.split_first()?;
    let last_start = haystack.len().checked_sub(needle.len())?;
    (0..=last_start).find(|&at| {
        haystack[at] == first
            && haystack[at + 1..at + needle.len()]
                .iter()
                .zip(tail)
                .all(|(a, b)| a == b)
    })
}
