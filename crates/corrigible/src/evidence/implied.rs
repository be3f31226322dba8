//! Constants a request implies by its words: 100 for a percentage, 60 and 3600 for time,
//! 1000 for metric prefixes, 32 and 1.8 for Fahrenheit. An expression may use them although
//! the request never writes them (`640 * 7.5 / 100` for "7.5 percent of 640").

/// Relative difference within which a number counts as an implied constant, so that common
/// roundings (`1.609` for 1.609344, `0.333` for a third) are recognized.
pub const TOLERANCE: f64 = 2e-3;

/// A family of units: the words that name it and the constants that convert within it.
struct Family {
    words: &'static [&'static str],
    prefixes: &'static [&'static str],
    constants: &'static [f64],
}

const FAMILIES: &[Family] = &[
    Family {
        words: &["%", "percent", "percentage", "cent", "cents", "pct"],
        prefixes: &[],
        constants: &[100.0, 0.01],
    },
    Family {
        words: &[
            "second", "seconds", "sec", "secs", "minute", "minutes", "min", "mins", "hour",
            "hours", "hr", "hrs", "hourly", "day", "days", "daily", "week", "weeks", "weekly",
            "month", "months", "monthly", "year", "years", "yearly", "annual", "annually",
        ],
        prefixes: &[],
        constants: &[
            60.0, 24.0, 7.0, 12.0, 30.0, 52.0, 365.0, 366.0, 168.0, 720.0, 1440.0, 3600.0, 8760.0,
            10080.0, 43200.0, 86400.0, 525600.0, 604800.0, 2592000.0, 31536000.0,
        ],
    },
    Family {
        words: &["km", "kg", "kw", "kwh", "khz", "kph", "km/h"],
        prefixes: &["kilo"],
        constants: &[1000.0, 0.001, 3.6],
    },
    Family {
        words: &["cm"],
        prefixes: &["centi"],
        constants: &[100.0, 10.0, 0.01],
    },
    Family {
        words: &["mm", "mg", "ml"],
        prefixes: &["milli"],
        constants: &[1000.0, 10.0, 0.001],
    },
    Family {
        words: &["mw", "mhz", "ghz", "gw"],
        prefixes: &["mega", "giga", "micro"],
        constants: &[1000.0, 1e6, 1e9, 1e-6],
    },
    Family {
        words: &[
            "metre", "metres", "meter", "meters", "gram", "grams", "litre", "litres", "liter",
            "liters", "tonne", "tonnes", "watt", "watts",
        ],
        prefixes: &[],
        constants: &[1000.0, 0.001],
    },
    Family {
        words: &[
            "byte", "bytes", "bit", "bits", "kb", "mb", "gb", "tb", "kib", "mib", "gib", "tib",
        ],
        prefixes: &["kilobyte", "megabyte", "gigabyte", "terabyte"],
        constants: &[8.0, 1000.0, 1024.0, 1e6, 1048576.0, 1e9, 1073741824.0, 1e12],
    },
    Family {
        words: &["fahrenheit", "°f", "kelvin"],
        prefixes: &[],
        constants: &[32.0, 1.8, 5.0, 9.0, 5.0 / 9.0, 273.15, 459.67],
    },
    Family {
        words: &["mile", "miles", "mph", "mi"],
        prefixes: &[],
        constants: &[1.609344, 0.621371, 1760.0, 5280.0],
    },
    Family {
        words: &[
            "inch", "inches", "foot", "feet", "ft", "yard", "yards", "yd",
        ],
        prefixes: &[],
        constants: &[
            2.54, 12.0, 0.0254, 0.3048, 30.48, 3.28084, 0.9144, 3.0, 36.0,
        ],
    },
    Family {
        words: &[
            "pound", "pounds", "lb", "lbs", "ounce", "ounces", "oz", "stone",
        ],
        prefixes: &[],
        constants: &[0.453592, 2.20462, 16.0, 28.3495, 14.0],
    },
    Family {
        words: &[
            "gallon", "gallons", "gal", "pint", "pints", "quart", "quarts",
        ],
        prefixes: &[],
        constants: &[3.78541, 4.54609, 0.473176, 0.568261, 8.0, 4.0, 2.0],
    },
    Family {
        words: &["knot", "knots", "nautical"],
        prefixes: &[],
        constants: &[1.852],
    },
    Family {
        words: &["radian", "radians", "rad"],
        prefixes: &[],
        constants: &[180.0, 360.0, 57.2958],
    },
    Family {
        words: &["root", "roots"],
        prefixes: &[],
        constants: &[0.5, 1.0 / 3.0],
    },
];

/// The constants `text` implies by the units and percentages it names, each once.
pub fn implied_constants(text: &str) -> Vec<f64> {
    let words: Vec<String> = text
        .split(|c: char| c.is_whitespace() || c == '-')
        .map(|w| {
            w.trim_matches(|c: char| !(c.is_alphanumeric() || matches!(c, '%' | '°' | '/')))
                .to_lowercase()
        })
        .collect();
    let names = |family: &Family| {
        text.contains('%') && family.words.contains(&"%")
            || words.iter().any(|w| {
                let bare = w.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
                family.words.contains(&bare) || family.prefixes.iter().any(|p| bare.starts_with(p))
            })
    };
    let mut out: Vec<f64> = Vec::new();
    for family in FAMILIES.iter().filter(|f| names(f)) {
        for c in family.constants {
            if !out.contains(c) {
                out.push(*c);
            }
        }
    }
    out
}

/// Whether `n` is one of `constants`, within [`TOLERANCE`].
pub fn is_implied(n: f64, constants: &[f64]) -> bool {
    constants
        .iter()
        .any(|c| (c - n.abs()).abs() <= TOLERANCE * c.abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_percentage_implies_100() {
        for text in ["What's 7.5 percent of 640?", "Take 45% of 360", "15 pct"] {
            assert!(is_implied(100.0, &implied_constants(text)), "{text}");
        }
        let fuel = implied_constants("I drove 342 km on 38 litres of fuel");
        assert!(is_implied(1000.0, &fuel));
        assert!(!is_implied(100.0, &fuel));
    }

    #[test]
    fn units_imply_their_conversion_factors() {
        let days = implied_constants("How many seconds are there in 3 days?");
        for c in [60.0, 3600.0, 86400.0, 24.0] {
            assert!(is_implied(c, &days), "{c}");
        }
        let temperature = implied_constants("Convert 212 degrees Fahrenheit to Celsius.");
        assert!(is_implied(32.0, &temperature));
        assert!(is_implied(0.5556, &temperature));
        let miles = implied_constants("How far is 26.2 miles in km?");
        assert!(is_implied(1.609, &miles));
        assert!(is_implied(1000.0, &miles));
        assert!(is_implied(1024.0, &implied_constants("a 4GB file in MB")));
        assert!(is_implied(
            0.5,
            &implied_constants("the square root of 1764")
        ));
        assert!(is_implied(1000.0, &implied_constants("5 kilometres")));
    }

    #[test]
    fn a_request_without_units_implies_nothing() {
        assert!(implied_constants("How much is 48 times 12?").is_empty());
        assert!(implied_constants("How many degrees warmer is Rome than Paris?").is_empty());
        assert!(!is_implied(100.0, &implied_constants("I drove 342 miles")));
    }
}
