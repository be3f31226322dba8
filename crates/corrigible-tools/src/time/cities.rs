//! Finding a city's time zone: the zone named after it (`Tokyo` → `Asia/Tokyo`), or, for a
//! major city whose zone carries another city's name, a fixed table (`Mumbai` → `Asia/Kolkata`).

use chrono_tz::{TZ_VARIANTS, Tz};

use crate::fold::fold;

/// Major cities whose IANA zone is named after another city.
const OTHER_CITY_ZONES: &[(&str, Tz)] = &[
    ("mumbai", Tz::Asia__Kolkata),
    ("bombay", Tz::Asia__Kolkata),
    ("delhi", Tz::Asia__Kolkata),
    ("new delhi", Tz::Asia__Kolkata),
    ("bangalore", Tz::Asia__Kolkata),
    ("bengaluru", Tz::Asia__Kolkata),
    ("chennai", Tz::Asia__Kolkata),
    ("hyderabad", Tz::Asia__Kolkata),
    ("beijing", Tz::Asia__Shanghai),
    ("shenzhen", Tz::Asia__Shanghai),
    ("guangzhou", Tz::Asia__Shanghai),
    ("osaka", Tz::Asia__Tokyo),
    ("kyoto", Tz::Asia__Tokyo),
    ("abu dhabi", Tz::Asia__Dubai),
    ("san francisco", Tz::America__Los_Angeles),
    ("seattle", Tz::America__Los_Angeles),
    ("san diego", Tz::America__Los_Angeles),
    ("las vegas", Tz::America__Los_Angeles),
    ("washington", Tz::America__New_York),
    ("boston", Tz::America__New_York),
    ("miami", Tz::America__New_York),
    ("atlanta", Tz::America__New_York),
    ("philadelphia", Tz::America__New_York),
    ("dallas", Tz::America__Chicago),
    ("houston", Tz::America__Chicago),
    ("montreal", Tz::America__Toronto),
    ("ottawa", Tz::America__Toronto),
    ("rio de janeiro", Tz::America__Sao_Paulo),
    ("brasilia", Tz::America__Sao_Paulo),
    ("st petersburg", Tz::Europe__Moscow),
    ("saint petersburg", Tz::Europe__Moscow),
    ("barcelona", Tz::Europe__Madrid),
    ("milan", Tz::Europe__Rome),
    ("munich", Tz::Europe__Berlin),
    ("frankfurt", Tz::Europe__Berlin),
    ("hamburg", Tz::Europe__Berlin),
    ("manchester", Tz::Europe__London),
    ("edinburgh", Tz::Europe__London),
    ("geneva", Tz::Europe__Zurich),
    ("cape town", Tz::Africa__Johannesburg),
    ("hawaii", Tz::Pacific__Honolulu),
];

/// Regions of the canonical zone names, as opposed to the backward-compatible links
/// (`Singapore`, `US/Pacific`, `America/Buenos_Aires`).
const REGIONS: &[&str] = &[
    "Africa/",
    "America/",
    "Antarctica/",
    "Asia/",
    "Atlantic/",
    "Australia/",
    "Europe/",
    "Indian/",
    "Pacific/",
];

/// The zone of the city `name`, ignoring case, accents, `_` for spaces and a trailing
/// `, region` (`sao paulo`, `Sydney, Australia`). `Etc/` zones are not cities (`Etc/GMT-5` is
/// UTC+5). A zone in a canonical region wins over a link, and the longer name over the shorter
/// (`America/Argentina/Buenos_Aires`).
pub fn city_zone(name: &str) -> Option<Tz> {
    let full = fold(name.trim()).replace('_', " ");
    let city = full.split(',').next().unwrap_or(&full).trim();
    if city.is_empty() {
        return None;
    }
    if let Some((_, tz)) = OTHER_CITY_ZONES.iter().find(|(c, _)| *c == city) {
        return Some(*tz);
    }
    TZ_VARIANTS
        .iter()
        .filter(|tz| tz.name().contains('/') && !tz.name().starts_with("Etc/"))
        .filter(|tz| {
            let zone = fold(tz.name()).replace('_', " ");
            zone.rsplit('/').next() == Some(city)
        })
        .max_by_key(|tz| {
            let name = tz.name();
            (
                REGIONS.iter().any(|r| name.starts_with(r)),
                name.matches('/').count(),
            )
        })
        .copied()
}

/// The canonical zone for a link named after a city (`Singapore` → `Asia/Singapore`), or
/// `tz` itself.
pub fn canonical(tz: Tz) -> Tz {
    if tz.name().contains('/') {
        return tz;
    }
    city_zone(tz.name())
        .filter(|found| found.name().contains('/'))
        .unwrap_or(tz)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cities_named_in_the_zone_database() {
        assert_eq!(city_zone("Tokyo"), Some(Tz::Asia__Tokyo));
        assert_eq!(city_zone("new york"), Some(Tz::America__New_York));
        assert_eq!(city_zone("São Paulo"), Some(Tz::America__Sao_Paulo));
        assert_eq!(city_zone("Sydney, Australia"), Some(Tz::Australia__Sydney));
        assert_eq!(
            city_zone("Buenos Aires"),
            Some(Tz::America__Argentina__Buenos_Aires)
        );
        assert_eq!(city_zone("Singapore"), Some(Tz::Asia__Singapore));
    }

    #[test]
    fn major_cities_zoned_under_another_name() {
        assert_eq!(city_zone("Mumbai"), Some(Tz::Asia__Kolkata));
        assert_eq!(city_zone("Honolulu, Hawaii"), Some(Tz::Pacific__Honolulu));
        assert_eq!(city_zone("Beijing"), Some(Tz::Asia__Shanghai));
    }

    #[test]
    fn unknown_places_have_no_zone() {
        assert_eq!(city_zone("Atlantis"), None);
        assert_eq!(city_zone(""), None);
    }

    #[test]
    fn links_named_after_a_city_become_canonical() {
        assert_eq!(canonical(Tz::Singapore), Tz::Asia__Singapore);
        assert_eq!(canonical(Tz::UTC), Tz::UTC);
        assert_eq!(canonical(Tz::Japan), Tz::Japan);
    }
}
