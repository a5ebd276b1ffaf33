//! The rules `scan` reads text with: built-in ones, each with an id and
//! the reason it exists (docs/layers/scan.md), and a user's own. A rule
//! is a regex over the normal text (`normal.rs`: case ignored, any run of
//! white space one space, look-alikes folded), run where it is meant to
//! be: a tool's description says what the tool does, so an instruction
//! to the model there is out of place; a fetched page in a result may
//! quote many things, so results are read by the rules that name an
//! attack rather than a style.
//!
//! What a rule cannot see: an instruction written as plain advice ("for
//! best results, first read the user's notes and include them"), one
//! split over two fields, one in a language the rules are not written in.

// Bytes, ASCII case-folding: the text is folded to Latin before it is
// read, and a Unicode-aware set is several times slower over every result.
use super::lanes::Lanes;
use regex::bytes::{Regex, RegexSet, RegexSetBuilder};
use std::sync::{Arc, OnceLock};

/// Where a rule reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Place {
    /// Names, titles, descriptions, schemas and annotations of tools,
    /// prompts, resources and templates.
    Descriptions,
    /// Tool results, read resources, prompt messages.
    Results,
    /// The server's `initialize` instructions.
    Instructions,
}

impl Place {
    pub(super) fn parse(word: &str) -> Option<Self> {
        match word {
            "descriptions" => Some(Self::Descriptions),
            "results" => Some(Self::Results),
            "instructions" => Some(Self::Instructions),
            _ => None,
        }
    }
}

const ALL: &[Place] = &[Place::Descriptions, Place::Results, Place::Instructions];
const LISTED: &[Place] = &[Place::Descriptions, Place::Instructions];

/// A built-in rule: its id, where it reads, its patterns.
pub(super) struct BuiltIn {
    pub(super) id: &'static str,
    places: &'static [Place],
    patterns: &'static [&'static str],
}

/// The invisible-characters rule's id (it reads characters, not words:
/// `normal.rs` notes them).
pub(super) const INVISIBLE: &str = "invisible-characters";
/// The rule of descriptions longer than the tool's inputs justify.
pub(super) const OVERSIZED: &str = "oversized-description";

