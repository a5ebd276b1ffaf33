//! Reading one text, one listed item or one result with the rules, and
//! cutting what they found out of a text (`redact`).

use super::normal::{decoded, Normal};
use super::rules::{Place, PlaceSet, Rule, INVISIBLE, OVERSIZED};
use serde_json::{Map, Value};
use std::ops::Range;

/// What replaces the text a rule found in a result or in instructions.
pub(super) const REMOVED: &str = "[mcp-chain: removed instructions]";

/// One rule's find.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Finding {
    pub(super) rule: String,
    /// Where in the item: `description`, `inputSchema`, `title`,
    /// `annotations`, `name`, …; `result`; `instructions`.
    pub(super) field: String,
}

/// The rules of one `scan` layer, and their patterns as a set per place.
#[derive(Debug, Clone)]
pub(super) struct Scanner {
    rules: Vec<Rule>,
    /// Descriptions, results, instructions.
    sets: [PlaceSet; 3],
}

/// How much of a text is read at once, and how much two windows share.
pub(super) const WINDOW: usize = 64 * 1024;
const OVERLAP: usize = 2 * 1024;

/// The char boundary at or before `at` (the end past it).
fn boundary(text: &str, at: usize) -> usize {
    if at >= text.len() {
        return text.len();
    }
    (0..=at)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0)
}

/// A description longer than this, plus [`PER_INPUT`] for each input the
/// tool takes, says more than a tool needs to.
pub(super) const LONGEST: usize = 2_000;
const PER_INPUT: usize = 300;

impl Scanner {
    pub(super) fn new(rules: Vec<Rule>) -> Self {
        let sets = PlaceSet::per_place(&rules);
        Scanner { rules, sets }
    }

    fn set(&self, place: Place) -> &PlaceSet {
        match place {
            Place::Descriptions => &self.sets[0],
            Place::Results => &self.sets[1],
            Place::Instructions => &self.sets[2],
        }
    }

    /// The rules that match `text` read at `place`, each with the byte
    /// range of `text` it matched (the whole segment for a match in an
    /// encoded one).
    pub(super) fn text(&self, text: &str, place: Place) -> Vec<(&str, Range<usize>)> {
        if text.len() <= WINDOW {
            return self.window(text, place);
        }
        // A long text is read a window at a time (the normal text and its
        // map back stay bounded), each overlapping the last by more than
        // any rule's match spans.
        let mut found: Vec<(&str, Range<usize>)> = Vec::new();
        let mut start = 0;
        while start < text.len() {
            let end = boundary(text, start + WINDOW);
            for (rule, at) in self.window(&text[start..end], place) {
                let at = start + at.start..start + at.end;
                if !found
                    .iter()
                    .any(|(r, a)| *r == rule && a.start < at.end && at.start < a.end)
                {
                    found.push((rule, at));
                }
            }
            if end == text.len() {
                break;
            }
            start = boundary(text, end - OVERLAP);
        }
        found
    }

    fn window(&self, text: &str, place: Place) -> Vec<(&str, Range<usize>)> {
        let normal = Normal::of(text);
        let mut found: Vec<(&str, Range<usize>)> = Vec::new();
        let hiding = normal.invisible.iter().find(|(c, _)| match place {
            // A result may join emoji or mark a soft hyphen: only what
            // hides text (tags) or reorders it (bidi overrides) counts.
            Place::Results => matches!(c, '\u{E0000}'..='\u{E007F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'),
            _ => true,
        });
        if let Some((c, at)) = hiding {
            found.push((INVISIBLE, *at..*at + c.len_utf8()));
        }
        let set = self.set(place);
        let mut seen: Vec<usize> = Vec::new();
        // Two built-in rules may share an id (one reading fewer places):
        // a finding is one per id.
        for (r, rule, at) in set.find(&self.rules, &normal.text) {
            seen.push(r);
            if !found.iter().any(|(id, _)| *id == rule.id) {
                found.push((&rule.id, normal.original(at)));
            }
        }
        // Encoded segments: decoded once, read by the rules not found yet.
        for (segment, range) in decoded(text) {
            for (r, rule, _) in set.find(&self.rules, &Normal::of(&segment).text) {
                if !seen.contains(&r) {
                    seen.push(r);
                    if !found.iter().any(|(id, _)| *id == rule.id) {
                        found.push((&rule.id, range.clone()));
                    }
                }
            }
        }
        found
    }

