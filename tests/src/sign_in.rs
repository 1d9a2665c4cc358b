//! Signing in through the test OpenID provider ([`crate::oidc`]) without a
//! browser: a small HTTP user agent that follows redirects one at a time,
//! keeps each origin's cookies as a browser would, and fills in the
//! provider's login form. It drives the same endpoints, cookies and
//! redirects as Chromium does in the browser tests, at a fraction of the
//! cost, for tests about what the hub answers (sessions, refresh, refusals,
//! cookie flags, the CLI's loopback redirect).

use std::collections::{BTreeMap, HashMap};

use reqwest::header::{LOCATION, SET_COOKIE};
use reqwest::{Method, Url};

/// Redirects followed at most in one [`Agent::follow`].
const MAX_HOPS: usize = 20;

/// A cookie-keeping HTTP client that does not follow redirects itself.
pub struct Agent {
    http: reqwest::Client,
    /// Cookies by origin (`scheme://host:port`), by name.
    jar: HashMap<String, BTreeMap<String, String>>,
}

/// The hub's answer to the provider's redirect back.
#[derive(Debug)]
pub struct Callback {
    /// Where the hub sends the browser (the dashboard, or `/?signin_error=…`).
    pub location: String,
    /// The raw `Set-Cookie` headers of that answer.
    pub set_cookies: Vec<String>,
    /// The session cookie's value, when a session was made.
    pub session: Option<String>,
}

fn origin(url: &Url) -> String {
    url.origin().ascii_serialization()
}

impl Default for Agent {
    fn default() -> Self {
        Self::new()
    }
}

impl Agent {
    pub fn new() -> Self {
        Self {
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .timeout(std::time::Duration::from_secs(20))
                .build()
                .expect("HTTP client"),
            jar: HashMap::new(),
        }
    }

    /// Forgets every cookie (a fresh browser).
    pub fn clear(&mut self) {
        self.jar.clear();
    }

