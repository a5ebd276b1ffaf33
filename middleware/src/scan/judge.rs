//! What `scan` does with what the rules found: a listing's flagged items
//! noted (and hidden, or the listing refused), a call to a hidden item
//! refused, a result or the server's instructions cut or refused.

use super::rules::Place;
use super::scanner::Finding;
use super::service::{Kind, ListingAction, ResultAction, Shared, LAYER};
use crate::message::Response;
use crate::payload::Payload;
use crate::servers::ServerNames;
use crate::{note, ErrorCode, ErrorObject, Message, RequestId};
use serde_json::{json, Value};
use std::collections::BTreeSet;

/// A listed item as read: its members, or `Err` when it cannot be.
type Read = Result<serde_json::Map<String, Value>, ()>;

impl Shared {
    /// Whether the listing `result` is clean throughout and nothing of
    /// `kind` was flagged before (so no verdict is to be taken back).
    fn clean_listing(&self, kind: Kind, result: &Payload) -> bool {
        let Some(text) = result.text() else {
            return false;
        };
        if crate::lock(&self.flagged)
            .get(&kind)
            .is_some_and(|f| !f.is_empty())
        {
            return false;
        }
        match super::strings::strings_of(text.as_bytes()) {
            Ok((all, longest)) => {
                longest <= super::scanner::LONGEST
                    && self.scanner.text(&all, Place::Descriptions).is_empty()
            }
            Err(_) => false,
        }
    }

    /// Judges the items of `kind` in a listing result: each flagged one
    /// noted, and under `hide` taken out. `Err`: the answer to give
    /// instead (`refuse`, or a listing that cannot be read). With
    /// `servers` (a gateway's shared chain), a tool or prompt naming
    /// another server's is flagged too (`cross.rs`).
    pub(super) fn judge_listing(
        &self,
        kind: Kind,
        result: &mut Payload,
        servers: Option<&ServerNames>,
    ) -> Result<Vec<Value>, Box<ErrorObject>> {
        let (list, name_member) = kind.members();
        let servers = servers.filter(|_| matches!(kind, Kind::Tool | Kind::Prompt));
        let hide = self.actions.listings == ListingAction::Hide;
        let mut noted = Vec::new();
        // Judged without the lock (reading a thousand tools takes
        // milliseconds; other sessions' calls look at what is flagged).
        // A listing whose every string the rules pass, with no
        // description long enough to be oversized, when nothing of its
        // kind is flagged from before (the common case): read in one pass
        // over its text, no item looked at on its own.
        if servers.is_none() && self.clean_listing(kind, result) {
            crate::lock(&self.judged).insert(kind);
            return Ok(Vec::new());
        }
        // Else every item read, kept as it is, then judged.
        let mut items: Vec<(String, Read)> = Vec::new();
        let read = result.edit_items(list, |item| {
            let name = item.str_member(name_member).map(|n| n.into_owned());
            items.push((name.unwrap_or_default(), item.to_map().map_err(|_| ())));
            true
        });
        let maps: Vec<&serde_json::Map<String, Value>> =
            items.iter().filter_map(|(_, m)| m.as_ref().ok()).collect();
        let mut found = self.scanner.items(&maps).into_iter();
        let mut across = match servers {
            Some(servers) => {
                let named: Vec<_> = items
                    .iter()
                    .map(|(name, map)| map.as_ref().ok().map(|m| (name.as_str(), m)))
                    .collect();
                super::cross::findings(servers, &named)
            }
            None => Vec::new(),
        }
        .into_iter();
        let mut judged: Vec<(String, Option<Vec<String>>)> = Vec::new();
        for (name, map) in &items {
            let mut findings = match map {
                Ok(_) => found.next().unwrap_or_default(),
                // What cannot be read cannot be vouched for.
                Err(()) => vec![Finding {
                    rule: "unreadable".into(),
                    field: "item".into(),
                }],
            };
            findings.extend(across.next().unwrap_or_default());
            if findings.is_empty() {
                judged.push((name.clone(), None));
                continue;
            }
            for f in &findings {
                noted.push(
                    json!({"kind": kind.word(), "name": name, "rule": f.rule, "where": f.field}),
                );
            }
            judged.push((
                name.clone(),
                Some(findings.into_iter().map(|f| f.rule).collect()),
            ));
        }
        // Then, under `hide`, the flagged ones taken out (in order: the
        // n-th item read is the n-th judged).
        let mut verdicts = judged.iter().map(|(_, rules)| rules.is_none());
        let edited = match (hide, read) {
            (true, Ok(_)) if !noted.is_empty() => {
                result.edit_items(list, |_| verdicts.next().unwrap_or(false))
            }
            (_, read) => read,
        };
        {
            let mut flagged = crate::lock(&self.flagged);
            let by_name = flagged.entry(kind).or_default();
            for (name, rules) in judged {
                match rules {
                    Some(rules) => by_name.insert(name, rules),
                    None => by_name.remove(&name),
                };
            }
        }
        crate::lock(&self.judged).insert(kind);
        if let Err(e) = edited {
            return Err(Box::new(ErrorObject::refusal(
                ErrorCode::REFUSED,
                LAYER,
                "unreadable",
                &format!("the listing cannot be read ({e})"),
            )));
        }
        if !noted.is_empty() {
            crate::decided!(
                "scan",
                "flagged",
                kind = kind.word(),
                count = crate::decision::int(noted.len())
            );
            if self.actions.listings == ListingAction::Refuse {
                let names: BTreeSet<&str> =
                    noted.iter().filter_map(|n| n["name"].as_str()).collect();
                let shown: Vec<String> =
                    names.iter().map(|n| crate::shown::shown(n, 100)).collect();
                return Err(Box::new(ErrorObject::refusal(
                    ErrorCode::REFUSED,
                    LAYER,
                    "flagged_listing",
                    &format!("the server's {} listing holds what reads as instructions to the model ({}); it is refused", kind.word(), shown.join(", ")),
                )));
            }
        }
        Ok(noted)
    }

