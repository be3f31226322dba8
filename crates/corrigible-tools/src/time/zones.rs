//! Resolving time zones by IANA name or city, and suggesting close matches for unknown ones.

use chrono_tz::{TZ_VARIANTS, Tz};

use super::cities::{canonical, city_zone};

/// How many close matches an unknown zone's message lists.
const MAX_SUGGESTIONS: usize = 3;
/// Below this similarity (0..1) a zone is not offered as a match.
const MIN_SIMILARITY: f64 = 0.8;

/// A name that is not an IANA time zone, with the closest known names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.message())]
pub struct UnknownZone {
    /// The name as given.
    pub name: String,
    /// Up to three close matches, best first.
    pub suggestions: Vec<&'static str>,
}

impl UnknownZone {
    fn message(&self) -> String {
        let hint =
            "use an IANA time zone name such as Asia/Kolkata, Europe/London or America/New_York";
        if is_utc_offset(&self.name) {
            return format!(
                "`{}` is a UTC offset, not a time zone: give the city the user asked about \
                 (e.g. `Lima`) or its IANA zone (e.g. `America/Lima`)",
                self.name
            );
        }
        match self.suggestions.as_slice() {
            [] => format!("unknown time zone `{}`: {hint}", self.name),
            [one] => format!("unknown time zone `{}`: did you mean {one}?", self.name),
            many => format!(
                "unknown time zone `{}`: did you mean one of {}?",
                self.name,
                many.join(", ")
            ),
        }
    }
}

/// The zone named `name`: an IANA name (letter case ignored; a link named after a city, such as
/// `Singapore`, gives the city's canonical zone), or a city (`Tokyo`, `São Paulo`, `Mumbai`).
pub fn resolve(name: &str) -> Result<Tz, UnknownZone> {
    let trimmed = name.trim();
    if let Ok(tz) = trimmed.parse::<Tz>() {
        return Ok(canonical(tz));
    }
    if let Some(tz) = TZ_VARIANTS
        .iter()
        .find(|tz| tz.name().eq_ignore_ascii_case(trimmed))
    {
        return Ok(canonical(*tz));
    }
    city_zone(trimmed).ok_or_else(|| UnknownZone {
        name: name.to_string(),
        suggestions: if is_utc_offset(trimmed) {
            Vec::new()
        } else {
            suggest(trimmed)
        },
    })
}

/// Whether `name` reads as a UTC offset (`UTC+08:00`, `GMT-5`, `+05:30`) rather than a zone.
fn is_utc_offset(name: &str) -> bool {
    let lower = name.trim().to_ascii_lowercase();
    let rest = lower
        .strip_prefix("utc")
        .or_else(|| lower.strip_prefix("gmt"))
        .unwrap_or(&lower)
        .trim_start();
    let mut chars = rest.chars();
    matches!(chars.next(), Some('+' | '-' | '−'))
        && chars.next().is_some_and(|c| c.is_ascii_digit())
}

/// Up to three known zones close to `name`, best first.
pub fn suggest(name: &str) -> Vec<&'static str> {
    let wanted = normalize(name);
    if wanted.is_empty() {
        return Vec::new();
    }
    let mut scored: Vec<(f64, &'static str)> = TZ_VARIANTS
        .iter()
        .map(|tz| (similarity(&wanted, tz.name()), tz.name()))
        .filter(|(score, _)| *score >= MIN_SIMILARITY)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    scored
        .into_iter()
        .take(MAX_SUGGESTIONS)
        .map(|(_, name)| name)
        .collect()
}

fn normalize(name: &str) -> String {
    name.trim().to_lowercase().replace(' ', "_")
}

/// How close a normalized name is to a zone: its last path segment (the city) counts as
/// much as the full name, and an exact city match beats any fuzzy one.
fn similarity(wanted: &str, zone: &str) -> f64 {
    let full = zone.to_lowercase();
    let city = full.rsplit('/').next().unwrap_or(&full);
    if city == wanted {
        return 2.0;
    }
    if full.contains(wanted) && wanted.len() >= 3 {
        return 1.5 - (full.len() - wanted.len()) as f64 / 100.0;
    }
    strsim::jaro_winkler(wanted, &full).max(strsim::jaro_winkler(wanted, city))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_and_case_insensitive_names_resolve() {
        assert_eq!(resolve("Asia/Kolkata"), Ok(Tz::Asia__Kolkata));
        assert_eq!(resolve(" asia/kolkata "), Ok(Tz::Asia__Kolkata));
        assert_eq!(resolve("UTC"), Ok(Tz::UTC));
    }

    #[test]
    fn city_names_suggest_their_zone_first() {
        assert_eq!(suggest("kolkata").first(), Some(&"Asia/Kolkata"));
        assert_eq!(suggest("new york").first(), Some(&"America/New_York"));
        assert_eq!(suggest("Europe/Londn").first(), Some(&"Europe/London"));
    }

    #[test]
    fn cities_and_city_links_resolve_to_canonical_zones() {
        assert_eq!(resolve("Tokyo"), Ok(Tz::Asia__Tokyo));
        assert_eq!(resolve("Mumbai"), Ok(Tz::Asia__Kolkata));
        assert_eq!(resolve("Singapore"), Ok(Tz::Asia__Singapore));
        assert_eq!(resolve("singapore"), Ok(Tz::Asia__Singapore));
    }

    #[test]
    fn utc_offsets_are_rejected_with_a_hint_to_name_the_place() {
        for offset in ["UTC+08:00", "GMT-5", "+05:30", "utc −3"] {
            let err = resolve(offset).unwrap_err();
            assert!(err.suggestions.is_empty(), "{offset}: {err:?}");
            assert!(err.to_string().contains("is a UTC offset"), "{err}");
        }
        assert_eq!(resolve("UTC"), Ok(Tz::UTC));
    }

    #[test]
    fn nonsense_gets_the_generic_hint() {
        let err = resolve("qqqqqqqqqqqqqq").unwrap_err();
        assert!(err.suggestions.is_empty());
        assert!(err.to_string().contains("IANA"), "{err}");
    }
}
