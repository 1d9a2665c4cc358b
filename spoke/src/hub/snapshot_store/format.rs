//! How a snapshot is laid out in ConfigMaps, without I/O. A snapshot whose JSON fits one
//! ConfigMap keeps the layout of 0.1 and 0.2 spokes (`data.snapshot.json`), so a spoke rolled
//! back still reads it. A larger one is gzipped into the head's `binaryData`; past one
//! ConfigMap the gzip is cut into shards of their own, which the head names (slot), counts,
//! measures and hashes. Reading checks all of it and refuses anything that does not add up.

use std::{collections::BTreeMap, io::Read as _};

use flate2::{Compression, read::GzDecoder, write::GzEncoder};
use fleetgate_policy::budgets::{
    SNAPSHOT_MAX_SHARDS, SNAPSHOT_PERSISTED_MAX_JSON_BYTES, SNAPSHOT_SHARD_BYTES,
};
use sha2::{Digest, Sha256};

use crate::hub::snapshot::Snapshot;

/// The head's key with the plain snapshot JSON (the layout of 0.1 and 0.2 spokes).
pub const SNAPSHOT_KEY: &str = "snapshot.json";
/// The head's `binaryData` key with the gzipped JSON (when one ConfigMap holds it).
pub const GZIP_KEY: &str = "snapshot.json.gz";
/// A shard's `binaryData` key.
pub const SHARD_KEY: &str = "part";

const REVISION: &str = "revision";
const CLUSTER: &str = "cluster";
/// `gzip` (absent: the plain layout).
const FORMAT: &str = "format";
/// Hex SHA-256 of the whole gzip stream (all shards in order).
const SHA256: &str = "sha256";
/// Bytes of the whole gzip stream.
const LENGTH: &str = "length";
/// Bytes of the JSON it decompresses to.
const JSON_LENGTH: &str = "jsonLength";
/// How many shards hold the gzip (absent: the head holds it).
const SHARDS: &str = "shards";
/// Which set of shard names (`a` or `b`) holds them.
const SLOT: &str = "slot";
const GZIP: &str = "gzip";

/// One of the two sets of shard names. A sharded write goes to the set the head does not
/// name, so a write cut short (shards written, head not) leaves the copy the head names whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    A,
    B,
}

impl Slot {
    pub fn as_str(self) -> &'static str {
        match self {
            Slot::A => "a",
            Slot::B => "b",
        }
    }

    pub fn other(self) -> Slot {
        match self {
            Slot::A => Slot::B,
            Slot::B => Slot::A,
        }
    }

    fn parse(s: &str) -> Option<Slot> {
        match s {
            "a" => Some(Slot::A),
            "b" => Some(Slot::B),
            _ => None,
        }
    }
}

/// The name of shard `index` of `slot` beside the head ConfigMap `head`.
pub fn shard_name(head: &str, slot: Slot, index: usize) -> String {
    format!("{head}-{}-{index}", slot.as_str())
}

/// A snapshot ready to be written.
#[derive(Debug)]
pub struct Encoded {
    pub revision: u64,
    pub cluster: String,
    /// Bytes of the snapshot's JSON (what a reader decompresses).
    pub json_len: usize,
    pub body: Body,
}

#[derive(Debug)]
pub enum Body {
    /// Pretty JSON in `data.snapshot.json`: it fits one ConfigMap.
    Plain(String),
    /// Gzipped compact JSON: in the head when it fits one ConfigMap, else in shards.
    Gzip(Vec<u8>),
}

/// Why a snapshot cannot be persisted at all.
#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    #[error("encoding the snapshot as JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error(
        "the snapshot's JSON is {0} bytes, more than the {SNAPSHOT_PERSISTED_MAX_JSON_BYTES} a spoke persists"
    )]
    JsonTooLarge(usize),
    #[error(
        "the snapshot is {0} bytes gzipped, more than {SNAPSHOT_MAX_SHARDS} ConfigMaps of {SNAPSHOT_SHARD_BYTES} bytes hold"
    )]
    TooLarge(usize),
    #[error("compressing the snapshot: {0}")]
    Gzip(#[from] std::io::Error),
}

