//! A fake of the Open-Meteo geocoding and forecast APIs: its cities (always, for graders that
//! check an answer against them) and, with the feature `fake-server`, an in-process server of
//! them.
//!
//! The server listens on a random port of 127.0.0.1 in its own thread and runtime, so it serves
//! sync tests, async tests of any flavor and child processes alike, and stops when dropped.
//!
//! ```no_run
//! # #[cfg(feature = "fake-server")] {
//! use corrigible_tools::fake::{FakeOpenMeteo, FakeOptions};
//! use corrigible_tools::{WeatherConfig, WeatherTool};
//!
//! let server = FakeOpenMeteo::start(FakeOptions::default().fail_first(1)).unwrap();
//! let tool = WeatherTool::new(server.weather_config()).unwrap();
//! // …or, for a child process: CORRIGIBLE_WEATHER_GEOCODING_URL=server.geocoding_url()
//! assert_eq!(server.request_count(), 0);
//! # }
//! ```

mod cities;
#[cfg(feature = "fake-server")]
mod routes;
#[cfg(feature = "fake-server")]
mod server;

pub use cities::{FAKE_CITIES, FAKE_OBSERVATION_TIME, FakeCity, find_city};
#[cfg(feature = "fake-server")]
pub use server::{FakeApi, FakeOpenMeteo, FakeOptions};
