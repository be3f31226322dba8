//! The fake server's fixed table of cities and their (made-up, stable) conditions.

use crate::fold::fold;

/// A city the fake geocoding API knows, with the conditions its fake forecast reports.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FakeCity {
    /// Name as returned by the geocoding API.
    pub name: &'static str,
    /// Country name.
    pub country: &'static str,
    /// ISO 3166-1 alpha-2 country code.
    pub country_code: &'static str,
    /// IANA time zone.
    pub timezone: &'static str,
    /// Offset from UTC at [`FAKE_OBSERVATION_TIME`], seconds.
    pub utc_offset_seconds: i32,
    /// Latitude in degrees (real).
    pub latitude: f64,
    /// Longitude in degrees (real).
    pub longitude: f64,
    /// Reported temperature, °C (made up, never changes).
    pub temperature_c: f64,
    /// Reported wind speed, km/h (made up, never changes).
    pub wind_speed_kmh: f64,
    /// Reported WMO weather code (made up, never changes).
    pub weather_code: u16,
}

/// The local observation time every fake forecast reports (`YYYY-MM-DDTHH:MM`).
pub const FAKE_OBSERVATION_TIME: &str = "2026-01-15T12:00";

macro_rules! city {
    ($name:expr, $country:expr, $cc:expr, $tz:expr, $off:expr, $lat:expr, $lon:expr,
     $t:expr, $w:expr, $code:expr) => {
        FakeCity {
            name: $name,
            country: $country,
            country_code: $cc,
            timezone: $tz,
            utc_offset_seconds: $off,
            latitude: $lat,
            longitude: $lon,
            temperature_c: $t,
            wind_speed_kmh: $w,
            weather_code: $code,
        }
    };
}

/// Every city the fake server knows.
#[rustfmt::skip]
pub const FAKE_CITIES: &[FakeCity] = &[
    city!("Delhi", "India", "IN", "Asia/Kolkata", 19_800, 28.65195, 77.23149, 21.4, 6.1, 0),
    city!("Mumbai", "India", "IN", "Asia/Kolkata", 19_800, 19.07283, 72.88261, 29.8, 11.2, 1),
    city!("London", "United Kingdom", "GB", "Europe/London", 0, 51.50853, -0.12574, 7.3, 18.4, 3),
    city!("Paris", "France", "FR", "Europe/Paris", 3_600, 48.85341, 2.3488, 6.2, 14.0, 61),
    city!("Berlin", "Germany", "DE", "Europe/Berlin", 3_600, 52.52437, 13.41053, 1.5, 20.3, 71),
    city!("Madrid", "Spain", "ES", "Europe/Madrid", 3_600, 40.4165, -3.70256, 11.0, 9.7, 2),
    city!("Rome", "Italy", "IT", "Europe/Rome", 3_600, 41.89193, 12.51133, 12.6, 8.3, 1),
    city!("Moscow", "Russia", "RU", "Europe/Moscow", 10_800, 55.75222, 37.61556, -8.4, 12.5, 73),
    city!("Reykjavik", "Iceland", "IS", "Atlantic/Reykjavik", 0, 64.13548, -21.89541, -1.2, 31.0, 85),
    city!("Cairo", "Egypt", "EG", "Africa/Cairo", 7_200, 30.06263, 31.24967, 19.9, 13.1, 0),
    city!("Nairobi", "Kenya", "KE", "Africa/Nairobi", 10_800, -1.28333, 36.81667, 24.3, 15.6, 80),
    city!("Tokyo", "Japan", "JP", "Asia/Tokyo", 32_400, 35.6895, 139.69171, 8.9, 9.0, 2),
    city!("Beijing", "China", "CN", "Asia/Shanghai", 28_800, 39.9075, 116.39723, -2.1, 16.2, 0),
    city!("Singapore", "Singapore", "SG", "Asia/Singapore", 28_800, 1.28967, 103.85007, 30.4, 7.4, 95),
    city!("Sydney", "Australia", "AU", "Australia/Sydney", 39_600, -33.86785, 151.20732, 26.1, 19.8, 1),
    city!("New York", "United States", "US", "America/New_York", -18_000, 40.71427, -74.00597, 2.8, 22.7, 3),
    city!("San Francisco", "United States", "US", "America/Los_Angeles", -28_800, 37.77493, -122.41942, 13.2, 17.5, 45),
    city!("Toronto", "Canada", "CA", "America/Toronto", -18_000, 43.70011, -79.4163, -5.6, 24.1, 75),
    city!("Mexico City", "Mexico", "MX", "America/Mexico_City", -21_600, 19.42847, -99.12766, 17.0, 8.8, 2),
    city!("São Paulo", "Brazil", "BR", "America/Sao_Paulo", -10_800, -23.5475, -46.63611, 27.5, 10.9, 63),
];

/// The city named `name`, ignoring case, surrounding space and accents (`sao paulo`).
pub fn find_city(name: &str) -> Option<&'static FakeCity> {
    let wanted = fold(name.trim());
    FAKE_CITIES.iter().find(|c| fold(c.name) == wanted)
}

/// The city at these coordinates (within 0.01°), if any.
#[cfg_attr(not(feature = "fake-server"), allow(dead_code))]
pub fn city_at(latitude: f64, longitude: f64) -> Option<&'static FakeCity> {
    FAKE_CITIES
        .iter()
        .find(|c| (c.latitude - latitude).abs() < 0.01 && (c.longitude - longitude).abs() < 0.01)
}
