//! Whether any of a set's patterns matches a text, asked of one lazy DFA
//! walking several stretches of the text at once.
//!
//! Most text `scan` reads matches no rule, and asking whether anything
//! matches is most of what reading it costs: one automaton step a byte,
//! each step a table read that waits on the one before it. On the 2-core
//! machine that wait is the whole cost (2.1–2.4 ns a byte whatever the
//! text, the same for an Aho-Corasick automaton over the rules' literals).
//! Walks over different stretches do not wait on each other, so the text
//! is cut into [`LANES`] stretches walked in turn a byte each: the processor
//! overlaps their reads.
//!
//! A stretch's walk starts as a search started there would (the byte
//! before it is looked at, as a word boundary needs); it misses a match
//! that began in the stretch before, so every walk but the last goes on
//! past its stretch's end until its state is the one the next walk had at
//! the same place (from there on both walks are the same walk, and the
//! next one has read on). A match in any walk is a match in the text. What
//! a stretch's walk cannot settle (a state that does not settle within a
//! stretch, a byte the automaton gives up on, states thrown away while
//! reading) is left to the set's own search of the whole text: the answer
//! is always the set's. A walk goes at most a stretch past its own before
//! it is left unsettled, so a text made to hold walks open (an opened URL
//! never closed, for a rule reading URLs) costs at most the walks, three
//! stretches walked alone and the set's search: under three times the
//! set's search alone.

use regex_automata::hybrid::dfa::{Cache, DFA};
use regex_automata::hybrid::LazyStateID;
use regex_automata::nfa::thompson;
use regex_automata::util::pool::Pool;
use regex_automata::util::syntax;
use regex_automata::{Input, MatchKind};

/// How many stretches are walked at once.
const LANES: usize = 4;
/// The shortest stretch: a shorter text is left to the set's search.
const SHORTEST: usize = 1024;
/// A walk's state is kept every this many bytes, to be met by the walk
/// before it.
const EVERY: usize = 64;

type Make =
    Box<dyn Fn() -> Walks + Send + Sync + std::panic::UnwindSafe + std::panic::RefUnwindSafe>;

/// One lazy DFA for a set's patterns, and what walking it needs.
pub(super) struct Lanes {
    dfa: DFA,
    walks: Pool<Walks, Make>,
}

impl std::fmt::Debug for Lanes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lanes").finish_non_exhaustive()
    }
}

/// The automaton's states, and each walk's kept states.
struct Walks {
    cache: Cache,
    kept: [Vec<LazyStateID>; LANES],
}

/// Why a walk stopped.
enum Stop {
    Match,
    /// Left to the set's search.
    Unsettled,
}

impl Lanes {
    /// The set's patterns as `regex::bytes::RegexSet` reads them (no UTF-8
    /// required, every pattern's match counted); `None` when the lazy DFA
    /// cannot be built for them, and the set alone answers.
    pub(super) fn new<P: AsRef<str>>(patterns: &[P], states: usize) -> Option<Self> {
        let dfa = DFA::builder()
            .configure(
                DFA::config()
                    .match_kind(MatchKind::All)
                    .cache_capacity(states)
                    .unicode_word_boundary(true),
            )
            .syntax(syntax::Config::new().utf8(false))
            .thompson(
                thompson::Config::new()
                    .utf8(false)
                    .which_captures(thompson::WhichCaptures::None)
                    .nfa_size_limit(Some(10 << 20)),
            )
            .build_many(patterns)
            .ok()?;
        let made = dfa.clone();
        let make: Make = Box::new(move || Walks {
            cache: made.create_cache(),
            kept: Default::default(),
        });
        Some(Lanes {
            dfa,
            walks: Pool::new(make),
        })
    }

    /// Whether a pattern matches `text`: `None` when the walks could not
    /// settle it or it is too short to cut.
    pub(super) fn is_match(&self, text: &[u8]) -> Option<bool> {
        if text.len() < LANES * SHORTEST {
            return None;
        }
        let mut walks = self.walks.get();
        let Walks { cache, kept } = &mut *walks;
        match self.walk(cache, kept, text) {
            Ok(()) => Some(false),
            Err(Stop::Match) => Some(true),
            Err(Stop::Unsettled) => None,
        }
    }