    /// The findings in each listed item, in order. Every item's text is
    /// read by the rules in one pass first (a clean listing, the common
    /// case, costs that pass); only when it matches somewhere is each
    /// item read field by field. Texts are joined by a line break, which
    /// no match needs to cross, so the pass misses nothing an item's own
    /// reading would find.
    pub(super) fn items(&self, items: &[&Map<String, Value>]) -> Vec<Vec<Finding>> {
        let mut strings = Vec::new();
        for item in items {
            for value in item.values() {
                strings_in(value, &mut strings, true);
            }
        }
        if self
            .text(&strings.join("\n"), Place::Descriptions)
            .is_empty()
        {
            return items
                .iter()
                .map(|item| oversized(item).into_iter().collect())
                .collect();
        }
        items.iter().map(|item| self.item(item)).collect()
    }

    /// The findings in a listed item (a tool, prompt, resource or
    /// template), by the field they are in.
    pub(super) fn item(&self, item: &Map<String, Value>) -> Vec<Finding> {
        let mut findings = Vec::new();
        for (field, value) in item {
            let mut strings = Vec::new();
            strings_in(value, &mut strings, true);
            // A field's strings read as one text, a line each.
            let text = strings.join("\n");
            for (rule, _) in self.text(&text, Place::Descriptions) {
                let finding = Finding {
                    rule: rule.to_owned(),
                    field: field.clone(),
                };
                if !findings.contains(&finding) {
                    findings.push(finding);
                }
            }
        }
        findings.extend(oversized(item));
        findings
    }

    /// Reads every text a result carries (content `text`, embedded
    /// resources, `structuredContent` strings, prompt messages); with
    /// `cut`, replaces each sentence a rule found by [`REMOVED`]. The rule
    /// ids found, once each.
    pub(super) fn result(&self, value: &mut Value, cut: bool) -> Vec<String> {
        let mut found = Vec::new();
        self.result_at(value, cut, false, &mut found);
        found
    }

    fn result_at(&self, value: &mut Value, cut: bool, structured: bool, found: &mut Vec<String>) {
        match value {
            Value::String(text) if structured => self.one(text, Place::Results, cut, found),
            Value::Array(items) => items
                .iter_mut()
                .for_each(|v| self.result_at(v, cut, structured, found)),
            Value::Object(map) => {
                for (key, v) in map.iter_mut() {
                    match (key.as_str(), v) {
                        ("text", Value::String(text)) => self.one(text, Place::Results, cut, found),
                        ("structuredContent", v) => self.result_at(v, cut, true, found),
                        (_, v) => self.result_at(v, cut, structured, found),
                    }
                }
            }
            _ => {}
        }
    }

    /// Reads `text` at `place`; with `cut`, replaces what was found.
    pub(super) fn one(&self, text: &mut String, place: Place, cut: bool, found: &mut Vec<String>) {
        let matches = self.text(text, place);
        for (rule, _) in &matches {
            if !found.iter().any(|f| f == rule) {
                found.push((*rule).to_owned());
            }
        }
        if cut && !matches.is_empty() {
            let ranges: Vec<Range<usize>> = matches.into_iter().map(|(_, r)| r).collect();
            *text = cut_sentences(text, ranges);
        }
    }
}

/// The oversized-description finding, when an item's description is
/// longer than its inputs justify.
fn oversized(item: &Map<String, Value>) -> Option<Finding> {
    let Some(Value::String(description)) = item.get("description") else {
        return None;
    };
    let inputs = item
        .get("inputSchema")
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
        .map_or(0, Map::len);
    (description.chars().count() > LONGEST + PER_INPUT * inputs).then(|| Finding {
        rule: OVERSIZED.to_owned(),
        field: "description".to_owned(),
    })
}

/// Every string in `value`; object keys too when `keys` (a schema's
/// property names are text a model reads).
fn strings_in<'a>(value: &'a Value, out: &mut Vec<&'a str>, keys: bool) {
    match value {
        Value::String(s) => out.push(s),
        Value::Array(items) => items.iter().for_each(|v| strings_in(v, out, keys)),
        Value::Object(map) => {
            for (k, v) in map {
                if keys {
                    out.push(k);
                }
                strings_in(v, out, keys);
            }
        }
        _ => {}
    }
}