/// Encodes `snapshot`: plain when its pretty JSON fits one ConfigMap, gzipped otherwise.
pub fn encode(snapshot: &Snapshot) -> Result<Encoded, EncodeError> {
    let (revision, cluster) = (snapshot.revision, snapshot.cluster.clone());
    let pretty = serde_json::to_string_pretty(snapshot)?;
    if pretty.len() <= SNAPSHOT_SHARD_BYTES {
        return Ok(Encoded {
            revision,
            cluster,
            json_len: pretty.len(),
            body: Body::Plain(pretty),
        });
    }
    drop(pretty);
    let json = serde_json::to_vec(snapshot)?;
    if json.len() > SNAPSHOT_PERSISTED_MAX_JSON_BYTES {
        return Err(EncodeError::JsonTooLarge(json.len()));
    }
    let mut gz = GzEncoder::new(Vec::with_capacity(json.len() / 4), Compression::default());
    std::io::Write::write_all(&mut gz, &json)?;
    let gz = gz.finish()?;
    if gz.len() > SNAPSHOT_MAX_SHARDS * SNAPSHOT_SHARD_BYTES {
        return Err(EncodeError::TooLarge(gz.len()));
    }
    Ok(Encoded {
        revision,
        cluster,
        json_len: json.len(),
        body: Body::Gzip(gz),
    })
}

impl Encoded {
    /// Shards the body takes (0: the head holds it).
    pub fn shard_count(&self) -> usize {
        match &self.body {
            Body::Gzip(gz) if gz.len() > SNAPSHOT_SHARD_BYTES => {
                gz.len().div_ceil(SNAPSHOT_SHARD_BYTES)
            }
            _ => 0,
        }
    }

    /// Bytes stored in the cluster (all ConfigMaps' values together).
    pub fn stored_len(&self) -> usize {
        match &self.body {
            Body::Plain(json) => json.len(),
            Body::Gzip(gz) => gz.len(),
        }
    }

    /// The shards' contents, in order (empty when the head holds the body).
    pub fn shards(&self) -> Vec<&[u8]> {
        match &self.body {
            Body::Gzip(gz) if self.shard_count() > 0 => gz.chunks(SNAPSHOT_SHARD_BYTES).collect(),
            _ => Vec::new(),
        }
    }

    /// The head's `data` and `binaryData`: `None` removes a key a previous layout wrote
    /// (a merge patch's `null`). `slot` names the shards, when there are any.
    #[allow(clippy::type_complexity)]
    pub fn head(
        &self,
        slot: Slot,
    ) -> (
        BTreeMap<String, Option<String>>,
        BTreeMap<String, Option<Vec<u8>>>,
    ) {
        let mut data = BTreeMap::from([
            (REVISION.to_owned(), Some(self.revision.to_string())),
            (CLUSTER.to_owned(), Some(self.cluster.clone())),
        ]);
        let mut binary = BTreeMap::new();
        let set = |data: &mut BTreeMap<String, Option<String>>, k: &str, v: Option<String>| {
            data.insert(k.to_owned(), v);
        };
        match &self.body {
            Body::Plain(json) => {
                set(&mut data, SNAPSHOT_KEY, Some(json.clone()));
                for k in [FORMAT, SHA256, LENGTH, JSON_LENGTH, SHARDS, SLOT] {
                    set(&mut data, k, None);
                }
                binary.insert(GZIP_KEY.to_owned(), None);
            }
            Body::Gzip(gz) => {
                set(&mut data, SNAPSHOT_KEY, None);
                set(&mut data, FORMAT, Some(GZIP.into()));
                set(&mut data, SHA256, Some(hex::encode(Sha256::digest(gz))));
                set(&mut data, LENGTH, Some(gz.len().to_string()));
                set(&mut data, JSON_LENGTH, Some(self.json_len.to_string()));
                let shards = self.shard_count();
                if shards > 0 {
                    set(&mut data, SHARDS, Some(shards.to_string()));
                    set(&mut data, SLOT, Some(slot.as_str().into()));
                    binary.insert(GZIP_KEY.to_owned(), None);
                } else {
                    set(&mut data, SHARDS, None);
                    set(&mut data, SLOT, None);
                    binary.insert(GZIP_KEY.to_owned(), Some(gz.clone()));
                }
            }
        }
        (data, binary)
    }
}

/// What a head ConfigMap says.
#[derive(Debug, PartialEq)]
pub enum Head {
    /// No snapshot in it.
    Empty,
    /// The plain layout (also every head 0.1 and 0.2 spokes wrote).
    Plain(String),
    /// Gzip in the head itself.
    Gzip(Manifest, Vec<u8>),
    /// Gzip in `shards` shards of `slot`.
    Sharded(Manifest),
}

/// The head's account of a gzipped snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    pub revision: Option<u64>,
    pub sha256: String,
    pub length: usize,
    pub json_length: usize,
    pub shards: usize,
    pub slot: Slot,
}

