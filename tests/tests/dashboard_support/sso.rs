//! The dashboard session cookie a sign-in through the test OpenID provider
//! yields ([`Browser::sign_in_with_provider`]): read it, forget it.

use super::{Browser, step};

/// The session cookie's name (`hub-core/src/identity/sessions.rs`).
pub const SESSION_COOKIE: &str = "fleetgate_session";

/// The value of the browser's session cookie (HttpOnly: only WebDriver sees it).
pub async fn session_cookie(browser: &Browser) -> String {
    step(
        "reading the session cookie",
        browser.client.get_named_cookie(SESSION_COOKIE),
    )
    .await
    .value()
    .to_string()
}

/// Forgets the hub's session (the provider's too with `provider`: cookies are
/// per host, not per port, so both live on 127.0.0.1).
pub async fn forget_session(browser: &Browser, provider: bool) {
    if provider {
        step("deleting cookies", browser.client.delete_all_cookies()).await;
    } else {
        step(
            "deleting the session cookie",
            browser.client.delete_cookie(SESSION_COOKIE),
        )
        .await;
    }
}