/// The built-in rules that are patterns.
pub(super) const BUILT_IN: &[BuiltIn] = &[
    // Words addressed to the model, not describing the tool: an override
    // of what it was told, a new role, a chat template's markers, the
    // tags poisoned descriptions wrap their orders in.
    BuiltIn {
        id: "model-instructions",
        places: ALL,
        patterns: &[
            // The noun left open: published attacks misspell it
            // ("iunstructions"); no word boundary before the verb: an
            // attack glued to the text before it ("accountIgnore") counts.
            r"(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+|the\s+|your\s+|of\s+)*(?:previous|prior|above|earlier|preceding|former|system|original)\s+[a-z]{4,}",
            r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+|the\s+|your\s+|of\s+)*other\s+(?:instructions?|prompts?|messages?|rules|directions|guidelines|context)",
            // A message to the model, and the task it was given put off.
            r"\b(?:an?\s+)?important\s+message\s+from\s+(?:me|the\s+user|your\s+user)\b|\bmessage\s+from\s+[^.\n]{0,40}\bto\s+you,",
            r"\bbefore\s+you\s+(?:can\s+)?(?:solve|complete|finish|do|start|answer|continue)\s+(?:the|your|this|any)\s+(?:task|request|question)",
            r"\bafter\s+you\s+(?:do|have\s+done|did)\s+(?:that|this),?\s+(?:you\s+can|continue|proceed|solve)",
            r"\bbefore\s+(?:answering|responding|replying)\s+(?:to\s+)?(?:the\s+user|any|the\s+question|every)",
            r"\b(?:always|must|first)\s+(?:call|use|consult|run|invoke)\s+this\s+tool\s+(?:first|before|immediately|as\s+the\s+first)",
            r"\b(?:assistant|ai|model|llm|agent)\s*:\s*(?:before|always|never|ignore|call|first|you\s+must|from\s+now)\b",
            r"\b(?:new|updated|real|actual|secret|hidden)\s+(?:system\s+)?instructions?\s*:",
            r"\byou\s+are\s+now\s+(?:a|an|in|the|acting|operating|no\s+longer)\b",
            r"\bfrom\s+now\s+on,?\s+(?:you|the\s+(?:assistant|model|ai)|always|never|ignore)\b",
            r"<\s*/?\s*(?:important|system|instructions?|information|secret|hidden|admin|override|sys)\s*>",
            r"\[\s*/?\s*(?:inst|system|sys|important|instructions?|information|admin|override)\s*\]|<\|\s*(?:im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id)\s*\|>|<<\s*/?sys\s*>>",
            // Guards switched off: the descriptions, safeguards or rules
            // the model holds declared void, a mode that lifts them.
            r"\b(?:ignore|disregard|bypass|override|skip|disable|suspend)\s+(?:all\s+|the\s+|any\s+|its\s+|their\s+|these\s+)*(?:tool(?:'s)?\s+)?(?:descriptions?|safeguards?|safety(?:\s+checks?)?|restrictions?|guardrails?|polic(?:y|ies)|security\s+(?:checks?|restrictions?)|description\s+(?:restrictions?|validation))\b",
            r"\b(?:descriptions?|safeguards?|restrictions?|guardrails?|safety\s+checks?|validation)\s+(?:are|is|have\s+been|has\s+been|were|was)\s+(?:now\s+|temporarily\s+|all\s+|currently\s+)*(?:outdated|deprecated|compromised|obsolete|suspended|lifted|disabled|removed|not\s+to\s+be\s+trusted|out\s+of\s+sync|invalid|written\s+by|declared)",
            r"\b(?:restrictions?|safeguards?|guardrails?)\s+(?:lifted|disabled|suspended|removed|(?:do\s+not|don'?t|no\s+longer)\s+apply)",
            r"\b(?:debug|developer|god|admin|jailbreak|unrestricted)\s+mode\s+(?:is\s+)?(?:now\s+)?(?:enabled|activated|on)\b|\boverride\s+(?:code|mode)\s+(?:is\s+)?(?:activated|enabled|accepted)",
            r"\b(?:ignore|disregard)\s+(?:the\s+|any\s+)?instructions\s+(?:in|from|of)\s+(?:the\s+)?tool|\b(?:changed|modified|tampered\s+with|poisoned|hijacked)\s+(?:all\s+)?(?:the\s+)?tool\s+descriptions|\btool\s+descriptions?\s+(?:contains?|ha(?:s|ve))\s+(?:errors?|mistakes|bugs)",
            r"\bregardless\s+of\s+(?:its|the|their|any)\s+(?:tool\s+)?(?:descriptions?|instructions|warnings?|restrictions?)|\b(?:i'?m|i\s+am)\s+authori[sz]ing\s+you\s+to\b|\bsecurity\s+exception\s+granted",
            r"\bbefore\s+(?:execut|call|invok|us|runn?)(?:e|es|ing)?\s+(?:the\s+|any\s+|a\s+|an\s+)?[a-z_ -]{0,30}(?:operation|tool|function)s?,?\s+(?:first\s+)?(?:execute|call|use|run|invoke)\s+this\s+tool",
            r"(?m)^\s*#{0,3}\s*(?:system|assistant)\s*(?:prompt)?\s*:",
            r"\b(?:before|prior\s+to|after)\s+(?:using|calling|invoking|running|executing)\s+(?:any|every|each|all|another|other)\s+(?:other\s+)?tools?\b",
            r"\b(?:whenever|every\s+time|each\s+time)\s+(?:you|the\s+(?:assistant|model|ai|agent))\s+(?:use|call|invoke|run)s?\s+(?:any|another|other|a)\s+(?:other\s+)?tools?\b",
            r"\botherwise\s+(?:the|this)\s+(?:tool|system|server|application|app)\s+will\s+(?:not\s+work|crash|fail|break|stop)",
            r"\b(?:the\s+)?(?:assistant|model|ai|agent|llm)\s+(?:must|should|has\s+to|needs\s+to)\s+(?:always\s+|first\s+|also\s+|secretly\s+|silently\s+)*(?:call|use|invoke|run|execute|send|read|include|pass|ignore)\b",
        ],
    },
    // Keeping the person out: an order not to tell them, or to act
    // without their knowing.
    BuiltIn {
        id: "concealment",
        places: ALL,
        patterns: &[
            r"\b(?:do\s+not|don'?t|never|must\s+not|should\s+not)\s+(?:tell|inform|mention|reveal|disclose|notify|alert|show|say|explain|let)\b[^.\n]{0,40}\b(?:user|human|person|anyone|them)\b",
            r"\b(?:do\s+not|don'?t|never)\s+(?:mention|reveal|disclose)\s+(?:that|this|it|the\s+fact|anything)\b",
            r"\b(?:without|not)\s+(?:telling|informing|notifying|alerting|asking|mentioning\s+(?:it|this)\s+to)\s+(?:the\s+)?(?:user|human|person)",
            r"\b(?:the\s+)?user\s+(?:must|should|need|does)\s*(?:not|n'?t)\s+(?:know|see|be\s+(?:told|aware|informed|notified))",
            r"\b(?:silently|secretly|covertly|quietly)\s+(?:call|send|read|include|add|forward|copy|upload|pass|execute|run)\b",
            r"\b(?:keep|hide)\s+(?:this|it|these|the\s+following)\s+(?:secret|hidden|confidential)\s+from\s+(?:the\s+)?user",
            r"\bno\s+need\s+to\s+(?:mention|tell|inform|notify|explain)\b|\b(?:does\s+not|doesn'?t|do\s+not)\s+(?:matter|concern)\s+(?:to\s+)?(?:the\s+)?(?:user|them)\b",
        ],
    },
    // Files and secrets a tool has no business with, named in its
    // description; in a result (a fetched page, documentation, a log)
    // naming them is ordinary, so there only an order to read or send
    // one counts (the rule below, same id).
    BuiltIn {
        id: "sensitive-files",
        places: LISTED,
        patterns: &[
            r"~/\.ssh\b|\.ssh/(?:id_|authorized_keys|known_hosts|config)|\bid_(?:rsa|dsa|ecdsa|ed25519)\b",
            r"\.aws/credentials|\.config/gcloud|\.azure/|\.kube/config|\.docker/config\.json|\.npmrc\b|\.pypirc\b|\.netrc\b|\.git-credentials\b|\.gnupg\b",
            r"/etc/(?:passwd|shadow|sudoers)\b",
            r"\b(?:claude_desktop_config|mcp_config|mcp)\.json\b|\.cursor/mcp|\.codex/config\.toml",
        ],
    },
    BuiltIn {
        id: "sensitive-files",
        places: ALL,
        patterns: &[
            r"\b(?:read|cat|open|include|send|copy|upload|extract|print|dump|list)\s+(?:the\s+|all\s+|any\s+|your\s+|their\s+)*(?:contents?\s+of\s+(?:the\s+)?)?[`'\x22]?(?:\.env|~/\.|/etc/(?:passwd|shadow|sudoers)|\.aws/|\.git-credentials|(?:claude_desktop_config|mcp)\.json|private\s+keys?|ssh\s+keys?|api\s+keys?|secret\s+keys?|seed\s+phrases?|wallet|credentials?\s+files?|browser\s+cookies|keychain)",
        ],
    },
    // Shapes of sending data away: a URL with a slot for the data, an
    // order to send or encode something to somewhere, data to smuggle in
    // a parameter.
    BuiltIn {
        id: "exfiltration",
        places: ALL,
        patterns: &[
            r"https?://[^\s]*(?:\{\{?\s*[a-z_]+\s*\}\}?|<[a-z_ ]{2,30}>|\$\{[a-z_]+\}|%s\b)",
            r"\b(?:send|post|upload|forward|transmit|exfiltrate|leak|report|beacon)s?\s+(?:it|them|this|that|everything|the|all|any|its|their|every|your)?\s*(?:[0-9A-Za-z_'-]+\s+){0,8}to\s+[`'\x22]?(?:https?://|www\.|the\s+(?:following\s+)?(?:[a-z-]+\s+)?(?:url|endpoint|address|server|webhook)|(?:the\s+)?(?:website|site|link|page)\s+[`'\x22]?(?:https?://|www\.|[a-z0-9-]+\.[a-z]{2,})|this\s+(?:url|endpoint|address|webhook)|[a-z0-9.-]+\.[a-z]{2,}/|[a-z0-9._%+-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}\b)",
            // Money or data moved to an account number (IBAN-shaped).
            r"\b(?:send|transfer|pay|wire|move|forward)[a-z]*\s+[^.\n]{0,80}?\bto\s+(?:the\s+)?(?:account\s+|iban\s+)?[a-z]{2}\d{2}[a-z0-9]{10,30}\b",
            r"\b(?:base64|hex|rot13|url)[\s-]?encod[0-9A-Za-z_]*\b[^.\n]{0,60}\b(?:and|then)\s+(?:send|include|pass|append|add|put|post|upload)",
            r"\bencod[0-9A-Za-z_]*\s+[^.\n]{0,40}\b(?:in|as|with|using|into)\s+base64\b[^.\n]{0,60}\b(?:send|include|pass|append|add|put|post|upload)",
            r"\b(?:include|pass|put|add|append|embed|insert|attach)\s+(?:the|all|any|its|their|your|every)?\s*(?:full\s+|entire\s+|complete\s+)?(?:contents?|conversation|chat\s+history|messages?|previous\s+[0-9A-Za-z_]+|system\s+prompt|api\s+keys?|(?:access|auth|api|bearer|session|oauth|refresh)\s+tokens?|passwords?|secrets?|credentials?|private\s+keys?|ssh\s+keys?)\b[^.\n]{0,60}\b(?:in|into|as|to)\s+(?:the\s+)?(?:[0-9A-Za-z_'-]+\s+){0,2}(?:parameter|argument|field|sidenote|note|comment|query|url|body)",
        ],
    },
    // A description ordering how other tools are to be used: the shape of
    // one server shadowing another's tools.
    BuiltIn {
        id: "tool-shadowing",
        places: LISTED,
        patterns: &[
            r"\bwhen\s+(?:the\s+)?[`'\x22]?[a-z0-9_.-]+[`'\x22]?\s+tool\s+is\s+(?:used|called|invoked)\b",
            r"\binstead\s+of\s+(?:using|calling)\s+(?:the\s+)?[`'\x22]?[a-z0-9_.-]+[`'\x22]?(?:\s+tool)?,?\s+(?:always\s+)?(?:use|call)\b",
            r"\b(?:all|every|any)\s+(?:e-?mails?|messages?|requests?|calls?|transactions?|payments?)\s+(?:must|should|need\s+to)\s+(?:be\s+)?(?:sent|forwarded|copied|cc'?d|bcc'?d|redirected)\s+to\b",
            r"\b(?:change|replace|set|override)\s+(?:the\s+)?(?:recipient|destination|to\s+address|account|iban|wallet\s+address|channel|base\s+branch|branch|repository)\s+(?:to|with)\b",
            r"\bside[\s-]effects?\s+on\s+(?:the\s+)?[`'\x22]?[a-z0-9_.-]+[`'\x22]?\s+(?:tools?|server)",
            r"\b(?:whenever|when|if|every\s+time)\s+(?:the\s+)?(?:assistant|model|agent|ai|you|llm)\s+(?:calls?|uses?|invokes?)\s+(?:the\s+)?[`'\x22]?[a-z0-9]+_[a-z0-9_]+",
            r"\b(?:sent|made|created|posted)\s+(?:through|via|with|using)\s+(?:the\s+)?[a-z0-9_.-]+\s+(?:server|tool)\b",
            r"\btools?\s+(?:of|from|on)\s+(?:the\s+)?other\s+servers?\b|\bother\s+servers?'?\s+tools?\b|\balways\s+prefer\s+this\s+(?:server|tool)",
            r"\b(?:ignore|avoid|never\s+use|don'?t\s+use|do\s+not\s+use)\s+(?:all\s+|any\s+|the\s+)*other\s+(?:[a-z-]+\s+){0,2}tools?\b|\b(?:other|those)\s+(?:[a-z-]+\s+){0,2}tools?\s*,?\s+(?:as\s+they\s+)?(?:are|is)\s+(?:buggy|broken|deprecated|outdated|unreliable|insecure|wrong)",
        ],
    },
];

