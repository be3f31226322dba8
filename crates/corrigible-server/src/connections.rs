//! Accepting and serving connections under limits: at most `max_connections` at once (past
//! it the connection that has waited longest for a request makes room, or the new one gets a
//! 503 when all are busy: [`OpenConnections`]), a header-read timeout (which also closes idle
//! HTTP/1.1 keep-alive connections), an idle timeout for connections with no request in
//! progress and no traffic, and a graceful close on shutdown.

use std::convert::Infallible;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::response::IntoResponse;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tower::ServiceExt;

use crate::errors::ServiceUnavailable;
use crate::metrics::Metrics;
use crate::open_connections::{Admitted, Connection, InProgress, Member, OpenConnections};

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

/// Refused connections answered at once; past it a refused connection is closed unanswered.
const MAX_REFUSALS: usize = 64;
/// How long a refused connection may take to send the request its 503 answers.
const REFUSAL_TIME: Duration = Duration::from_secs(2);

/// Serves `app` on `listener` until `stop` turns true, then closes connections gracefully
/// and waits for them up to `limits.grace`.
pub(crate) async fn serve_connections(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    metrics: Metrics,
    mut stop: watch::Receiver<bool>,
) {
    let open = OpenConnections::new(limits.max_connections);
    let refusals = Arc::new(Semaphore::new(MAX_REFUSALS));
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    loop {
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
        let member = match open.admit() {
            Admitted::Free(member) => member,
            Admitted::Replacing(member) => {
                metrics.connection_shed("evicted");
                member
            }
            Admitted::Full => {
                metrics.connection_shed("refused");
                if let Ok(permit) = refusals.clone().try_acquire_owned() {
                    tokio::spawn(refuse(stream, permit));
                }
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        tokio::spawn(serve_one(
            stream,
            app.clone(),
            builder.clone(),
            limits,
            stop.clone(),
            member,
        ));
    }
    drop(listener);
    if !open.wait_empty(limits.grace).await {
        tracing::warn!("connections still open after the grace period; closing them");
    }
}

/// Reads the request of a connection past the limit and answers it 503
/// `too_many_connections` with `Retry-After`, then closes it; all within [`REFUSAL_TIME`].
async fn refuse(stream: TcpStream, _permit: OwnedSemaphorePermit) {
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .keep_alive(false)
        .header_read_timeout(REFUSAL_TIME);
    let service = hyper::service::service_fn(|_: Request<Incoming>| async {
        Ok::<_, Infallible>(ServiceUnavailable::TooManyConnections.into_response())
    });
    let answer = builder.serve_connection(TokioIo::new(stream), service);
    let _ = tokio::time::timeout(REFUSAL_TIME, answer).await;
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
    member: Member,
) {
    let state = member.connection.clone();
    let io = TokioIo::new(Tracked {
        inner: stream,
        connection: state.clone(),
    });
    let counted = state.clone();
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let app = app.clone();
        let request_in_progress = counted.request();
        let response_in_progress = counted.response();
        async move {
            let response = app.oneshot(request).await;
            drop(request_in_progress);
            response.map(|r| r.map(|body| Body::new(Counted::new(body, response_in_progress))))
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
            () = state.evicted() => break,
            () = stopped(&mut stop), if closing.is_none() => {
                connection.as_mut().graceful_shutdown();
                closing = Some(Instant::now() + limits.grace);
            }
            _ = ticks.tick() => match closing {
                Some(deadline) if Instant::now() >= deadline => break,
                Some(_) => {}
                None if state.requests() == 0 && state.idle_for() >= limits.idle_timeout => {
                    connection.as_mut().graceful_shutdown();
                    closing = Some(Instant::now() + Duration::from_secs(1));
                }
                None => {}
            },
        }
    }
    drop(member);
}

/// A response body that counts as in progress on its connection until sent or dropped.
struct Counted {
    inner: Body,
    _in_progress: InProgress,
}

impl Counted {
    fn new(inner: Body, in_progress: InProgress) -> Self {
        Self {
            inner,
            _in_progress: in_progress,
        }
    }
}

impl http_body::Body for Counted {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// A stream that records its traffic on its [`Connection`].
struct Tracked {
    inner: TcpStream,
    connection: Arc<Connection>,
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
            self.connection.touch();
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
            self.connection.touch();
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
            self.connection.touch();
        }
        result
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}
