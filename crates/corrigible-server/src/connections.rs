//! Accepting and serving connections under limits: at most `max_connections` at once (the
//! rest wait in the kernel's accept queue), a header-read timeout (which also closes idle
//! HTTP/1.1 keep-alive connections), an idle timeout for connections with no request in
//! progress and no traffic, and a graceful close on shutdown.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::Request;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tower::ServiceExt;

/// The connection limits of a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ConnectionLimits {
    /// How long a client may take to send a request's headers.
    pub(crate) header_read_timeout: Duration,
    /// How long a connection may sit with no request in progress and no traffic.
    pub(crate) idle_timeout: Duration,
    /// Connections served at once.
    pub(crate) max_connections: usize,
    /// How long open connections may go on after shutdown before they are dropped.
    pub(crate) grace: Duration,
}

/// Serves `app` on `listener` until `stop` turns true, then closes connections gracefully
/// and waits for them up to `limits.grace`.
pub(crate) async fn serve_connections(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    mut stop: watch::Receiver<bool>,
) {
    let max = limits.max_connections.clamp(1, Semaphore::MAX_PERMITS);
    let permits = Arc::new(Semaphore::new(max));
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    loop {
        let permit = tokio::select! {
            permit = permits.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            () = stopped(&mut stop) => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    accept_failed(&error).await;
                    continue;
                }
            },
            () = stopped(&mut stop) => break,
        };
        let _ = stream.set_nodelay(true);
        tokio::spawn(serve_one(
            stream,
            app.clone(),
            builder.clone(),
            limits,
            stop.clone(),
            permit,
        ));
    }
    drop(listener);
    let all = u32::try_from(max).unwrap_or(u32::MAX);
    if tokio::time::timeout(limits.grace, permits.acquire_many(all))
        .await
        .is_err()
    {
        tracing::warn!("connections still open after the grace period; closing them");
    }
}

/// Per-connection errors (a client that reset) are ignored; running out of file descriptors
/// pauses accepting for a moment instead of spinning.
async fn accept_failed(error: &io::Error) {
    use io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if !matches!(
        error.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) {
        tracing::warn!(%error, "accept failed; pausing");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn stopped(stop: &mut watch::Receiver<bool>) {
    if stop.wait_for(|s| *s).await.is_err() {
        std::future::pending::<()>().await;
    }
}

async fn serve_one(
    stream: TcpStream,
    app: Router,
    builder: http1::Builder,
    limits: ConnectionLimits,
    mut stop: watch::Receiver<bool>,
    _permit: OwnedSemaphorePermit,
) {
    let activity = Arc::new(Activity::new());
    let busy = Arc::new(AtomicUsize::new(0));
    let io = TokioIo::new(Tracked {
        inner: stream,
        activity: activity.clone(),
    });
    let requests = busy.clone();
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let app = app.clone();
        let busy = Busy::enter(requests.clone());
        async move {
            let response = app.oneshot(request).await;
            drop(busy);
            response
        }
    });
    let connection = builder.serve_connection(io, service).with_upgrades();
    tokio::pin!(connection);
    let tick = (limits.idle_timeout / 4).clamp(Duration::from_millis(10), Duration::from_secs(1));
    let mut ticks = tokio::time::interval(tick);
    let mut closing: Option<Instant> = None;
    loop {
        tokio::select! {
            _ = connection.as_mut() => break,
            () = stopped(&mut stop), if closing.is_none() => {
                connection.as_mut().graceful_shutdown();
                closing = Some(Instant::now() + limits.grace);
            }
            _ = ticks.tick() => match closing {
                Some(deadline) if Instant::now() >= deadline => break,
                Some(_) => {}
                None if busy.load(Ordering::Acquire) == 0
                    && activity.idle_for() >= limits.idle_timeout => {
                    connection.as_mut().graceful_shutdown();
                    closing = Some(Instant::now() + Duration::from_secs(1));
                }
                None => {}
            },
        }
    }
}

/// Requests of one connection in progress (until their response head is ready).
struct Busy(Arc<AtomicUsize>);

impl Busy {
    fn enter(count: Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::AcqRel);
        Self(count)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// When a connection last read or wrote a byte.
struct Activity {
    start: Instant,
    last_ms: AtomicU64,
}

impl Activity {
    fn new() -> Self {
        Self {
            start: Instant::now(),
            last_ms: AtomicU64::new(0),
        }
    }

    fn touch(&self) {
        let ms = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(ms, Ordering::Relaxed);
    }

    fn idle_for(&self) -> Duration {
        let last = Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
        self.start.elapsed().saturating_sub(last)
    }
}

/// A stream that records its traffic in an [`Activity`].
struct Tracked {
    inner: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Tracked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let result = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.touch();
        }
        result
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write(cx, data);
        if matches!(result, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        result
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(result, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        result
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}
