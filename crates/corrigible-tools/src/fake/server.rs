//! The fake Open-Meteo server: a random port of 127.0.0.1, its own thread and runtime.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use axum::http::StatusCode;

use super::routes::{self, Shared};
use crate::weather::{FORECAST_URL_ENV, GEOCODING_URL_ENV, WeatherConfig};

/// How the fake server behaves. Build with `FakeOptions::default()` and the setters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeOptions {
    /// The first N requests (to either API) fail with [`FakeOptions::status`].
    pub fail_first: u32,
    /// The HTTP status of planned failures (default 503).
    pub status: u16,
    /// How long every request waits before it is answered (default none).
    pub delay: Duration,
    /// Whether successful answers are replaced by an HTML body that is not JSON.
    pub malformed: bool,
    /// The API whose requests the planned failures hit; `None` means either.
    pub failing_api: Option<FakeApi>,
}

/// One of the two APIs the fake serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FakeApi {
    /// `/v1/search`.
    Geocoding,
    /// `/v1/forecast`.
    Forecast,
}

impl Default for FakeOptions {
    fn default() -> Self {
        Self {
            fail_first: 0,
            status: 503,
            delay: Duration::ZERO,
            malformed: false,
            failing_api: None,
        }
    }
}

impl FakeOptions {
    /// Fails the first `n` requests.
    pub fn fail_first(mut self, n: u32) -> Self {
        self.fail_first = n;
        self
    }

    /// Sets the status of planned failures.
    pub fn status(mut self, status: u16) -> Self {
        self.status = status;
        self
    }

    /// Delays every answer by `delay`.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Makes the planned failures hit only requests to `api`.
    pub fn failing_only(mut self, api: FakeApi) -> Self {
        self.failing_api = Some(api);
        self
    }

    /// Answers every request that does not fail with a body that is not JSON.
    pub fn malformed(mut self) -> Self {
        self.malformed = true;
        self
    }
}

/// A running fake Open-Meteo server; dropping it stops the server.
pub struct FakeOpenMeteo {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for FakeOpenMeteo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeOpenMeteo")
            .field("addr", &self.addr)
            .field("requests", &self.request_count())
            .finish()
    }
}

impl FakeOpenMeteo {
    /// Starts a server on a random port of 127.0.0.1; it is listening when this returns.
    pub fn start(options: FakeOptions) -> std::io::Result<Self> {
        let failure_status = StatusCode::from_u16(options.status)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        let shared = Arc::new(Shared {
            requests: AtomicU64::new(0),
            geocoding_requests: AtomicU64::new(0),
            forecast_requests: AtomicU64::new(0),
            fail_remaining: AtomicU32::new(options.fail_first),
            failure_status,
            delay: options.delay,
            malformed: options.malformed,
            failing_api: options.failing_api,
        });
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (shutdown, stopped) = tokio::sync::oneshot::channel::<()>();
        let app = routes::router(shared.clone());
        let thread = std::thread::Builder::new()
            .name(format!("fake-open-meteo-{}", addr.port()))
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                        return;
                    };
                    tokio::select! {
                        _ = async { axum::serve(listener, app).await } => {}
                        _ = stopped => {}
                    }
                });
            })?;
        Ok(Self {
            addr,
            shared,
            shutdown: Some(shutdown),
            thread: Some(thread),
        })
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`: the base URL of both APIs.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Base URL to use as the geocoding URL.
    pub fn geocoding_url(&self) -> String {
        self.url()
    }

    /// Base URL to use as the forecast URL.
    pub fn forecast_url(&self) -> String {
        self.url()
    }

    /// A [`WeatherConfig`] pointing at this server, with the default timeout.
    pub fn weather_config(&self) -> WeatherConfig {
        WeatherConfig::with_base_url(self.url())
    }

    /// The environment variables that point a child process at this server.
    pub fn env_vars(&self) -> [(&'static str, String); 2] {
        [
            (GEOCODING_URL_ENV, self.geocoding_url()),
            (FORECAST_URL_ENV, self.forecast_url()),
        ]
    }

    /// Requests received so far, to either API, failed ones included.
    pub fn request_count(&self) -> u64 {
        self.shared.requests.load(Ordering::SeqCst)
    }

    /// Requests received so far by `/v1/search`.
    pub fn geocoding_request_count(&self) -> u64 {
        self.shared.geocoding_requests.load(Ordering::SeqCst)
    }

    /// Requests received so far by `/v1/forecast`.
    pub fn forecast_request_count(&self) -> u64 {
        self.shared.forecast_requests.load(Ordering::SeqCst)
    }

    /// Makes the next `n` requests (to [`FakeOptions::failing_api`], if set) fail with the
    /// configured status, replacing any failures still planned.
    pub fn fail_next(&self, n: u32) {
        self.shared.fail_remaining.store(n, Ordering::SeqCst);
    }

    /// Planned failures not yet served.
    pub fn failures_left(&self) -> u32 {
        self.shared.fail_remaining.load(Ordering::SeqCst)
    }
}

impl Drop for FakeOpenMeteo {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
