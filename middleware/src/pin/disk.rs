//! The pin file as it stands on disk: its format, read and written whole.
//! (What the pins mean, and when the file is read again, is `store.rs`.)

use super::error::PinFileError;
use super::fingerprint::{Fields, Kind, Texts};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::SystemTime;

pub(super) const VERSION: u32 = 1;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PinFile {
    pub(super) version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) tools: Option<Section>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) prompts: Option<Section>,
    #[serde(
        default,
        rename = "resourceTemplates",
        skip_serializing_if = "Option::is_none"
    )]
    pub(super) templates: Option<Section>,
}

pub(super) type Section = BTreeMap<String, Entry>;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Entry {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) pinned: Option<Fields>,
    /// What was pinned, as text, for a person to compare (files written
    /// before mcp-chain kept it have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) texts: Option<Texts>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) pending: Option<Pending>,
}

/// A definition seen that differs from its pin (or has none).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Pending {
    /// When it was first seen so.
    pub(super) seen: String,
    /// The fields that differ from the pin; empty for a new one.
    pub(super) changed: Vec<String>,
    pub(super) fields: Fields,
    /// What was seen, as text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) texts: Option<Texts>,
    /// The `scan` rules that flag what was seen: accepted only by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) flagged: Vec<String>,
}

/// A definition that is not as pinned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drift {
    pub(crate) kind: Kind,
    pub name: String,
    /// The fields that changed; empty when it was never pinned (new).
    pub changed: Vec<String>,
    /// The `scan` rules that flag what was seen (none: nothing found).
    pub flagged: Vec<String>,
}

impl Drift {
    /// The kind, in words (`tool`, `prompt`, `resource template`).
    pub fn kind(&self) -> &'static str {
        self.kind.word()
    }

    /// What drifted, for messages: `changed (description, inputSchema)` or
    /// `new`.
    pub fn what(&self) -> String {
        let what = self.how();
        if self.flagged.is_empty() {
            return what;
        }
        // Read from a file: shown as text a person can trust.
        let rules: Vec<String> = self
            .flagged
            .iter()
            .map(|r| crate::shown::shown(r, 64))
            .collect();
        format!("{what}, flagged by scan ({})", rules.join(", "))
    }

    fn how(&self) -> String {
        if self.changed.is_empty() {
            "new".to_owned()
        } else {
            // Read from a file: shown as text a person can trust.
            let fields: Vec<String> = self
                .changed
                .iter()
                .map(|f| crate::shown::shown(f, 64))
                .collect();
            format!("changed ({})", fields.join(", "))
        }
    }
}

impl PinFile {
    pub(super) fn section(&self, kind: Kind) -> Option<&Section> {
        match kind {
            Kind::Tool => self.tools.as_ref(),
            Kind::Prompt => self.prompts.as_ref(),
            Kind::Template => self.templates.as_ref(),
        }
    }

    pub(super) fn section_mut(&mut self, kind: Kind) -> &mut Section {
        match kind {
            Kind::Tool => &mut self.tools,
            Kind::Prompt => &mut self.prompts,
            Kind::Template => &mut self.templates,
        }
        .get_or_insert_with(Section::new)
    }
}

pub(super) fn read(path: &Path) -> Result<Option<PinFile>, PinFileError> {
    use std::io::ErrorKind;
    let text = match std::fs::read(path) {
        Ok(text) => text,
        // No file yet, or a parent that is not a directory (which the
        // store reports as such).
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
            return Ok(None);
        }
        Err(why) => {
            return Err(PinFileError::Open {
                path: path.to_owned(),
                why,
            })
        }
    };
    let file: PinFile = serde_json::from_slice(&text).map_err(|why| PinFileError::Unreadable {
        path: path.to_owned(),
        why,
    })?;
    if file.version != VERSION {
        return Err(PinFileError::Version {
            path: path.to_owned(),
            found: file.version,
        });
    }
    Ok(Some(file))
}

pub(super) fn stamp(path: &Path) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

/// Writes `file` to `path` whole, private to the user (see
/// [`mcp_chain_private`]: never through a planted temporary file).
pub(super) fn write(path: &Path, file: &PinFile) -> Result<(), PinFileError> {
    let mut text = serde_json::to_vec_pretty(file).expect("pins serialize");
    text.push(b'\n');
    mcp_chain_private::write_whole(path, &text).map_err(|why| PinFileError::Write {
        path: path.to_owned(),
        why,
    })
}

/// Every drift in `file`, by kind and name.
pub(super) fn drifts(file: &PinFile) -> Vec<Drift> {
    let mut drifts = Vec::new();
    for kind in Kind::ALL {
        for (name, entry) in file.section(kind).into_iter().flatten() {
            if let Some(pending) = &entry.pending {
                drifts.push(Drift {
                    kind,
                    name: name.clone(),
                    changed: pending.changed.clone(),
                    flagged: pending.flagged.clone(),
                });
            }
        }
    }
    drifts
}