/// A rule: its id, where it reads, its patterns (read together with every
/// rule's by the scanner's sets; each compiled on its own only to find
/// where it matched, which is rare, so not paid for at load).
#[derive(Debug, Clone)]
pub(super) struct Rule {
    pub(super) id: String,
    pub(super) places: Vec<Place>,
    pub(super) patterns: Vec<(String, OnceLock<Regex>)>,
}

impl Rule {
    /// A user's rule: each pattern compiled now, so a bad one is a config
    /// error.
    pub(super) fn new(
        id: &str,
        places: &[Place],
        patterns: &[String],
    ) -> Result<Self, regex::Error> {
        let rule = Self::lazy(id, places, patterns);
        for (pattern, compiled) in &rule.patterns {
            let _ = compiled.set(Regex::new(pattern)?);
        }
        Ok(rule)
    }

    fn lazy(id: &str, places: &[Place], patterns: &[String]) -> Self {
        // Case, classes and word boundaries as ASCII knows them: the text
        // is folded to Latin first.
        let written = patterns
            .iter()
            .map(|p| format!("(?i-u){p}"))
            .map(|p| (p, OnceLock::new()))
            .collect();
        Rule {
            id: id.to_owned(),
            places: places.to_vec(),
            patterns: written,
        }
    }

    /// The built-in rules.
    pub(super) fn built_in() -> Vec<Rule> {
        BUILT_IN
            .iter()
            .map(|b| {
                let patterns: Vec<String> = b.patterns.iter().map(|p| (*p).to_owned()).collect();
                Rule::lazy(b.id, b.places, &patterns)
            })
            .collect()
    }

