//! Headers reach the HTTP server, and their values never reach an error, a report or a log.

use std::sync::{Arc, Mutex};

use corrigible_mcp::{Header, McpCatalog, McpServerConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const SECRET: &str = "s3cr3t-t0ken-value";

/// Answers every request with 401 and keeps what it was sent.
async fn refusing_server() -> (String, Arc<Mutex<String>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(String::new()));
    let kept = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut buf = vec![0u8; 16384];
            let n = stream.read(&mut buf).await.unwrap_or(0);
            kept.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
            let body = "unauthorized";
            let reply = format!(
                "HTTP/1.1 401 Unauthorized\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(reply.as_bytes()).await;
        }
    });
    (url, seen)
}

#[tokio::test]
async fn a_header_is_sent_and_its_value_never_shown() {
    let (url, seen) = refusing_server().await;
    let header = Header::parse(&format!("Authorization: Bearer {SECRET}")).unwrap();
    let config = McpServerConfig::http(&url, vec![header]).unwrap();
    let shown = format!("{config:?}");
    assert!(!shown.contains(SECRET), "{shown}");

    let err = McpCatalog::connect(vec![config]).await.unwrap_err();
    let message = format!("{err} {err:?}");
    assert!(!message.contains(SECRET), "{message}");
    let request = seen.lock().unwrap().to_lowercase();
    assert!(
        request.contains(&format!("authorization: bearer {}", SECRET.to_lowercase())),
        "{request}"
    );
}
