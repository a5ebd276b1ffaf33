//! Redaction presets for personal data, each a regex and a check the
//! match must pass: a shape alone is not enough (any 16 digits look like a
//! card number, any two letters and digits like an IBAN), so a match is
//! redacted only when its checksum or its numbering rules hold. What each
//! one leaves, and what it still takes wrongly, is in
//! docs/layers/rewrite.md.

/// A match's check: whether it is what the preset names.
pub(super) type Check = fn(&str) -> bool;

/// `(name, regex, check)`, used as `pattern = "@name"`.
pub(super) const CHECKED: &[(&str, &str, Check)] = &[
    // An e-mail address: a local part, `@`, a domain with a dot and a
    // top-level label of letters.
    (
        "@email",
        r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.[A-Za-z]{2,24}\b",
        always,
    ),
    // A telephone number written as one: international (`+` and a country
    // code) or North American (`(555) 123-4567`, `555-123-4567`); 10 to 15
    // digits. Bare digit runs are not taken (they are ids, amounts, dates).
    (
        "@phone",
        r"(?:\+\d{1,3}[ .-]?(?:\(\d{1,4}\)[ .-]?)?\d{1,4}(?:[ .-]?\d{2,4}){1,4}|\(\d{3}\)[ .-]?\d{3}[ .-]\d{4}|\b\d{3}[.-]\d{3}[.-]\d{4})\b",
        phone,
    ),
    // A payment card number: 13 to 19 digits, in groups or not, with an
    // issuer's prefix and a valid Luhn check digit.
    ("@card", r"\b\d(?:[ -]?\d){12,18}\b", card),
    // An IBAN: country, check digits, 11 to 30 letters and digits (in
    // groups of four or not), whose mod-97 check holds.
    ("@iban", r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b", iban),
    // A US Social Security number written with its dashes, in a range the
    // SSA assigns (no 000, 666 or 9xx area, no 00 group, no 0000 serial).
    ("@us-ssn", r"\b\d{3}-\d{2}-\d{4}\b", us_ssn),
];

fn always(_: &str) -> bool {
    true
}

fn digits(text: &str) -> Vec<u32> {
    text.chars().filter_map(|c| c.to_digit(10)).collect()
}

fn phone(text: &str) -> bool {
    (10..=15).contains(&digits(text).len())
}

/// The Luhn check of `digits` (the last is the check digit).
fn luhn(digits: &[u32]) -> bool {
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| match i % 2 {
            0 => d,
            _ if d * 2 > 9 => d * 2 - 9,
            _ => d * 2,
        })
        .sum();
    sum.is_multiple_of(10)
}

/// Whether `digits` start as an issuer's card numbers do: Visa (4),
/// Mastercard (51–55, 2221–2720), American Express (34, 37), Discover
/// (6011, 644–649, 65), JCB (3528–3589), Diners (300–305, 36, 38, 39),
/// UnionPay (62), Maestro (50, 56–58, 67).
fn issued(digits: &[u32]) -> bool {
    let prefix = |n: usize| digits.iter().take(n).fold(0, |acc, d| acc * 10 + d);
    let (p1, p2, p3, p4) = (prefix(1), prefix(2), prefix(3), prefix(4));
    p1 == 4
        || (51..=55).contains(&p2)
        || (2221..=2720).contains(&p4)
        || p2 == 34
        || p2 == 37
        || p4 == 6011
        || (644..=649).contains(&p3)
        || p2 == 65
        || (3528..=3589).contains(&p4)
        || (300..=305).contains(&p3)
        || [36, 38, 39].contains(&p2)
        || p2 == 62
        || [50, 56, 57, 58, 67].contains(&p2)
}

fn card(text: &str) -> bool {
    let digits = digits(text);
    (13..=19).contains(&digits.len()) && issued(&digits) && luhn(&digits)
}