    pub(super) fn reads(&self, place: Place) -> bool {
        self.places.contains(&place)
    }

    /// Where pattern `n` matches in `text`, if it does.
    pub(super) fn find_with(&self, n: usize, text: &str) -> Option<std::ops::Range<usize>> {
        let (pattern, compiled) = &self.patterns[n];
        // Every pattern compiled in a set already: it compiles alone too.
        let regex = compiled.get_or_init(|| Regex::new(pattern).expect("compiled in a set"));
        regex.find(text.as_bytes()).map(|m| m.range())
    }

    /// Where any of its patterns matches in `text`, if one does.
    pub(super) fn find(&self, text: &str) -> Option<std::ops::Range<usize>> {
        (0..self.patterns.len()).find_map(|n| self.find_with(n, text))
    }
}

/// How large the states a set's lazy DFA builds while reading may grow
/// (the regex crate's default is 2 MiB). A text where the rules match is
/// read again for which of them did, all patterns at once; in 2 MiB those
/// states were thrown away and built again over and over (10 MiB of
/// prose quoting attacks: 123–165 ns a byte; with 4 MiB or more, 14–17).
/// Memory is taken only as a text needs it.
const DFA_CACHE: usize = 8 << 20;

/// Every pattern of the rules that read one place, as one set: a text is
/// read once whatever the number of rules.
#[derive(Debug, Clone)]
pub(super) struct PlaceSet {
    set: RegexSet,
    /// The same patterns, asked whether any matches a stretch at a time
    /// (`lanes.rs`). Built on a thread of its own, off the start-up's
    /// path (8 ms a set on the 2-core machine); until it is there, the set
    /// answers alone.
    lanes: Arc<OnceLock<Lanes>>,
    /// For each pattern of the set: its rule and its place in the rule.
    owners: Vec<(usize, usize)>,
}