    /// The refusal of a call to what a listing showed flagged (`hide`).
    pub(super) fn refusal(&self, id: &RequestId, kind: Kind, name: &str) -> Option<Message> {
        if self.actions.listings != ListingAction::Hide {
            return None;
        }
        let flagged = crate::lock(&self.flagged);
        let rules = flagged.get(&kind)?.get(name)?;
        let message = format!(
            "the {} {:?} was flagged ({}) and is hidden; its calls are refused",
            kind.word(),
            crate::shown::shown(name, 100),
            rules.join(", ")
        );
        let mut error = ErrorObject::refusal(ErrorCode::REFUSED, LAYER, "flagged", &message);
        if let Some(Value::Object(data)) = error.data.as_mut() {
            data.insert("rules".into(), json!(rules));
        }
        crate::decided!("scan", "refused", kind = kind.word());
        Some(Message::error(Some(id.clone()), error))
    }

    /// Reads a result; cuts or refuses as configured.
    pub(super) fn judge_result(&self, response: &mut Response) -> Option<ErrorObject> {
        // A result whose every string the rules pass (the common case) is
        // read where it stands in the message's text: no value built.
        let text = response.result.text();
        if text
            .is_some_and(|t| self.scanner.clean_strings(t.as_bytes(), Place::Results) == Ok(true))
        {
            return None;
        }
        let cut = self.actions.results == ResultAction::Redact;
        let mut found = Vec::new();
        let read = response.result.edit_value(|value| {
            found = self.scanner.result(value, cut);
            cut && !found.is_empty()
        });
        if let Err(e) = read {
            return Some(ErrorObject::refusal(
                ErrorCode::REFUSED,
                LAYER,
                "unreadable",
                &format!("the result cannot be read ({e})"),
            ));
        }
        if found.is_empty() {
            return None;
        }
        let action = match self.actions.results {
            ResultAction::Audit => "flagged",
            ResultAction::Redact => "redacted",
            ResultAction::Refuse => "refused",
        };
        note::add(
            LAYER,
            json!({"findings": found.iter().map(|r| json!({"rule": r, "where": "result"})).collect::<Vec<_>>(), "action": action}),
        );
        crate::decided!(
            "scan",
            "flagged",
            kind = "result",
            count = crate::decision::int(found.len())
        );
        (self.actions.results == ResultAction::Refuse).then(|| {
            ErrorObject::refusal(
                ErrorCode::REFUSED,
                LAYER,
                "flagged_result",
                &format!(
                    "the result holds what reads as instructions to the model ({}); it is refused",
                    found.join(", ")
                ),
            )
        })
    }

    /// Reads the server's `initialize` instructions; cuts them as
    /// configured.
    pub(super) fn judge_instructions(&self, response: &mut Response) {
        let cut = self.actions.instructions;
        let mut found = Vec::new();
        let _ = response.result.edit_value(|value| {
            let Some(Value::String(text)) = value.get_mut("instructions") else {
                return false;
            };
            self.scanner.one(text, Place::Instructions, cut, &mut found);
            cut && !found.is_empty()
        });
        if !found.is_empty() {
            let action = if cut { "redacted" } else { "flagged" };
            note::add(
                LAYER,
                json!({"findings": found.iter().map(|r| json!({"rule": r, "where": "instructions"})).collect::<Vec<_>>(), "action": action}),
            );
            crate::decided!(
                "scan",
                "flagged",
                kind = "instructions",
                count = crate::decision::int(found.len())
            );
        }
    }
}