    fn walk(
        &self,
        cache: &mut Cache,
        kept: &mut [Vec<LazyStateID>; LANES],
        text: &[u8],
    ) -> Result<(), Stop> {
        let clears = cache.clear_count();
        let stretch = text.len() / LANES;
        let starts: [usize; LANES] = std::array::from_fn(|j| j * stretch);
        let mut at = [LazyStateID::default(); LANES];
        for j in 0..LANES {
            let input = Input::new(text).range(starts[j]..);
            at[j] = self
                .dfa
                .start_state_forward(cache, &input)
                .map_err(|_| Stop::Unsettled)?;
            // A set with no pattern starts dead: nothing to walk.
            if at[j].is_tagged() {
                return Err(Stop::Unsettled);
            }
            kept[j].clear();
        }
        // Every walk a byte in turn, over the bytes all stretches have.
        let steps = stretch / EVERY * EVERY;
        let stretches = starts.map(|s| text[s..s + steps].as_chunks::<EVERY>().0);
        for k in 0..steps / EVERY {
            let chunks = stretches.map(|stretch| &stretch[k]);
            for i in 0..EVERY {
                let bytes = chunks.map(|chunk| chunk[i]);
                let next: [LazyStateID; LANES] =
                    std::array::from_fn(|j| self.dfa.next_state_untagged(cache, at[j], bytes[j]));
                if next.iter().fold(false, |any, n| any | n.is_tagged()) {
                    self.settle(cache, clears, &mut at, next, bytes)?;
                } else {
                    at = next;
                }
            }
            for (kept, state) in kept.iter_mut().zip(at) {
                kept.push(state);
            }
        }
        // Then each walk alone: the last to the text's end, every other on
        // into the stretches after its own until it meets a later walk.
        for j in 0..LANES {
            let end = if j + 1 == LANES {
                text.len()
            } else {
                starts[j + 1]
            };
            let mut state = at[j];
            for &byte in &text[starts[j] + steps..end] {
                state = self.step(cache, clears, state, byte)?;
            }
            if j + 1 == LANES {
                return self.end(cache, clears, state);
            }
            self.meet(cache, clears, state, &starts[j + 1..], &kept[j + 1..], text)?;
        }
        Ok(())
    }

    /// Walks on from `starts[0]` in `state`, comparing with the states
    /// each later walk kept, until it meets one. A walk that meets none
    /// within a stretch is left unsettled.
    fn meet(
        &self,
        cache: &mut Cache,
        clears: usize,
        mut state: LazyStateID,
        starts: &[usize],
        kept: &[Vec<LazyStateID>],
        text: &[u8],
    ) -> Result<(), Stop> {
        let start = starts[0];
        let budget = starts.get(1).unwrap_or(&text.len()) - start;
        let mut walked = 0;
        for (k, next) in starts.iter().enumerate() {
            let end = starts.get(k + 1).copied().unwrap_or(text.len());
            let mut at = *next;
            for &then in &kept[k] {
                for &byte in &text[at..at + EVERY] {
                    state = self.step(cache, clears, state, byte)?;
                }
                at += EVERY;
                if state == then {
                    return Ok(());
                }
                walked += EVERY;
                if walked >= budget {
                    return Err(Stop::Unsettled);
                }
            }
            // The last walk's bytes past what it kept were its own to the
            // end: nothing to meet there but the text's end.
            for &byte in &text[at..end] {
                state = self.step(cache, clears, state, byte)?;
            }
            walked += end - at;
        }
        self.end(cache, clears, state)
    }

    /// The text's end: a match waits a byte, so the end is one more step.
    fn end(&self, cache: &mut Cache, clears: usize, state: LazyStateID) -> Result<(), Stop> {
        let last = self
            .dfa
            .next_eoi_state(cache, state)
            .map_err(|_| Stop::Unsettled)?;
        if cache.clear_count() != clears {
            return Err(Stop::Unsettled);
        }
        match last.is_match() {
            true => Err(Stop::Match),
            false => Ok(()),
        }
    }

    /// One byte. A state not built yet is built; if that threw the built
    /// states away, every walk's state and every kept state is gone with
    /// them, and the text is left to the set.
    #[inline(always)]
    fn step(
        &self,
        cache: &mut Cache,
        clears: usize,
        state: LazyStateID,
        byte: u8,
    ) -> Result<LazyStateID, Stop> {
        let next = self.dfa.next_state_untagged(cache, state, byte);
        if !next.is_tagged() {
            return Ok(next);
        }
        self.special(cache, clears, state, next, byte)
    }

    /// The steps where a walk's next state is not an ordinary one.
    #[cold]
    #[inline(never)]
    fn settle(
        &self,
        cache: &mut Cache,
        clears: usize,
        states: &mut [LazyStateID; LANES],
        next: [LazyStateID; LANES],
        bytes: [u8; LANES],
    ) -> Result<(), Stop> {
        for j in 0..LANES {
            states[j] = match next[j].is_tagged() {
                true => self.special(cache, clears, states[j], next[j], bytes[j])?,
                false => next[j],
            };
        }
        Ok(())
    }

    #[inline(never)]
    fn special(
        &self,
        cache: &mut Cache,
        clears: usize,
        state: LazyStateID,
        mut next: LazyStateID,
        byte: u8,
    ) -> Result<LazyStateID, Stop> {
        if next.is_unknown() {
            next = self
                .dfa
                .next_state(cache, state, byte)
                .map_err(|_| Stop::Unsettled)?;
            if cache.clear_count() != clears {
                return Err(Stop::Unsettled);
            }
        }
        if next.is_match() {
            return Err(Stop::Match);
        }
        // Dead (no match can come) or quit (a byte a Unicode word boundary
        // cannot be read across): neither is walked on.
        match next.is_tagged() {
            true => Err(Stop::Unsettled),
            false => Ok(next),
        }
    }
}

#[cfg(test)]
#[path = "lanes_tests.rs"]
mod tests;