/// Reads a head's `data` and `binaryData`. `Err` names what does not add up.
pub fn read_head(
    data: Option<&BTreeMap<String, String>>,
    binary: Option<&BTreeMap<String, Vec<u8>>>,
) -> Result<Head, String> {
    let get = |k: &str| data.and_then(|d| d.get(k)).map(String::as_str);
    let gz = binary.and_then(|b| b.get(GZIP_KEY));
    match get(FORMAT) {
        None => {
            return Ok(match get(SNAPSHOT_KEY) {
                Some(json) => Head::Plain(json.to_owned()),
                None => Head::Empty,
            });
        }
        Some(GZIP) => {}
        Some(other) => return Err(format!("format {other:?} is not one this spoke reads")),
    }
    let number = |k: &str| -> Result<usize, String> {
        let v = get(k).ok_or_else(|| format!("{k} missing"))?;
        v.parse().map_err(|_| format!("{k} {v:?} is not a number"))
    };
    let sha256 = get(SHA256).ok_or("sha256 missing")?.to_owned();
    let length = number(LENGTH)?;
    let json_length = number(JSON_LENGTH)?;
    if json_length > SNAPSHOT_PERSISTED_MAX_JSON_BYTES {
        return Err(format!(
            "jsonLength {json_length} is more than {SNAPSHOT_PERSISTED_MAX_JSON_BYTES}"
        ));
    }
    let revision = get(REVISION).and_then(|r| r.parse().ok());
    if get(SHARDS).is_none() {
        let gz = gz.ok_or("binaryData snapshot.json.gz missing")?;
        let manifest = Manifest {
            revision,
            sha256,
            length,
            json_length,
            shards: 0,
            slot: Slot::A,
        };
        return Ok(Head::Gzip(manifest, gz.clone()));
    }
    let shards = number(SHARDS)?;
    let slot = get(SLOT)
        .and_then(Slot::parse)
        .ok_or("slot missing or not a or b")?;
    if shards == 0 || shards > SNAPSHOT_MAX_SHARDS {
        return Err(format!(
            "shards {shards} is not between 1 and {SNAPSHOT_MAX_SHARDS}"
        ));
    }
    if length.div_ceil(SNAPSHOT_SHARD_BYTES) != shards {
        return Err(format!(
            "length {length} does not take {shards} shards of {SNAPSHOT_SHARD_BYTES}"
        ));
    }
    Ok(Head::Sharded(Manifest {
        revision,
        sha256,
        length,
        json_length,
        shards,
        slot,
    }))
}

