//! The spoke's credential for the hub: a cluster token, or a JWT its cluster issues for it
//! (a projected ServiceAccount token the kubelet rotates, or a SPIFFE JWT-SVID a SPIFFE
//! helper keeps fresh), read from `--token-file` on every connect. A stream presenting a JWT
//! ends shortly before the JWT expires and the next connect presents the file's fresh one,
//! so no stream runs on an expired credential. The spoke only reads `exp` and `iat`; the
//! hub verifies the token.

use std::time::Duration;

use base64::Engine as _;
use serde_json::Value;

/// Longest time before a JWT's `exp` that its stream ends.
const MAX_MARGIN: Duration = Duration::from_secs(60);

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
    fn cluster_tokens_and_garbage_have_no_limit() {
        assert_eq!(stream_limit("fgs_0123456789abcdef", 0), None);
        assert_eq!(stream_limit("eyJhbGciOiJFUzI1NiJ9.!!!.sig", 0), None);
        assert_eq!(stream_limit(&jwt(r#"{"iat":1}"#), 0), None);
    }
}