/// `text` with each sentence (or line) holding one of `ranges` replaced
/// by [`REMOVED`]: an instruction cut at its match would leave the rest
/// of the order standing.
fn cut_sentences(text: &str, ranges: Vec<Range<usize>>) -> String {
    // A sentence ends at `.`, `!` or `?` before white space (not the dot
    // of a host name), or at a line's end.
    let ends_at = |at: usize, c: char| {
        c == '\n'
            || (matches!(c, '.' | '!' | '?')
                && text[at + 1..]
                    .chars()
                    .next()
                    .is_none_or(char::is_whitespace))
    };
    // The sentence ending at or after `from`: where the next one starts.
    let sentence_end = |from: usize| {
        text[from..]
            .char_indices()
            .find(|&(at, c)| ends_at(from + at, c))
            .map_or(text.len(), |(at, _)| from + at + 1)
    };
    // Each range's sentence, in order, those that overlap joined. Each
    // byte is looked at once: a sentence's start is looked for back to the
    // end of the one cut before it at most (which ends a sentence), its end
    // forward from the range (a text with no sentence end and a match
    // every window would otherwise be read once per match).
    let mut ranges = ranges;
    ranges.sort_by_key(|r| r.start);
    // Whether a sentence ends just before `at`.
    let ends_before = |at: usize| {
        text[..at]
            .char_indices()
            .next_back()
            .is_some_and(|(at, c)| ends_at(at, c))
    };
    let mut spans: Vec<Range<usize>> = Vec::new();
    for r in ranges {
        if let Some(last) = spans.last_mut() {
            // In the sentence cut before it: the range starts inside that
            // cut, or the cut ran to the text's end without ending one.
            if r.start < last.end || (last.end > 0 && !ends_before(last.end)) {
                if r.end >= last.end {
                    last.end = sentence_end(r.end);
                }
                continue;
            }
        }
        // Back to the cut before it at most: that one ended a sentence.
        let floor = spans.last().map_or(0, |s| s.end);
        let start = text[floor..r.start]
            .char_indices()
            .rev()
            .find(|&(at, c)| ends_at(floor + at, c))
            .map_or(floor, |(at, _)| floor + at + 1);
        spans.push(start..sentence_end(r.end));
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for span in spans {
        out.push_str(&text[at..span.start]);
        if span.start > 0 && text[..span.start].ends_with(|c: char| !c.is_whitespace()) {
            out.push(' ');
        }
        out.push_str(REMOVED);
        at = span.end;
    }
    out.push_str(&text[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cut as first written: each range's sentence looked for from the
    /// range, the spans then joined where they overlap.
    fn cut_each_alone(text: &str, ranges: Vec<Range<usize>>) -> String {
        // A sentence ends at `.`, `!` or `?` before white space (not the dot
        // of a host name), or at a line's end.
        let ends_at = |at: usize, c: char| {
            c == '\n'
                || (matches!(c, '.' | '!' | '?')
                    && text[at + 1..]
                        .chars()
                        .next()
                        .is_none_or(char::is_whitespace))
        };
        let mut spans: Vec<Range<usize>> = ranges
            .into_iter()
            .map(|r| {
                let start = text[..r.start]
                    .char_indices()
                    .rev()
                    .find(|&(at, c)| ends_at(at, c))
                    .map_or(0, |(at, _)| at + 1);
                let end = text[r.end..]
                    .char_indices()
                    .find(|&(at, c)| ends_at(r.end + at, c))
                    .map_or(text.len(), |(at, _)| r.end + at + 1);
                start..end
            })
            .collect();
        spans.sort_by_key(|r| r.start);
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for span in spans {
            if span.start < at {
                // Overlaps the one cut before it.
                at = at.max(span.end);
                continue;
            }
            out.push_str(&text[at..span.start]);
            if span.start > 0 && text[..span.start].ends_with(|c: char| !c.is_whitespace()) {
                out.push(' ');
            }
            out.push_str(REMOVED);
            at = span.end;
        }
        out.push_str(&text[at..]);
        out
    }

    #[test]
    fn sentences_are_cut_as_when_each_range_was_read_alone() {
        let pieces = ["word", " ", ". ", ".", "!", "?x", "\n", "é", "a.b"];
        let mut next = crate::testing::numbers(0x51_7CC1_B727_220A);
        let mut cut = 0;
        for round in 0..4000 {
            let mut text = String::new();
            for _ in 0..(round % 30) {
                text.push_str(pieces[next(pieces.len())]);
            }
            let bounds: Vec<usize> = (0..=text.len())
                .filter(|&b| text.is_char_boundary(b))
                .collect();
            let ranges: Vec<Range<usize>> = (0..next(5))
                .map(|_| {
                    let (a, b) = (bounds[next(bounds.len())], bounds[next(bounds.len())]);
                    a.min(b)..a.max(b)
                })
                .collect();
            let want = cut_each_alone(&text, ranges.clone());
            assert_eq!(
                cut_sentences(&text, ranges.clone()),
                want,
                "{text:?} {ranges:?}"
            );
            cut += usize::from(want != text);
        }
        assert!(cut > 2000, "{cut} texts cut");
    }
}
