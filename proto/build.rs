//! Compiles `fleetgate/v1/*.proto` with protox (pure Rust, no system `protoc`)
//! and generates prost messages plus tonic clients and servers. The encoded
//! descriptor set is written next to the code for gRPC server reflection.

use std::{env, fs, path::PathBuf};

use protox::prost::Message;

const PROTOS: &[&str] = &["fleetgate/v1/spoke.proto", "fleetgate/v1/admin.proto"];

/// The proto file whose messages the codec checks (`codec.rs`, `CHECKED_FILE`).
const CHECKED_FILE: &str = "fleetgate/v1/admin.proto";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    for proto in PROTOS {
        println!("cargo:rerun-if-changed={proto}");
    }
    let fds = protox::Compiler::new(["."])?
        .include_imports(true)
        .include_source_info(true)
        .open_files(PROTOS)?
        .file_descriptor_set();
    let out_dir = PathBuf::from(env::var("OUT_DIR")?);
    fs::write(
        out_dir.join("fleetgate_descriptor.bin"),
        fds.encode_to_vec(),
    )?;
    // The full names of `admin.proto`'s messages, sorted: the codec looks a
    // message up in the descriptor pool only when its name is here, so a
    // process that decodes no admin message (the spoke) never builds the pool.
    let mut checked = Vec::new();
    for file in fds.file.iter().filter(|f| f.name() == CHECKED_FILE) {
        let mut todo: Vec<(String, &_)> = file
            .message_type
            .iter()
            .map(|m| (format!("{}.{}", file.package(), m.name()), m))
            .collect();
        while let Some((name, message)) = todo.pop() {
            for nested in &message.nested_type {
                todo.push((format!("{name}.{}", nested.name()), nested));
            }
            checked.push(name);
        }
    }
    checked.sort();
    fs::write(
        out_dir.join("checked_messages.rs"),
        format!(
            "/// The full names of the messages declared in `{CHECKED_FILE}`, sorted.\n\
             const CHECKED_MESSAGES: &[&str] = &{checked:?};\n"
        ),
    )?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        // The spoke rpc is called `Connect`, which would clash with the generated
        // `SpokeServiceClient::connect(dst)` constructor: build clients from a
        // `tonic::transport::Channel` with `::new(channel)` instead.
        .build_transport(false)
        // Small per-stream codec buffers: thousands of idle spoke streams
        // each held tonic's 8 KiB encode + 8 KiB decode buffers.
        .codec_path("crate::codec::SmallBufferCodec")
        .emit_rerun_if_changed(false)
        // `prost::Name` on every message: the codec finds a message's
        // descriptor by its full name (see `codec.rs`).
        .compile_fds_with_config(fds, {
            let mut config = tonic_prost_build::Config::new();
            config.enable_type_names();
            config
        })?;
    Ok(())
}
