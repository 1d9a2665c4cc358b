//! A request's query parameters, as the API handlers and the watch server read
//! them (`labelSelector`, `resourceVersion`, `allowWatchBookmarks`, ...).

use std::collections::HashMap;

/// Query parameters by name (the last value of a repeated one).
pub type Params = HashMap<String, String>;