    /// One request with this origin's cookies; keeps the cookies it sets.
    /// Returns the status, the `Location` resolved against `url`, the raw
    /// `Set-Cookie` headers and the body.
    pub async fn request(
        &mut self,
        method: Method,
        url: &Url,
        form: Option<&[(&str, &str)]>,
    ) -> (u16, Option<Url>, Vec<String>, String) {
        let mut req = self.http.request(method, url.clone());
        if let Some(cookies) = self.jar.get(&origin(url)).filter(|c| !c.is_empty()) {
            let header = cookies
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join("; ");
            req = req.header("cookie", header);
        }
        if let Some(form) = form {
            req = req.form(form);
        }
        let r = req.send().await.unwrap_or_else(|e| panic!("{url}: {e}"));
        let status = r.status().as_u16();
        let location = r
            .headers()
            .get(LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(|l| url.join(l).expect("a Location URL"));
        let set: Vec<String> = r
            .headers()
            .get_all(SET_COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok().map(String::from))
            .collect();
        let jar = self.jar.entry(origin(url)).or_default();
        for c in &set {
            let pair = c.split(';').next().unwrap_or_default();
            if let Some((name, value)) = pair.split_once('=') {
                let expired = c.to_ascii_lowercase().contains("max-age=0")
                    || c.to_ascii_lowercase().contains("expires=thu, 01 jan 1970");
                if value.is_empty() || expired {
                    jar.remove(name.trim());
                } else {
                    jar.insert(name.trim().to_string(), value.to_string());
                }
            }
        }
        let body = r.text().await.unwrap_or_default();
        (status, location, set, body)
    }

    /// Follows redirects from `url`, signing in as `user` (password
    /// `<user>-pw`) when the provider shows its login form, until a
    /// redirect goes to a URL `stop` accepts; returns that URL (not
    /// requested). Panics on anything else (an error page, too many hops).
    pub async fn follow(&mut self, url: &Url, user: &str, stop: impl Fn(&Url) -> bool) -> Url {
        let mut next = (Method::GET, url.clone(), None::<Vec<(String, String)>>);
        for _ in 0..MAX_HOPS {
            let (method, at, form) = next;
            let form_ref: Option<Vec<(&str, &str)>> = form
                .as_ref()
                .map(|f| f.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect());
            let (status, location, _, body) = self.request(method, &at, form_ref.as_deref()).await;
            if let Some(to) = location.filter(|_| (300..400).contains(&status)) {
                if stop(&to) {
                    return to;
                }
                next = (Method::GET, to, None);
                continue;
            }
            assert_eq!(status, 200, "{at}: HTTP {status}: {body}");
            let action = form_action(&body, "login-form")
                .unwrap_or_else(|| panic!("{at}: no login form and no redirect: {body}"));
            let to = at.join(&action).expect("form action");
            let login = vec![
                ("login".to_string(), user.to_string()),
                ("password".to_string(), format!("{user}-pw")),
            ];
            next = (Method::POST, to, Some(login));
        }
        panic!("more than {MAX_HOPS} redirects from {url}");
    }

    /// Signs `user` in to the dashboard of the hub at `hub` (its base URL):
    /// `POST /api/v1/auth/login`, the provider's login form, and the
    /// callback, which is requested at `hub` even when the redirect URI
    /// names another origin (a TLS proxy in front of the hub).
    pub async fn dashboard_sign_in(&mut self, hub: &str, user: &str) -> Callback {
        let hub = Url::parse(hub).expect("hub URL");
        let start = hub.join("/api/v1/auth/login").expect("URL");
        let r = self
            .http
            .post(start.clone())
            .json(&serde_json::json!({"returnTo": "/#/gates"}))
            .send()
            .await
            .expect("starting the sign-in");
        assert!(r.status().is_success(), "sign-in start: {}", r.status());
        let jar = self.jar.entry(origin(&hub)).or_default();
        for c in r.headers().get_all(SET_COOKIE) {
            let pair = c
                .to_str()
                .unwrap_or_default()
                .split(';')
                .next()
                .unwrap_or("");
            if let Some((name, value)) = pair.split_once('=') {
                jar.insert(name.to_string(), value.to_string());
            }
        }
        let v: serde_json::Value = r.json().await.expect("JSON");
        let url = Url::parse(v["url"].as_str().expect("url")).expect("provider URL");
        let back = self
            .follow(&url, user, |u| u.path() == "/auth/callback")
            .await;
        let mut at = hub.join("/auth/callback").expect("URL");
        at.set_query(back.query());
        let (status, location, set_cookies, body) = self.request(Method::GET, &at, None).await;
        assert_eq!(status, 303, "callback: {body}");
        let session = set_cookies.iter().find_map(|c| {
            let value = c.strip_prefix("fleetgate_session=")?.split(';').next()?;
            (!value.is_empty()).then(|| value.to_string())
        });
        Callback {
            location: location.map(|l| l.to_string()).unwrap_or_default(),
            set_cookies,
            session,
        }
    }
}

/// The `action` of the form with `id` in `html`.
fn form_action(html: &str, id: &str) -> Option<String> {
    let at = html.find(&format!("id=\"{id}\""))?;
    let start = html[..at].rfind("<form")?;
    let tag = &html[start..html[start..].find('>')? + start];
    let a = tag.find("action=\"")? + "action=\"".len();
    let end = tag[a..].find('"')? + a;
    Some(tag[a..end].replace("&amp;", "&"))
}

/// Reads a running `fleetgate login`'s stderr: waits (at most 30 s) for the
/// URL it asks the person to open ("To sign in, open …") and returns it with
/// a thread that collects the whole of stderr, for a failure message.
pub async fn cli_login_url(
    stderr: std::process::ChildStderr,
) -> (String, std::thread::JoinHandle<String>) {
    let (url_tx, url_rx) = std::sync::mpsc::channel();
    let rest = std::thread::spawn(move || {
        use std::io::BufRead as _;
        let mut text = String::new();
        for line in std::io::BufReader::new(stderr).lines() {
            let line = line.unwrap_or_default();
            if let Some(url) = line.strip_prefix("To sign in, open ") {
                let _ = url_tx.send(url.to_string());
            }
            text.push_str(&line);
            text.push('\n');
        }
        text
    });
    let url = tokio::task::spawn_blocking(move || {
        url_rx.recv_timeout(std::time::Duration::from_secs(30))
    })
    .await
    .unwrap()
    .expect("fleetgate login printed no URL");
    (url, rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_login_form_action() {
        let html = r#"<p>x</p><form id="login-form" method="post" action="/interaction/abc/login"><input></form>"#;
        assert_eq!(
            form_action(html, "login-form").as_deref(),
            Some("/interaction/abc/login")
        );
        assert_eq!(form_action(html, "other"), None);
    }
}
