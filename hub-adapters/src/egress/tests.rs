//! The egress rules against real local servers (axum over TCP, rustls).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::response::{IntoResponse, Redirect};
use axum::routing::get;
use reqwest::Method;

use super::*;

/// A local server counting the requests it got; its port.
async fn server() -> (u16, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let h = hits.clone();
    let app = Router::new()
        .route("/ok", get(|| async { "ok" }))
        .route("/big", get(|| async { vec![b'x'; 2 * 1024 * 1024] }))
        .route("/hop", get(|| async { Redirect::temporary("/ok") }))
        .route("/loop", get(|| async { Redirect::temporary("/loop") }))
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(30)).await;
                "late"
            }),
        )
        .layer(axum::middleware::from_fn(
            move |req: axum::extract::Request, next: axum::middleware::Next| {
                let h = h.clone();
                async move {
                    h.fetch_add(1, Ordering::SeqCst);
                    next.run(req).await.into_response()
                }
            },
        ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (port, hits)
}

fn egress(allow_private: bool) -> Egress {
    Egress::new(EgressPolicy {
        allow_private,
        allow_http: true,
        timeout: Duration::from_millis(500),
        max_response_bytes: 1000,
        ..EgressPolicy::default()
    })
    .unwrap()
}

async fn get_url(e: &Egress, url: &str) -> Result<EgressResponse, EgressError> {
    e.send(e.request(Method::GET, url)?).await
}

#[tokio::test]
async fn loopback_refused_by_default_literal_and_by_name() {
    let (port, hits) = server().await;
    let e = egress(false);
    for url in [
        format!("http://127.0.0.1:{port}/ok"),
        format!("http://[::ffff:127.0.0.1]:{port}/ok"),
        format!("http://0x7f.1:{port}/ok"),
    ] {
        let err = get_url(&e, &url).await.unwrap_err();
        assert!(matches!(err, EgressError::Refused(_)), "{url}: {err}");
    }
    // By name: refused after resolution, by the resolver the connector uses.
    let err = get_url(&e, &format!("http://localhost:{port}/ok"))
        .await
        .unwrap_err();
    let EgressError::Refused(refused) = &err else {
        panic!("localhost: {err}");
    };
    assert!(refused.ip.is_loopback(), "{refused}");
    assert_eq!(refused.host, "localhost");
    // Preflight (configuration time) says the same.
    let err = e
        .preflight(&format!("http://localhost:{port}/ok"))
        .await
        .unwrap_err();
    assert!(matches!(err, EgressError::Refused(_)), "{err}");
    assert_eq!(hits.load(Ordering::SeqCst), 0, "nothing reached the server");
}

#[tokio::test]
async fn allowed_private_reaches_the_server() {
    let (port, hits) = server().await;
    let e = egress(true);
    let resp = get_url(&e, &format!("http://localhost:{port}/ok"))
        .await
        .unwrap();
    assert_eq!(resp.status, 200);
    assert_eq!(&resp.body[..], b"ok");
    assert!(!resp.truncated);
    assert!(resp.remote_addr.unwrap().ip().is_loopback());
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn metadata_and_special_addresses_refused_even_when_private_allowed() {
    let e = egress(true);
    for url in [
        "http://169.254.169.254/latest/meta-data/",
        "http://[fe80::1]/",
        "http://0.0.0.0/",
        "http://224.0.0.1/",
    ] {
        let err = e.check_url(url).unwrap_err();
        assert!(matches!(err, EgressError::Refused(_)), "{url}: {err}");
    }
    // The message suggests no flag that cannot help.
    for (url, want) in [
        (
            "http://169.254.169.254/latest/meta-data/",
            "169.254.169.254 resolves to 169.254.169.254, a link-local (cloud metadata) address, which is refused (never allowed, not even with --egress-allow-private)",
        ),
        (
            "http://0.0.0.0/",
            "0.0.0.0 resolves to 0.0.0.0, a unspecified, multicast or reserved address, which is refused (never allowed, not even with --egress-allow-private)",
        ),
        (
            "http://224.0.0.1/",
            "224.0.0.1 resolves to 224.0.0.1, a unspecified, multicast or reserved address, which is refused (never allowed, not even with --egress-allow-private)",
        ),
    ] {
        assert_eq!(e.check_url(url).unwrap_err().to_string(), want, "{url}");
    }
    assert_eq!(
        egress(false)
            .check_url("http://10.0.0.1/")
            .unwrap_err()
            .to_string(),
        "10.0.0.1 resolves to 10.0.0.1, a private network address, which is refused (allow it with --egress-allow-private or the feature's allow flag)"
    );
}

#[tokio::test]
async fn https_only_unless_http_allowed_and_bad_urls() {
    let e = Egress::new(EgressPolicy::default().allow_private(true)).unwrap();
    assert!(matches!(
        e.check_url("http://example.com/").unwrap_err(),
        EgressError::Scheme(_)
    ));
    assert!(matches!(
        e.check_url("ftp://example.com/").unwrap_err(),
        EgressError::Scheme(_)
    ));
    for bad in ["not a url", "https://", "/relative"] {
        let err = e.check_url(bad).unwrap_err();
        assert!(matches!(err, EgressError::InvalidUrl(_)), "{bad}: {err}");
    }
    assert!(e.check_url("https://example.com/hook").is_ok());
}

#[tokio::test]
async fn response_capped() {
    let (port, _) = server().await;
    let e = egress(true);
    let resp = get_url(&e, &format!("http://127.0.0.1:{port}/big"))
        .await
        .unwrap();
    assert_eq!(resp.status, 200);
    assert!(resp.truncated);
    assert_eq!(resp.body.len(), 1000);
    assert!(matches!(
        resp.body_within_cap().unwrap_err(),
        EgressError::TooLarge(1000)
    ));
}

#[tokio::test]
async fn total_timeout() {
    let (port, _) = server().await;
    let e = egress(true);
    let err = tokio::time::timeout(
        Duration::from_secs(10),
        get_url(&e, &format!("http://127.0.0.1:{port}/slow")),
    )
    .await
    .expect("the egress timeout fires first")
    .unwrap_err();
    assert!(matches!(err, EgressError::Timeout), "{err}");
}

#[tokio::test]
async fn redirects_same_origin_only_and_limited() {
    let (port, hits) = server().await;
    let e = egress(true);
    let resp = get_url(&e, &format!("http://127.0.0.1:{port}/hop"))
        .await
        .unwrap();
    assert_eq!(resp.status, 200, "same-origin redirect followed");
    let err = get_url(&e, &format!("http://127.0.0.1:{port}/loop"))
        .await
        .unwrap_err();
    assert!(matches!(err, EgressError::Redirect(_)), "{err}");
    // Another origin (a second local server): refused, never contacted.
    let (other, other_hits) = server().await;
    let app = Router::new().route(
        "/away",
        get(move || async move { Redirect::temporary(&format!("http://127.0.0.1:{other}/ok")) }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let away = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let err = get_url(&e, &format!("http://127.0.0.1:{away}/away"))
        .await
        .unwrap_err();
    assert!(matches!(err, EgressError::Redirect(_)), "{err}");
    assert_eq!(other_hits.load(Ordering::SeqCst), 0);
    // No redirects at all: the 3xx comes back as it is.
    let none = Egress::new(egress(true).policy().clone().max_redirects(0)).unwrap();
    let resp = get_url(&none, &format!("http://127.0.0.1:{port}/hop"))
        .await
        .unwrap();
    assert_eq!(resp.status, 307);
    assert!(hits.load(Ordering::SeqCst) >= 3);
}

#[tokio::test]
async fn errors_name_the_url_without_credentials_or_query() {
    // Nobody listens on the port any more: a transport error.
    let closed = {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        l.local_addr().unwrap().port()
    };
    let e = egress(true);
    let err = get_url(
        &e,
        &format!("http://feed:pa55word@127.0.0.1:{closed}/f.ics?key=s3cret#top"),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, EgressError::Transport(_)), "{err}");
    let msg = err.to_string();
    assert!(
        !msg.contains("s3cret") && !msg.contains("pa55word"),
        "{msg}"
    );
    assert!(
        msg.contains(&format!("http://127.0.0.1:{closed}/f.ics?…")),
        "{msg}"
    );
    // A redirect to another origin: both URLs shown the same way.
    let app = Router::new().route(
        "/away",
        get(move || async move {
            Redirect::temporary(&format!("http://127.0.0.1:{closed}/x?token=t0ken"))
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let away = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let err = get_url(&e, &format!("http://127.0.0.1:{away}/away?key=s3cret"))
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, EgressError::Redirect(_)), "{msg}");
    assert!(!msg.contains("s3cret") && !msg.contains("t0ken"), "{msg}");
}

/// A one-request-per-connection HTTPS server with the test PKI's
/// certificate for `localhost`.
async fn tls_server(dir: &std::path::Path) -> u16 {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let certs: Vec<CertificateDer> = CertificateDer::pem_file_iter(dir.join("server.crt"))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let key = PrivateKeyDer::from_pem_file(dir.join("server.key")).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut buf = vec![0u8; 4096];
                let mut got = Vec::new();
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tls.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = tls
                    .write_all(
                        b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\nconnection: close\r\n\r\ntls",
                    )
                    .await;
                let _ = tls.shutdown().await;
            });
        }
    });
    port
}

#[tokio::test]
async fn https_verified_with_the_ca_bundle_option() {
    let dir = tempfile::tempdir().unwrap();
    fleetgate_tests::pki::make_pki(dir.path());
    let port = tls_server(dir.path()).await;
    let url = format!("https://localhost:{port}/");
    let plain = Egress::new(EgressPolicy::default().allow_private(true)).unwrap();
    let err = get_url(&plain, &url).await.unwrap_err();
    assert!(
        matches!(err, EgressError::Transport(_)),
        "unknown CA: {err}"
    );
    let opts = EgressOptions {
        egress_allow_private: true,
        egress_ca_bundle: Some(dir.path().join("ca.crt")),
        ..EgressOptions::default()
    };
    let trusted = Egress::new(opts.policy().unwrap()).unwrap();
    let resp = get_url(&trusted, &url).await.unwrap();
    assert_eq!(resp.status, 200);
    assert_eq!(&resp.body[..], b"tls");
    let bad = EgressOptions {
        egress_ca_bundle: Some(dir.path().join("missing.pem")),
        ..EgressOptions::default()
    };
    assert!(matches!(bad.policy().unwrap_err(), EgressError::Config(_)));
}