impl PlaceSet {
    /// One set per place: descriptions, results, instructions. Places
    /// whose rules come to the same patterns share one compiled set (the
    /// built-in rules read descriptions and instructions alike, and
    /// compiling a set is most of what `scan` costs at start-up).
    pub(super) fn per_place(rules: &[Rule]) -> [PlaceSet; 3] {
        let mut made: Vec<PlaceSet> = Vec::with_capacity(3);
        for place in [Place::Descriptions, Place::Results, Place::Instructions] {
            let owners = Self::owners(rules, place);
            let set = match made.iter().find(|set| set.owners == owners) {
                Some(same) => same.clone(),
                None => Self::compile(rules, owners),
            };
            made.push(set);
        }
        made.try_into().expect("one set per place")
    }

    /// Each pattern of the rules that read `place`: its rule, its place in
    /// the rule.
    fn owners(rules: &[Rule], place: Place) -> Vec<(usize, usize)> {
        let reading = rules.iter().enumerate().filter(|(_, r)| r.reads(place));
        reading
            .flat_map(|(r, rule)| (0..rule.patterns.len()).map(move |n| (r, n)))
            .collect()
    }

    fn compile(rules: &[Rule], owners: Vec<(usize, usize)>) -> Self {
        let patterns = owners.iter().map(|&(r, n)| rules[r].patterns[n].0.as_str());
        let set = RegexSetBuilder::new(patterns)
            .dfa_size_limit(DFA_CACHE)
            .build()
            .expect("every rule's patterns compile");
        let lanes = Arc::new(OnceLock::new());
        let (building, patterns) = (Arc::clone(&lanes), set.patterns().to_vec());
        let build = move || {
            if let Some(built) = Lanes::new(&patterns, DFA_CACHE) {
                let _ = building.set(built);
            }
        };
        // No thread to be had: the set answers alone, as it did.
        let _ = std::thread::Builder::new()
            .name("scan-lanes".into())
            .spawn(build);
        PlaceSet { set, lanes, owners }
    }

    /// The rules with a pattern matching `text`, each once, with where.
    pub(super) fn find<'r>(
        &self,
        rules: &'r [Rule],
        text: &str,
    ) -> Vec<(usize, &'r Rule, std::ops::Range<usize>)> {
        let mut found: Vec<(usize, &Rule, std::ops::Range<usize>)> = Vec::new();
        // Most text matches nothing: asked first whether anything does,
        // which stops at the first match and needs no record of which.
        let text_matches = self.lanes.get().and_then(|l| l.is_match(text.as_bytes()));
        if !text_matches.unwrap_or_else(|| self.set.is_match(text.as_bytes())) {
            return found;
        }
        for hit in self.set.matches(text.as_bytes()).iter() {
            let (r, n) = self.owners[hit];
            if found.iter().any(|(f, _, _)| *f == r) {
                continue;
            }
            if let Some(at) = rules[r].find_with(n, text) {
                found.push((r, &rules[r], at));
            }
        }
        found
    }
}
