//! Keyset pagination: `limit` plus an opaque cursor (base64url of the last
//! item's sort key as JSON), so pages stay stable while rows are added.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

pub use fleetgate_api_types::Page;

use crate::{Error, Result};

/// Default page size.
pub const DEFAULT_LIMIT: u32 = 100;
/// Largest page size.
pub const MAX_LIMIT: u32 = 1000;

/// A page request as it arrives (`?limit=&cursor=`).
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageRequest {
    /// Page size, 1..=1000 (default 100).
    pub limit: Option<u32>,
    /// The `nextCursor` of the previous page.
    pub cursor: Option<String>,
}

impl PageRequest {
    /// First page of `limit` items.
    pub fn first(limit: u32) -> Self {
        Self {
            limit: Some(limit),
            cursor: None,
        }
    }

    /// The validated limit.
    pub fn limit(&self) -> Result<u32> {
        match self.limit {
            None => Ok(DEFAULT_LIMIT),
            Some(n) if (1..=MAX_LIMIT).contains(&n) => Ok(n),
            Some(n) => Err(Error::invalid(
                "limit",
                format!("must be between 1 and {MAX_LIMIT}, got {n}"),
            )),
        }
    }

    /// The decoded cursor key.
    pub fn key<K: DeserializeOwned>(&self) -> Result<Option<K>> {
        let Some(c) = &self.cursor else {
            return Ok(None);
        };
        let bad = || Error::bad_request("cursor", "not a cursor returned by this API");
        let bytes = URL_SAFE_NO_PAD.decode(c).map_err(|_| bad())?;
        serde_json::from_slice(&bytes).map(Some).map_err(|_| bad())
    }
}

/// Builds a page from rows fetched with `limit + 1`: the extra row only
/// tells that there is a next page.
pub fn from_rows<R, K: Serialize, T>(
    mut rows: Vec<R>,
    limit: u32,
    key: impl Fn(&R) -> K,
    map: impl Fn(R) -> T,
) -> Page<T> {
    let more = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    let next_cursor = if more {
        rows.last().map(|r| encode(&key(r)))
    } else {
        None
    };
    Page {
        items: rows.into_iter().map(map).collect(),
        next_cursor,
    }
}

/// The cursor of the page after the item whose sort key is `key`.
pub fn cursor<K: Serialize>(key: &K) -> String {
    encode(key)
}

fn encode<K: Serialize>(key: &K) -> String {
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(key).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_round_trip() {
        let page: Page<u32> = from_rows(vec![1, 2, 3], 2, |r| format!("k{r}"), |r| r);
        assert_eq!(page.items, vec![1, 2]);
        let req = PageRequest {
            limit: Some(2),
            cursor: page.next_cursor,
        };
        assert_eq!(req.key::<String>().unwrap().as_deref(), Some("k2"));
        let last: Page<u32> = from_rows(vec![1], 2, |r| *r, |r| r);
        assert!(last.next_cursor.is_none());
    }

    #[test]
    fn bad_cursor_and_limit() {
        let req = PageRequest {
            limit: Some(0),
            cursor: Some("!!".into()),
        };
        assert_eq!(req.limit().unwrap_err().field(), Some("limit"));
        assert_eq!(req.key::<String>().unwrap_err().field(), Some("cursor"));
    }
}
