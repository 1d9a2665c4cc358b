//! A throwaway PKI for TLS tests, made with the `openssl` CLI: a CA, a server
//! certificate for `localhost` and `127.0.0.1`, and a client certificate
//! (clientAuth) — files `ca.crt`, `server.{crt,key}`, `client.{crt,key}`.

use std::path::Path;
use std::process::Command;

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("running openssl");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Writes the CA, server and client certificates and keys into `dir`.
pub fn make_pki(dir: &Path) {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let mut ca = vec![
        "req",
        "-x509",
        "-days",
        "1",
        "-subj",
        "/CN=fleetgate-test-ca",
    ];
    ca.extend(ec);
    ca.extend(["-keyout", "ca.key", "-out", "ca.crt"]);
    openssl(dir, &ca);
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\n",
    )
    .expect("writing server.ext");
    std::fs::write(dir.join("client.ext"), "extendedKeyUsage=clientAuth\n")
        .expect("writing client.ext");
    for who in ["server", "client"] {
        let subj = format!("/CN={who}");
        let (key, csr, crt, ext) = (
            format!("{who}.key"),
            format!("{who}.csr"),
            format!("{who}.crt"),
            format!("{who}.ext"),
        );
        let mut req = vec!["req", "-subj", &subj, "-keyout", &key, "-out", &csr];
        req.extend(ec);
        openssl(dir, &req);
        openssl(
            dir,
            &[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-days",
                "1",
                "-out",
                &crt,
                "-extfile",
                &ext,
            ],
        );
    }
}