/// ISO 13616: the country and check digits moved to the end, letters as
/// 10–35, the whole number mod 97 is 1.
fn iban(text: &str) -> bool {
    let compact: Vec<char> = text.chars().filter(|c| !c.is_whitespace()).collect();
    if !(15..=34).contains(&compact.len()) {
        return false;
    }
    let (head, rest) = compact.split_at(4);
    let mut remainder: u32 = 0;
    for c in rest.iter().chain(head) {
        let value = match c.to_digit(36) {
            Some(v) => v,
            None => return false,
        };
        // A letter is two digits, a digit one.
        remainder = match value {
            0..=9 => (remainder * 10 + value) % 97,
            _ => (remainder * 100 + value) % 97,
        };
    }
    remainder == 1
}

fn us_ssn(text: &str) -> bool {
    let d = digits(text);
    let number = |range: std::ops::Range<usize>| d[range].iter().fold(0, |acc, x| acc * 10 + x);
    let (area, group, serial) = (number(0..3), number(3..5), number(5..9));
    area != 0 && area != 666 && area < 900 && group != 0 && serial != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checked(name: &str) -> (regex::Regex, Check) {
        let (_, re, check) = CHECKED.iter().find(|(n, _, _)| *n == name).expect(name);
        (regex::Regex::new(re).expect("compiles"), *check)
    }

    /// The matches of `name` in `text` that pass its check.
    fn found(name: &str, text: &str) -> Vec<String> {
        let (re, check) = checked(name);
        re.find_iter(text)
            .map(|m| m.as_str())
            .filter(|m| check(m))
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn a_card_number_needs_its_issuer_and_its_luhn_digit() {
        // Test numbers the networks publish.
        for good in [
            "4111 1111 1111 1111",
            "5500-0000-0000-0004",
            "378282246310005",
            "6011111111111117",
        ] {
            assert_eq!(
                found("@card", &format!("paid with {good}.")),
                [good],
                "{good}"
            );
        }
        for near in [
            "4111 1111 1111 1112",  // the check digit wrong
            "1234 5678 9012 3452",  // Luhn holds, no issuer starts so
            "4111 1111 111",        // too short
            "order 20261127000001", // an id
        ] {
            assert!(found("@card", near).is_empty(), "{near}");
        }
    }

    #[test]
    fn an_iban_needs_its_mod_97_check() {
        for good in [
            "GB82 WEST 1234 5698 7654 32",
            "DE89370400440532013000",
            "FR14 2004 1010 0505 0001 3M02 606",
        ] {
            assert_eq!(
                found("@iban", &format!("to {good} today")),
                [good],
                "{good}"
            );
        }
        for near in [
            "GB82 WEST 1234 5698 7654 33",
            "DE89370400440532013001",
            "XX00 ABCD",
        ] {
            assert!(found("@iban", near).is_empty(), "{near}");
        }
    }

    #[test]
    fn an_ssn_is_one_the_ssa_would_assign() {
        assert_eq!(found("@us-ssn", "ssn 123-45-6789;"), ["123-45-6789"]);
        for near in [
            "000-12-3456",
            "666-12-3456",
            "912-34-5678",
            "123-00-4567",
            "123-45-0000",
            "123456789",
            "2026-11-27",
        ] {
            assert!(found("@us-ssn", near).is_empty(), "{near}");
        }
    }

    #[test]
    fn phones_as_written_not_bare_digit_runs() {
        for good in [
            "+1 415 555 2671",
            "+44 20 7946 0958",
            "(415) 555-2671",
            "415-555-2671",
            "+49 (30) 1234 5678",
        ] {
            assert_eq!(
                found("@phone", &format!("call {good} now")),
                [good],
                "{good}"
            );
        }
        for near in ["4155552671", "version 1.2.3", "2026-11-27", "+1 555"] {
            assert!(found("@phone", near).is_empty(), "{near}");
        }
    }

    #[test]
    fn e_mail_addresses() {
        assert_eq!(
            found("@email", "write to a.b+c@mail.example.org."),
            ["a.b+c@mail.example.org"]
        );
        for near in ["user@localhost", "@handle", "a@b", "name at example.com"] {
            assert!(found("@email", near).is_empty(), "{near}");
        }
    }
}
