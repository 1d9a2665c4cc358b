//! Writes `proto/released/VERSION.binpb`: the descriptor set of the `.proto`
//! files a release ships (imports included, no source info), which the wire
//! test (`proto/tests/wire_compat`) compares later protos against. Run at
//! release time (docs/development.md, "Releases"):
//!
//! ```sh
//! cargo run -p fleetgate-proto --example released_descriptor_set -- 0.2.0
//! ```
//!
//! A second argument names another directory holding `fleetgate/v1/*.proto`
//! (the files of an earlier commit).

use std::path::PathBuf;

use protox::prost::Message;

const PROTOS: &[&str] = &["fleetgate/v1/spoke.proto", "fleetgate/v1/admin.proto"];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let version = args
        .next()
        .ok_or("usage: released_descriptor_set VERSION [PROTO_ROOT]")?;
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let root = args.next().map_or_else(|| here.clone(), PathBuf::from);
    let set = protox::Compiler::new([&root])?
        .include_imports(true)
        .include_source_info(false)
        .open_files(PROTOS)?
        .file_descriptor_set();
    let out = here.join("released").join(format!("{version}.binpb"));
    std::fs::write(&out, set.encode_to_vec())?;
    println!("wrote {}", out.display());
    Ok(())
}
