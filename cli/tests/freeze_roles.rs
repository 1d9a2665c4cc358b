//! Who may pull the emergency stop, through the real `fleetgate` binary against a
//! real hub: an admin freezes and unfreezes; an operator (who may open and close
//! gates) and a viewer are refused with the permission exit code (5) and change
//! nothing, though both may list the freezes.

mod common;

use common::{err, out, start_hub};

#[test]
fn only_an_admin_freezes_and_unfreezes() {
    let hub = start_hub();
    hub.ok(&["cluster", "register", "prod-eu-1", "-L", "env=prod"]);
    let token = |name: &str, role: &str| {
        hub.json(&["token", "create", name, "--role", role])["secret"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (operator, viewer) = (token("alice", "operator"), token("val", "viewer"));
    let listed = |who: &str| {
        let o = hub.cli_as(who, &["freezes", "-o", "json"]);
        assert_eq!(o.status.code(), Some(0), "{}", err(&o));
        serde_json::from_str::<serde_json::Value>(&out(&o)).unwrap()
    };

    for who in [&operator, &viewer] {
        let o = hub.cli_as(who, &["freeze", "--reason", "INC-1", "--for", "1h"]);
        assert_eq!(o.status.code(), Some(5), "{}", err(&o));
        assert!(err(&o).contains("403"), "{}", err(&o));
        assert_eq!(listed(who), serde_json::json!([]), "nothing frozen");
    }

    hub.ok(&["freeze", "--reason", "INC-1", "--for", "1h"]);
    let frozen = listed(&operator);
    assert_eq!(frozen[0]["reason"], "INC-1", "{frozen}");

    let o = hub.cli_as(&operator, &["unfreeze", "--reason", "mine now"]);
    assert_eq!(o.status.code(), Some(5), "{}", err(&o));
    assert_eq!(
        listed(&viewer).as_array().map(Vec::len),
        Some(1),
        "still frozen"
    );

    hub.ok(&["unfreeze", "--reason", "resolved"]);
    assert_eq!(listed(&viewer), serde_json::json!([]));
}