/// The snapshot in `gz` (the whole gzip stream) as `manifest` describes it: its length and
/// hash checked before anything is decompressed, the JSON's length after.
pub fn decode(gz: &[u8], manifest: &Manifest) -> Result<Snapshot, String> {
    if gz.len() != manifest.length {
        return Err(format!(
            "{} bytes of gzip where the head says {}",
            gz.len(),
            manifest.length
        ));
    }
    let sha = hex::encode(Sha256::digest(gz));
    if sha != manifest.sha256 {
        return Err(format!(
            "sha256 {sha} where the head says {}",
            manifest.sha256
        ));
    }
    let mut json = Vec::with_capacity(manifest.json_length);
    GzDecoder::new(gz)
        .take(manifest.json_length as u64 + 1)
        .read_to_end(&mut json)
        .map_err(|e| format!("gunzip: {e}"))?;
    if json.len() != manifest.json_length {
        return Err(format!(
            "{} bytes of JSON where the head says {}",
            json.len(),
            manifest.json_length
        ));
    }
    serde_json::from_slice(&json).map_err(|e| format!("JSON: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(pad: usize) -> Snapshot {
        // Text that gzip cannot shrink much: a pseudo-random walk over 64 characters.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let text: String = (0..pad)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                char::from(
                    b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"
                        [(x % 64) as usize],
                )
            })
            .collect();
        Snapshot {
            revision: 9,
            cluster: "c1".into(),
            gates: vec![crate::hub::snapshot::GateRule {
                name: "g".into(),
                version: 1,
                manifest: serde_json::json!({"pad": text}),
                release: None,
                waiting: None,
                opening_fence: None,
                calendars: Vec::new(),
            }],
            overrides: Vec::new(),
            hub_time: None,
            local_gates_enforced: false,
            local_gates: Vec::new(),
        }
    }

    fn head_of(e: &Encoded, slot: Slot) -> Head {
        let (data, binary) = e.head(slot);
        let data: BTreeMap<_, _> = data
            .into_iter()
            .filter_map(|(k, v)| Some((k, v?)))
            .collect();
        let binary: BTreeMap<_, _> = binary
            .into_iter()
            .filter_map(|(k, v)| Some((k, v?)))
            .collect();
        read_head(Some(&data), Some(&binary)).unwrap()
    }

    #[test]
    fn small_snapshots_keep_the_old_layout() {
        let s = snapshot(100);
        let e = encode(&s).unwrap();
        assert!(matches!(e.body, Body::Plain(_)));
        let Head::Plain(json) = head_of(&e, Slot::A) else {
            panic!("not plain")
        };
        assert_eq!(serde_json::from_str::<Snapshot>(&json).unwrap(), s);
    }

    #[test]
    fn a_large_snapshot_is_gzipped_then_sharded_and_reads_back() {
        let s = snapshot(3 * SNAPSHOT_SHARD_BYTES);
        let e = encode(&s).unwrap();
        let n = e.shard_count();
        assert!(n >= 2, "{n} shards");
        let Head::Sharded(manifest) = head_of(&e, Slot::B) else {
            panic!("not sharded")
        };
        assert_eq!((manifest.shards, manifest.slot), (n, Slot::B));
        let whole: Vec<u8> = e.shards().concat();
        assert_eq!(decode(&whole, &manifest).unwrap(), s);
        // One byte changed anywhere, or a shard missing: refused.
        let mut bad = whole.clone();
        bad[SNAPSHOT_SHARD_BYTES + 7] ^= 1;
        assert!(decode(&bad, &manifest).unwrap_err().starts_with("sha256"));
        let short = &whole[..SNAPSHOT_SHARD_BYTES];
        assert!(
            decode(short, &manifest)
                .unwrap_err()
                .contains("bytes of gzip")
        );
    }

    #[test]
    fn a_compressible_large_snapshot_fits_the_head() {
        let mut s = snapshot(0);
        s.gates[0].manifest = serde_json::json!({"pad": "x".repeat(4 * SNAPSHOT_SHARD_BYTES)});
        let e = encode(&s).unwrap();
        assert_eq!(e.shard_count(), 0);
        let Head::Gzip(manifest, gz) = head_of(&e, Slot::A) else {
            panic!("not gzip in the head")
        };
        assert!(gz.len() < SNAPSHOT_SHARD_BYTES / 100);
        assert_eq!(decode(&gz, &manifest).unwrap(), s);
    }

    #[test]
    fn heads_that_do_not_add_up_are_refused() {
        let data = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        let base = [
            ("format", "gzip"),
            ("sha256", "00"),
            ("length", "10"),
            ("jsonLength", "20"),
        ];
        assert_eq!(
            read_head(Some(&data(&base)), None).unwrap_err(),
            "binaryData snapshot.json.gz missing"
        );
        let mut many = base.to_vec();
        many.extend([("shards", "99"), ("slot", "a")]);
        assert!(
            read_head(Some(&data(&many)), None)
                .unwrap_err()
                .starts_with("shards 99")
        );
        let mut mismatch = base.to_vec();
        mismatch.extend([("shards", "2"), ("slot", "a")]);
        assert!(
            read_head(Some(&data(&mismatch)), None)
                .unwrap_err()
                .starts_with("length 10")
        );
        let huge = [
            ("format", "gzip"),
            ("sha256", "00"),
            ("length", "10"),
            ("jsonLength", "999999999999"),
        ];
        assert!(
            read_head(Some(&data(&huge)), None)
                .unwrap_err()
                .starts_with("jsonLength")
        );
        assert!(read_head(Some(&data(&[("format", "zstd")])), None).is_err());
        assert_eq!(read_head(None, None).unwrap(), Head::Empty);
    }

    #[test]
    fn a_gzip_bomb_stops_at_the_length_the_head_gives() {
        let json = vec![b' '; 10 * 1024 * 1024];
        let mut gz = GzEncoder::new(Vec::new(), Compression::default());
        std::io::Write::write_all(&mut gz, &json).unwrap();
        let gz = gz.finish().unwrap();
        let manifest = Manifest {
            revision: None,
            sha256: hex::encode(Sha256::digest(&gz)),
            length: gz.len(),
            json_length: 100,
            shards: 0,
            slot: Slot::A,
        };
        assert_eq!(
            decode(&gz, &manifest).unwrap_err(),
            "101 bytes of JSON where the head says 100"
        );
    }
}
