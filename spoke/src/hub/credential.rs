//! The spoke's credential for the hub: a cluster token, or a JWT its cluster issues for it
//! (a projected ServiceAccount token the kubelet rotates, or a SPIFFE JWT-SVID a SPIFFE
//! helper keeps fresh), read from `--token-file` on every connect. A stream presenting a JWT
//! ends shortly before the JWT expires and the next connect presents the file's fresh one,
//! so no stream runs on an expired credential. The spoke only reads `exp` and `iat`; the
//! hub verifies the token.
//!
//! A helper that rewrites the file in place (spiffe-helper's `WriteJWTSVID` is an
//! `os.WriteFile`: truncate, then write) can be caught between the two: the file is read
//! again until it holds a whole token ([`read_settled`]), instead of presenting the stale
//! token read at start (refused as expired, audited, and a reconnect backoff).

use std::time::Duration;

use base64::Engine as _;
use serde_json::Value;

/// Longest time before a JWT's `exp` that its stream ends.
const MAX_MARGIN: Duration = Duration::from_secs(60);

/// How often, and how far apart, a token file caught mid-write is read again.
const SETTLE_TRIES: u32 = 20;
const SETTLE_PAUSE: Duration = Duration::from_millis(50);

/// Whether `token` as read is a JWT cut short: it starts like one but its three parts or
/// its `exp` cannot be read.
pub fn cut_short(token: &str) -> bool {
    token.starts_with("eyJ") && jwt_times(token).is_none()
}

/// The spoke's credential for one connect ([`crate::config::Config::read_token`]), read
/// again (at most a second, every 50 ms) while the token file is empty, unreadable or holds
/// a JWT cut short; the last read if it never settles.
pub async fn read_settled(config: &crate::config::Config) -> crate::Result<Option<String>> {
    let mut read = config.read_token();
    for _ in 0..SETTLE_TRIES {
        let settled = match &read {
            Ok(Some(t)) => !cut_short(t),
            Ok(None) => true,
            Err(_) => false,
        };
        if settled {
            break;
        }
        tokio::time::sleep(SETTLE_PAUSE).await;
        read = config.read_token();
    }
    read
}

/// `exp` and `iat` of a JWT (unverified), or `None` for a cluster token.
pub fn jwt_times(token: &str) -> Option<(i64, Option<i64>)> {
    let mut parts = token.split('.');
    let (Some(header), Some(payload), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    if !header.starts_with("eyJ") {
        return None;
    }
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    let claims: Value = serde_json::from_slice(&bytes).ok()?;
    let exp = claims.get("exp")?.as_i64()?;
    Some((exp, claims.get("iat").and_then(Value::as_i64)))
}

/// How long after `now` (Unix seconds) a stream presenting `token` may run: until a tenth
/// of its lifetime (at most a minute) before its `exp`, so the kubelet (which rewrites a
/// projected token at 80% of its lifetime) has replaced it by then. `None`: not a JWT, no
/// limit. An expired JWT gets zero.
pub fn stream_limit(token: &str, now: i64) -> Option<Duration> {
    let (exp, iat) = jwt_times(token)?;
    // A tenth of the token's lifetime, at most a minute; without `iat` the
    // lifetime is unknown, so the whole minute.
    let margin = iat.map_or(MAX_MARGIN, |iat| {
        let lifetime = u64::try_from(exp.saturating_sub(iat)).unwrap_or(0);
        Duration::from_millis(lifetime.saturating_mul(100)).min(MAX_MARGIN)
    });
    let left = u64::try_from(exp.saturating_sub(now)).unwrap_or(0);
    Some(Duration::from_secs(left).saturating_sub(margin))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jwt(claims: &str) -> String {
        let b = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        format!("{}.{}.sig", b(r#"{"alg":"ES256"}"#), b(claims))
    }

    #[test]
    fn limits_follow_the_jwt_lifetime() {
        // One hour: ends a minute before exp.
        let t = jwt(r#"{"exp":4600,"iat":1000}"#);
        assert_eq!(stream_limit(&t, 1000), Some(Duration::from_secs(3540)));
        // Ten seconds: ends one second (a tenth) before exp.
        let t = jwt(r#"{"exp":1010,"iat":1000}"#);
        assert_eq!(stream_limit(&t, 1002), Some(Duration::from_secs(7)));
        // Expired, or no iat and less than a minute left: at once.
        assert_eq!(stream_limit(&t, 2000), Some(Duration::ZERO));
        let t = jwt(r#"{"exp":1030}"#);
        assert_eq!(stream_limit(&t, 1000), Some(Duration::ZERO));
    }

    #[test]
    fn a_jwt_cut_short_is_told_apart() {
        let whole = jwt(r#"{"exp":4600,"iat":1000}"#);
        assert!(!cut_short(&whole));
        assert!(!cut_short("fgs_0123456789abcdef"));
        let dots: Vec<usize> = whole.match_indices('.').map(|(i, _)| i).collect();
        for cut in [3, dots[0], dots[0] + 5, dots[1]] {
            assert!(cut_short(&whole[..cut]), "{}", &whole[..cut]);
        }
    }

    #[tokio::test]
    async fn a_file_rewritten_in_place_is_read_once_it_settles() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("jwt_svid.token");
        let whole = jwt(r#"{"exp":4600,"iat":1000}"#);
        let mut c = crate::config::Config::for_cluster("c1").unwrap();
        c.token = Some("stale-token-read-at-start".into());
        c.token_file = Some(path.clone());
        // Truncated (os.WriteFile's first step), then the first bytes, then the rest.
        std::fs::write(&path, "").unwrap();
        let (p, w) = (path.clone(), whole.clone());
        let writer = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(120)).await;
            std::fs::write(&p, &w[..10]).unwrap();
            tokio::time::sleep(Duration::from_millis(120)).await;
            std::fs::write(&p, &w).unwrap();
        });
        let read = read_settled(&c).await.unwrap();
        writer.await.unwrap();
        assert_eq!(read.as_deref(), Some(whole.as_str()));
        // A whole token is taken at once.
        assert_eq!(
            read_settled(&c).await.unwrap().as_deref(),
            Some(whole.as_str())
        );
    }

    #[test]
    fn cluster_tokens_and_garbage_have_no_limit() {
        assert_eq!(stream_limit("fgs_0123456789abcdef", 0), None);
        assert_eq!(stream_limit("eyJhbGciOiJFUzI1NiJ9.!!!.sig", 0), None);
        assert_eq!(stream_limit(&jwt(r#"{"iat":1}"#), 0), None);
    }
}
